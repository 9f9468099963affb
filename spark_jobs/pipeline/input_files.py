"""What a running job's input folders hold: the newest event time of each file source and the input's
watermark, read from the files themselves (JSON lines, CSV or Parquet, with pyarrow, without Spark).

A drill needs "where was the input when capacity came back" to say when the primary has caught up;
for a sample pipeline that is known from its seeded files, for a user's job it is read here. Files
are taken newest first (by modification time) and only the ``recent`` newest are read, which is exact
when producers add files in event-time order and cheap on a folder of any size.

    >>> import json, tempfile; from pathlib import Path
    >>> from spark_jobs.pipeline.sources import FileSource
    >>> d = Path(tempfile.mkdtemp()); (d / "clicks").mkdir()
    >>> _ = (d / "clicks" / "a.json").write_text(json.dumps({"ts": 5000, "user": 1}) + "\\n")
    >>> latest_event_ms(FileSource("clicks", schema="ts bigint, user bigint", event_time="ts"), d)
    5000
"""

from __future__ import annotations

from pathlib import Path

from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.sources import FileSource


def data_files(folder: Path, recent: int | None = None) -> list[Path]:
    """A source folder's data files (no hidden, temporary or empty ones), newest first (the ``recent`` newest)."""
    if not folder.is_dir():
        return []
    files = [p for p in folder.iterdir() if p.is_file() and not p.name.startswith((".", "_")) and p.stat().st_size > 0]
    return sorted(files, key=lambda p: p.stat().st_mtime, reverse=True)[:recent]


def file_max_event_ms(path: Path, source: FileSource) -> int | None:
    """The largest event time (epoch ms) in one data file of ``source`` (None: no rows)."""
    import pyarrow.compute as pc

    if source.format == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=[source.event_time])
    elif source.format == "csv":
        import pyarrow.csv as pcsv

        table = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(include_columns=[source.event_time]))
    else:
        import pyarrow.json as pjson

        table = pjson.read_json(path)
    value = pc.max(table.column(source.event_time)).as_py() if table.num_rows else None
    if value is None:
        return None
    if source.time_unit == "s":
        return int(value * 1000)
    if source.time_unit == "timestamp":
        return int(value.timestamp() * 1000)
    return int(value)


def latest_event_ms(source: FileSource, input_dir: Path, recent: int = 5) -> int | None:
    """The largest event time (epoch ms) in the source's ``recent`` newest files (None: no data yet)."""
    values = [v for v in (file_max_event_ms(p, source) for p in data_files(source.folder(input_dir), recent)) if v is not None]
    return max(values) if values else None


def input_watermark(workload: Workload, input_dir: Path) -> int | None:
    """The watermark a streaming run reaches after reading all of the input now there: per file
    source its newest event time less its watermark delay, the minimum over sources (Spark's rule)."""
    marks = []
    for source in workload.stream_sources():
        if not isinstance(source, FileSource):
            return None  # not a file source: its position is the source's own business (offsets)
        latest = latest_event_ms(source, Path(input_dir))
        if latest is None:
            return None
        marks.append(latest - int(round(source.watermark_s * 1000)))
    return min(marks) if marks else None
