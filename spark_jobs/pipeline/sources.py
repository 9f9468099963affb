"""Where a pipeline's records come from: folders of JSON, CSV or Parquet files, Spark's rate source, and
static tables for stream-static joins. A source is pluggable: subclass :class:`Source` and implement
:meth:`Source.read` (the README's "your own job" section shows a Kafka source written this way).

Every stream source names its *event-time* column and its watermark delay; ftops turns the column
into a timestamp (from epoch milliseconds or seconds when ``time_unit`` says so) and applies the
watermark on streaming reads, so windows close the same way in the primary, the replica and the
batch reference. A file source is *replayable*: the reference job can read it whole, which is what
makes a drill's accuracy and "output equals the reference" checks possible; the rate source is not.

    >>> FileSource("clicks", schema="ts bigint, user bigint", event_time="ts").folder("/data/in")
    PosixPath('/data/in/clicks')
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ft_core.errors import InputError

FORMATS = ("json", "csv", "parquet")


class Source(ABC):
    """A named input of a pipeline. ``static`` sources are batch tables (no tasks, no watermark)."""

    name: str
    event_time: str | None = None
    watermark_s: float = 0.0
    static: bool = False
    replayable: bool = True

    @abstractmethod
    def read(self, spark, input_dir: Path, streaming: bool, max_files_per_trigger: int | None = None):
        """The source as a DataFrame: a stream (with its watermark) when ``streaming``, else a batch."""

    def schema_ddl(self) -> str | None:
        """The source's schema as Spark DDL, when it has a fixed one."""
        return None


def _event_time(df, column: str, unit: str):
    from pyspark.sql import functions as F

    if unit == "ms":
        return df.withColumn(column, F.timestamp_millis(F.col(column)))
    if unit == "s":
        return df.withColumn(column, F.timestamp_seconds(F.col(column)))
    return df.withColumn(column, F.col(column).cast("timestamp"))


def _watermark(df, column: str, watermark_s: float):
    return df.withWatermark(column, f"{int(round(watermark_s * 1000))} milliseconds")


@dataclass(frozen=True)
class FileSource(Source):
    """Files in ``<input>/<path or name>/`` with a fixed schema (Spark DDL: ``"ts bigint, user bigint"``).

    ``time_unit``: ``ms`` or ``s`` for an epoch number column, ``timestamp`` for a timestamp column.
    New files must appear atomically (written elsewhere, then renamed), as for any Spark file source."""

    name: str
    schema: str
    event_time: str
    format: Literal["json", "csv", "parquet"] = "json"
    watermark_s: float = 0.0
    time_unit: Literal["ms", "s", "timestamp"] = "ms"
    path: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if self.format not in FORMATS:
            raise InputError(f"source {self.name}: format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        if self.watermark_s < 0:
            raise InputError(f"source {self.name}: watermark_s must be >= 0")
        if self.event_time not in {part.split()[0] for part in self.schema.split(",") if part.strip()}:
            raise InputError(f"source {self.name}: event_time {self.event_time!r} is not a column of its schema")

    def schema_ddl(self) -> str:
        return self.schema

    def folder(self, input_dir: Path | str) -> Path:
        return Path(input_dir) / (self.path or self.name)

    def read(self, spark, input_dir: Path, streaming: bool, max_files_per_trigger: int | None = None):
        folder = self.folder(input_dir)
        folder.mkdir(parents=True, exist_ok=True)
        reader = self._reader(spark.readStream if streaming else spark.read)
        if streaming and max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", max_files_per_trigger)
        df = _event_time(reader.load(str(folder)), self.event_time, self.time_unit)
        return _watermark(df, self.event_time, self.watermark_s) if streaming else df

    def read_files(self, spark, input_dir: Path, files: list[str]):
        """A batch read of some of the source's files (paths or URIs Spark listed), partition columns
        kept; an empty frame of the source's schema when ``files`` is empty."""
        if not files:
            df = spark.createDataFrame([], self.schema)
        else:
            df = self._reader(spark.read).option("basePath", str(self.folder(input_dir))).load(files)
        return _event_time(df, self.event_time, self.time_unit)

    def _reader(self, reader):
        reader = reader.schema(self.schema).options(**self.options).format(self.format)
        return reader.option("header", self.options.get("header", "true")) if self.format == "csv" else reader


@dataclass(frozen=True)
class RateSource(Source):
    """Spark's ``rate`` source: ``timestamp`` (the event time) and ``value`` (0, 1, 2, ...) rows at a fixed
    rate. Not replayable (it depends on the wall clock): no batch reference, so drills measure no
    accuracy for it; good for load and recovery-time experiments."""

    name: str
    rows_per_second: int = 100
    num_partitions: int = 1
    watermark_s: float = 0.0
    event_time: str = "timestamp"
    replayable: bool = False

    def read(self, spark, input_dir: Path, streaming: bool, max_files_per_trigger: int | None = None):
        if not streaming:
            raise InputError(f"source {self.name}: the rate source cannot be read as a batch (no reference run)")
        df = (spark.readStream.format("rate").option("rowsPerSecond", self.rows_per_second)
              .option("numPartitions", self.num_partitions).load())
        return _watermark(df, self.event_time, self.watermark_s)


@dataclass(frozen=True)
class StaticTable(Source):
    """A batch table joined with a stream (a stream-static join): files in ``<input>/<path or name>/``,
    read once per query start. It has no tasks of its own; every task of the joining operator sees all
    of it. ``schema`` is Spark DDL; ``format`` json, csv or parquet."""

    name: str
    schema: str
    format: Literal["json", "csv", "parquet"] = "json"
    path: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    static: bool = True

    def schema_ddl(self) -> str:
        return self.schema

    def folder(self, input_dir: Path | str) -> Path:
        return Path(input_dir) / (self.path or self.name)

    def read(self, spark, input_dir: Path, streaming: bool, max_files_per_trigger: int | None = None):
        reader = spark.read.schema(self.schema).options(**self.options)
        if self.format == "csv":
            reader = reader.option("header", self.options.get("header", "true"))
        folder = self.folder(input_dir)
        if not folder.is_dir():
            raise InputError(f"static table {self.name}: folder {str(folder)!r} does not exist")
        return reader.format(self.format).load(str(folder))


def describe(source: Source) -> dict[str, Any]:
    """A plain description of a source for documents and messages."""
    kind = type(source).__name__
    out: dict[str, Any] = {"name": source.name, "kind": kind, "static": source.static, "replayable": source.replayable}
    if source.event_time:
        out.update(event_time=source.event_time, watermark_s=source.watermark_s)
    return out
