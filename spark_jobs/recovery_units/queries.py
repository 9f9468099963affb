"""The Spark side of the recovery units: one Structured Streaming query per unit, Parquet tables between them.

Problem: each unit of :mod:`.spec` must be restartable alone, from its own checkpoint, without losing or
duplicating output. Source units read the seeded JSON input files (``locations``, ``incidents``), downstream
units read their upstream units' tables; every unit writes its own table with Spark's Parquet file sink.
The file sink records each committed micro-batch in ``<table>/_spark_metadata`` and skips a batch id it has
already committed, and a file source reading a sink folder only sees the files of committed batches, so a
unit killed mid-batch and restarted from its checkpoint neither loses nor duplicates rows, and its
downstream units never read a half-written batch. (Paper 003's upstream buffers are these tables.)

Table rows (event times in epoch ms):

- ``O1[g]``: ``window_start, window_end, segment, speed_c, n`` (speed summed in hundredths, exact);
- ``O2[h]``: ``window_start, window_end, segment, incident, reports``;
- ``O3[h]``: ``window_start, window_end, segment, incident, speed_c, n`` for incidents on jammed segments.

O1 and O2 aggregate event-time windows with a watermark in append mode (a window is written once, when
the watermark passes its end); O3 is a stream-stream inner join of final rows, in event time by window
end with a watermark per input table (see :func:`_timed`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ft_core.topology.document import split_task_id
from spark_jobs.recovery_units.spec import SmartCitySpec

SCHEMAS = {
    "O1": "window_start bigint, window_end bigint, segment bigint, speed_c bigint, n bigint",
    "O2": "window_start bigint, window_end bigint, segment bigint, incident bigint, reports bigint",
    "O3": "window_start bigint, window_end bigint, segment bigint, incident bigint, speed_c bigint, n bigint",
}


def folder_name(unit: str) -> str:
    """``O1[0]`` -> ``O1-0``: brackets are glob characters for Hadoop paths."""
    return re.sub(r"\[(\d+)\]", r"-\1", unit)


def table_dir(root: Path, unit: str) -> Path:
    return Path(root) / "tables" / folder_name(unit)


def checkpoint_dir(root: Path, unit: str) -> Path:
    return Path(root) / "checkpoints" / folder_name(unit)


def query_name(unit: str) -> str:
    return f"unit-{folder_name(unit)}"


def last_planned_batch(root: Path, unit: str) -> int:
    """The latest batch id in the unit's offset log (-1: a fresh checkpoint). A restarted query replays
    this batch if it was not committed; every later batch is planned afresh over all available input."""
    offsets = checkpoint_dir(root, unit) / "offsets"
    ids = [int(p.name) for p in offsets.glob("[0-9]*") if p.name.isdigit()] if offsets.is_dir() else []
    return max(ids, default=-1)


def unit_frame(spark, spec: SmartCitySpec, unit: str, input_dir: Path, root: Path):
    """The streaming DataFrame of ``unit`` (what it writes to its table)."""
    op, k = split_task_id(unit)
    if op == "O1":
        return _speed(spark, spec, k, input_dir)
    if op == "O2":
        return _incidents(spark, spec, k, input_dir)
    return _jams(spark, spec, unit, root)


def _source(spark, spec: SmartCitySpec, name: str, input_dir: Path):
    from pyspark.sql import functions as F


    source = next(s for s in spec.sources() if s.name == name)
    folder = Path(input_dir) / name
    folder.mkdir(parents=True, exist_ok=True)
    df = spark.readStream.schema(source.schema_ddl()).json(str(folder)).withColumn("ts", F.timestamp_millis("ts"))
    return df.withWatermark("ts", f"{int(round(spec.watermark_s * 1000))} milliseconds")


def _bounds(df):
    from pyspark.sql import functions as F

    return (df.withColumn("window_start", F.unix_millis(F.col("window.start")))
              .withColumn("window_end", F.unix_millis(F.col("window.end"))))


def _window(spec: SmartCitySpec):
    from pyspark.sql import functions as F

    return F.window("ts", f"{spec.window_s} seconds", f"{spec.slide} seconds")


def _speed(spark, spec: SmartCitySpec, k: int, input_dir: Path):
    from pyspark.sql import functions as F

    loc = _source(spark, spec, "locations", input_dir)
    loc = loc.filter(spec.group_column("O1", "segment") == F.lit(k))
    agg = loc.groupBy(_window(spec).alias("window"), "segment").agg(
        F.sum(F.round(F.col("speed") * 100).cast("bigint")).alias("speed_c"), F.count(F.lit(1)).alias("n"))
    return _bounds(agg).select("window_start", "window_end", "segment", "speed_c", "n")


def _incidents(spark, spec: SmartCitySpec, k: int, input_dir: Path):
    from pyspark.sql import functions as F

    inc = _source(spark, spec, "incidents", input_dir)
    inc = inc.filter(spec.group_column("O2", "segment") == F.lit(k))
    agg = inc.groupBy(_window(spec).alias("window"), "segment", "incident").agg(F.count(F.lit(1)).alias("reports"))
    return _bounds(agg).select("window_start", "window_end", "segment", "incident", "reports")


def table_stream(spark, root: Path, unit: str):
    """A streaming read of ``unit``'s table (committed batches only, through its metadata log)."""
    folder = table_dir(root, unit)
    folder.mkdir(parents=True, exist_ok=True)
    return spark.readStream.schema(SCHEMAS[split_task_id(unit)[0]]).parquet(str(folder))


def _jams(spark, spec: SmartCitySpec, unit: str, root: Path):
    from pyspark.sql import functions as F

    inputs = spec.inputs(unit)
    speed = None
    for up in (u for u in inputs if u.startswith("O1[")):
        df = _timed(table_stream(spark, root, up), spec)
        speed = df if speed is None else speed.unionByName(df)
    incidents = _timed(table_stream(spark, root, next(u for u in inputs if u.startswith("O2["))), spec)
    on = ["window_start", "window_end", "segment", "wend"]
    joined = speed.join(incidents.drop("reports"), on, "inner")
    jams = joined.filter(F.col("speed_c") < F.lit(round(spec.jam_speed * 100)) * F.col("n"))
    return jams.select("window_start", "window_end", "segment", "incident", "speed_c", "n")


def _timed(df, spec: SmartCitySpec):
    """An upstream table with its window end as event time and a watermark of its own.

    Each table gets its own watermark (before the union), so the join's watermark is the minimum over
    its inputs (Spark's default policy): while one upstream unit is down, the join waits for it instead
    of dropping its rows as late once it recovers. A table's window ends never decrease from batch to
    batch (its unit emits windows as its watermark passes them), so no row is late w.r.t. its own
    table. Joining on ``wend`` lets Spark evict join state behind the watermark, and the watermark in
    the unit's progress is what recovery measures its latency by."""
    from pyspark.sql import functions as F

    return (df.withColumn("wend", F.timestamp_millis("window_end"))
              .withWatermark("wend", f"{spec.window_s} seconds"))


def start_unit(spark, spec: SmartCitySpec, unit: str, input_dir: Path, root: Path, trigger_s: float):
    """Start ``unit``'s query: Parquet file sink into its table, its own checkpoint."""
    frame = unit_frame(spark, spec, unit, input_dir, root)
    return (frame.writeStream.format("parquet").outputMode("append").queryName(query_name(unit))
            .option("path", str(table_dir(root, unit)))
            .option("checkpointLocation", str(checkpoint_dir(root, unit)))
            .trigger(processingTime=f"{int(round(trigger_s * 1000))} milliseconds")
            .start())


def read_table(spark, root: Path, unit: str) -> list[dict]:
    """Every committed row of ``unit``'s table (a batch read honours the sink's metadata log)."""
    folder = table_dir(root, unit)
    if not (folder / "_spark_metadata").is_dir():
        return []
    return [r.asDict() for r in spark.read.schema(SCHEMAS[split_task_id(unit)[0]]).parquet(str(folder)).collect()]
