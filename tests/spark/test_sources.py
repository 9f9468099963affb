"""The pipeline API's sources on real Spark: CSV and Parquet file folders (the samples only use JSON) read as
a batch (the reference) and as a stream (primary and replica) with the event time turned into a timestamp,
and Spark's rate source, which streams but refuses a batch read (no reference run)."""

from __future__ import annotations

import pandas as pd
import pytest

from ft_core.errors import InputError
from spark_jobs.pipeline import FileSource
from spark_jobs.pipeline.sources import RateSource

ROWS = pd.DataFrame({"ts": [1_700_000_000_000, 1_700_000_001_500, 1_700_000_003_000], "user": [1, 2, 3]})


def _write(source: FileSource, input_dir, fmt: str) -> None:
    folder = source.folder(input_dir)
    folder.mkdir(parents=True)
    if fmt == "csv":
        ROWS.to_csv(folder / "part-0.csv", index=False)
    else:
        ROWS.to_parquet(folder / "part-0.parquet", index=False)


def _epoch_ms(df) -> list[tuple[int, int]]:
    """(event time as epoch ms, user) rows: the timestamp column compared without any time zone."""
    from pyspark.sql import functions as F

    return [(r.ms, r.user) for r in df.select(F.unix_millis("ts").alias("ms"), "user").orderBy("user").collect()]


def _streamed(df, spark, name: str):
    query = df.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    query.awaitTermination(120)
    return spark.table(name)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_file_sources_read_csv_and_parquet_as_batch_and_stream(spark, tmp_path, fmt):
    source = FileSource("clicks", schema="ts bigint, user bigint", event_time="ts", format=fmt, watermark_s=2)
    _write(source, tmp_path, fmt)
    expected = list(ROWS.itertuples(index=False, name=None))

    batch = source.read(spark, tmp_path, streaming=False)
    assert dict(batch.dtypes)["ts"] == "timestamp"
    assert _epoch_ms(batch) == expected

    stream = source.read(spark, tmp_path, streaming=True)
    assert stream.isStreaming
    assert _epoch_ms(_streamed(stream, spark, f"clicks_{fmt}")) == expected


def test_the_rate_source_streams_and_refuses_a_batch_read(spark, tmp_path):
    source = RateSource("ticks", rows_per_second=50, watermark_s=1)
    assert not source.replayable
    with pytest.raises(InputError, match="cannot be read as a batch"):
        source.read(spark, tmp_path, streaming=False)
    stream = source.read(spark, tmp_path, streaming=True)
    query = stream.writeStream.format("memory").queryName("ticks").trigger(processingTime="1 second").start()
    try:
        query.awaitTermination(4)
    finally:
        query.stop()
    rows = spark.table("ticks").collect()
    assert rows and {"timestamp", "value"} <= set(rows[0].asDict())
    assert sorted(r.value for r in rows) == list(range(len(rows)))  # 0, 1, 2, ... without a gap
