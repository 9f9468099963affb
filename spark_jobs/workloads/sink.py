"""Exactly-once output of the workloads: one JSON-lines file per micro-batch id, written atomically.

Problem: a recovered run replays the micro-batches after its last committed offset; with Spark's
file sources a replayed batch id carries the same data, so writing ``batch-<id>.jsonl`` through a
temporary file and a rename is idempotent (a replay overwrites the file with the same rows). The
batch reference writes ``reference.jsonl`` in the same format. Rows are sorted per file, and
:func:`read_output` returns every row of a sink folder sorted by its key (window, rank), so two
sinks compare with ``==``.

Example::

    >>> import tempfile; d = tempfile.mkdtemp()
    >>> _ = write_rows(Path(d), "batch-000000001.jsonl", [{"window_start": 0, "window_end": 10}])
    >>> read_output(d)
    [{'window_start': 0, 'window_end': 10}]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REFERENCE_FILE = "reference.jsonl"


def row_key(row: dict[str, Any]) -> tuple:
    return (row.get("window_start", 0), row.get("window_end", 0), row.get("rank", 0))


def batch_file(batch_id: int) -> str:
    return f"batch-{batch_id:09d}.jsonl"


def write_rows(folder: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    tmp = folder / f".{name}.tmp"
    with tmp.open("w") as fh:
        for row in sorted(rows, key=row_key):
            fh.write(json.dumps(row, separators=(",", ":")))
            fh.write("\n")
    tmp.replace(path)
    return path


def batch_writer(folder: Path):
    """A ``foreachBatch`` function writing each non-empty micro-batch to ``batch-<id>.jsonl``."""
    folder = Path(folder)

    def write(df, batch_id: int) -> None:
        rows = [r.asDict(recursive=True) for r in df.collect()]
        if rows:
            write_rows(folder, batch_file(batch_id), rows)

    return write


def read_output(folder: str | Path) -> list[dict[str, Any]]:
    """All rows of a sink folder (micro-batch files and/or the reference file), sorted by key."""
    rows: list[dict[str, Any]] = []
    folder = Path(folder)
    for path in sorted(folder.glob("batch-*.jsonl")) + sorted(folder.glob(REFERENCE_FILE)):
        with path.open() as fh:
            rows.extend(json.loads(line) for line in fh if line.strip())
    return sorted(rows, key=row_key)


def closed_rows(rows: list[dict[str, Any]], watermark_ms: int) -> list[dict[str, Any]]:
    """The rows of windows a streaming run has closed once its watermark reached ``watermark_ms``
    (Spark emits a window in append mode when ``window_end <= watermark``)."""
    return [r for r in rows if r["window_end"] <= watermark_ms]
