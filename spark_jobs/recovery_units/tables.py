"""The units' durable tables: where each unit's table and checkpoint live, the layout of an operator's table,
and its committed rows read without Spark.

Problem: a restarted unit must neither lose nor duplicate output, and its readers must never see half a
micro-batch. A unit's table is a Parquet file-sink folder: only the files its metadata log
(``<table>/_spark_metadata``) lists belong to committed micro-batches (a unit killed mid-batch leaves
uncommitted part files behind, which every reader ignores), and the sink skips a batch id it has
committed already, so a replay after a restart writes nothing twice. (Paper 003's upstream buffers are
these tables.)

- :class:`TableLayout`: what the tables of one operator hold (derived once at deploy time by
  :mod:`.shapes` from the operator's output schema): the schema with the window struct flattened into
  ``window_start``/``window_end`` epoch ms (like the sink's rows), the operator's own output columns (to
  restore the struct for readers), and the column a reader may put a watermark on;
- :func:`committed_batches`: the metadata log, batch id -> (commit wall time, Parquet files). The log is
  ``<n>`` files (``v1`` then one JSON line per added file) compacted every few batches into ``<n>.compact``
  (everything up to ``n``), as Spark's ``FileStreamSinkLog`` writes it;
- :func:`read_committed`: every committed row of a unit's table (pyarrow).

Layout of a deployment folder: ``tables/<unit>``, ``checkpoints/<unit>`` (``O1[0]`` is ``O1-0``: brackets
are glob characters for Hadoop paths).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tenacity import retry, retry_if_exception_type, stop_after_attempt

from pydantic import BaseModel

Row = dict[str, Any]


class TableLayout(BaseModel):
    """The tables of one operator (all its units share it).

    ``window``: the output's window struct column (stored flattened), else None. ``event_time``: for a
    table without a window, a source's event-time column (a timestamp) its rows keep, watermarked by
    readers with ``delay_ms``. ``ordered``: whether a reader may trust a watermark on that column (a
    window's rows are all written by one micro-batch, windows in order; or rows in their source's event-time
    order); ``note`` says why or why not. ``stateful``: the operator's stateful steps (Spark plan nodes)."""

    operator: str
    table_schema: str
    columns: list[str]
    window: str | None = None
    event_time: str | None = None
    delay_ms: int = 0
    ordered: bool = False
    stateful: list[str] = []
    note: str = ""

    def schema(self):
        """The table's Spark schema (every column nullable, as a Parquet reader sees it)."""
        from pyspark.sql.types import StructType

        return StructType.fromJson(json.loads(self.table_schema))

    @property
    def closing_column(self) -> str | None:
        """The column whose value says when a row's result is final (a window's end, else the event time)."""
        return "window_end" if self.window else self.event_time


def folder_name(unit: str) -> str:
    """``O1[0]`` -> ``O1-0``."""
    return re.sub(r"\[(\d+)\]", r"-\1", unit)


def table_dir(root: Path | str, unit: str) -> Path:
    return Path(root) / "tables" / folder_name(unit)


def checkpoint_dir(root: Path | str, unit: str) -> Path:
    return Path(root) / "checkpoints" / folder_name(unit)


def last_planned_batch(root: Path, unit: str) -> int:
    """The latest batch id in the unit's offset log (-1: a fresh checkpoint). A restarted query replays
    this batch if it was not committed; every later batch is planned afresh over all available input."""
    offsets = checkpoint_dir(root, unit) / "offsets"
    ids = [int(p.name) for p in offsets.glob("[0-9]*") if p.name.isdigit()] if offsets.is_dir() else []
    return max(ids, default=-1)


def _log_entries(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


# Spark deletes sink-log files a newer compact file covers while the query runs: a file listed a
# moment ago can be gone when read, and reading the log again sees a consistent set.
@retry(retry=retry_if_exception_type(FileNotFoundError), stop=stop_after_attempt(5), reraise=True)
def committed_batches(root: Path, unit: str) -> dict[int, tuple[float, list[str]]]:
    """Batch id -> (commit wall time, absolute paths of the Parquet files it added), from the sink log."""
    log = table_dir(root, unit) / "_spark_metadata"
    if not log.is_dir():
        return {}
    out: dict[int, tuple[float, list[str]]] = {}
    for path in sorted(log.iterdir(), key=lambda p: int(p.name.split(".")[0]) if p.name.split(".")[0].isdigit() else -1):
        stem = path.name.split(".")[0]
        if not stem.isdigit() or path.name.startswith("."):
            continue
        batch = int(stem)
        files = [e["path"].removeprefix("file://") for e in _log_entries(path) if e.get("action", "add") == "add"]
        if path.name.endswith(".compact"):
            # A compaction lists every file up to its batch; the per-batch commit times are kept from
            # the files it replaced when they are still there, else the compaction's own time.
            known = {f for _, fs in out.values() for f in fs}
            fresh = [f for f in files if f not in known]
            if fresh:
                out[batch] = (path.stat().st_mtime, fresh)
        else:
            out[batch] = (path.stat().st_mtime, files)
    return out


def read_committed(root: Path, unit: str) -> list[Row]:
    """Every committed row of ``unit``'s table (uncommitted part files are ignored)."""
    import pyarrow.parquet as pq

    rows: list[Row] = []
    for _, (_, files) in sorted(committed_batches(root, unit).items()):
        for f in files:
            rows.extend(pq.read_table(f).to_pylist())
    return rows
