"""Exactly-once output of a pipeline's roles: one JSON-lines file per micro-batch id, written atomically.

Problem: a recovered run replays the micro-batches after its last committed offset; with Spark's
file sources a replayed batch id carries the same data, so writing ``batch-<id>.jsonl`` through a
temporary file and a rename is idempotent (a replay overwrites the file with the same rows). The
batch reference writes ``reference.jsonl`` in the same format. Rows are kept in a canonical order
(window, then the row itself) and compared in a canonical form (floats to 10 significant digits, so
a sum taken in another order is the same result), so two sinks compare with ``==``.

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

from pydantic import BaseModel

REFERENCE_FILE = "reference.jsonl"


def canonical(value: Any) -> Any:
    """A value with floats rounded to 10 significant digits (summation order does not matter)."""
    if isinstance(value, float):
        return float(f"{value:.10g}")
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def row_key(row: dict[str, Any]) -> tuple:
    """Window first, then the whole row: a total, deterministic order of any pipeline's rows."""
    return (row.get("window_start", 0), row.get("window_end", 0), json.dumps(canonical(row), sort_keys=True))


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


class BatchWriter:
    """A ``foreachBatch`` function writing each non-empty micro-batch to ``batch-<id>.jsonl``; it remembers how
    many rows its recent batches wrote (:meth:`rows_of`: the driver's progress report says when output arrived)."""

    KEEP = 100  # batches remembered: the progress listener asks right after each batch

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._rows: dict[int, int] = {}

    def __call__(self, df, batch_id: int) -> None:
        rows = [r.asDict(recursive=True) for r in df.collect()]
        if rows:
            write_rows(self.folder, batch_file(batch_id), rows)
        self._rows[batch_id] = len(rows)
        if len(self._rows) > self.KEEP:
            self._rows.pop(min(self._rows))

    def rows_of(self, batch_id: int) -> int:
        """Rows batch ``batch_id`` wrote (0: none, or not remembered)."""
        return self._rows.get(batch_id, 0)


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


class OutputComparison(BaseModel):
    """A streaming sink against the expected rows: windows lost, windows written more than once
    (by two micro-batch files, or with repeated rows), windows that should not be there, and windows written once
    but with other rows than expected (``changed_windows``)."""

    equal: bool
    expected_windows: int
    lost_windows: list[int]
    duplicated_windows: list[int]
    unexpected_windows: list[int]
    changed_windows: list[int] = []


def _window(row: dict[str, Any]) -> tuple[int, int]:
    return row.get("window_start", 0), row.get("window_end", 0)


def compare_output(folder: str | Path, expected: list[dict[str, Any]], until_ms: int | None = None,
                   from_ms: int | None = None) -> OutputComparison:
    """Compare every micro-batch file of ``folder`` with ``expected`` (windows named by their start);
    with ``until_ms``, only windows ending at or before it (a running job writes later ones meanwhile);
    with ``from_ms``, only windows starting at or after it."""
    def wanted(r: dict[str, Any]) -> bool:
        return (until_ms is None or r.get("window_end", 0) <= until_ms) and \
            (from_ms is None or r.get("window_start", 0) >= from_ms)

    files_of: dict[tuple[int, int], set[str]] = {}
    rows: list[dict[str, Any]] = []
    for path in sorted(Path(folder).glob("batch-*.jsonl")):
        with path.open() as fh:
            batch = [r for r in (json.loads(line) for line in fh if line.strip()) if wanted(r)]
        rows.extend(batch)
        for row in batch:
            files_of.setdefault(_window(row), set()).add(path.name)
    rows = sorted((canonical(r) for r in rows), key=row_key)
    want = sorted((canonical(r) for r in expected if wanted(r)), key=row_key)
    want_count: dict[tuple[int, int], int] = {}
    for row in want:
        want_count[_window(row)] = want_count.get(_window(row), 0) + 1
    got_count: dict[tuple[int, int], int] = {}
    for row in rows:
        got_count[_window(row)] = got_count.get(_window(row), 0) + 1
    duplicated = [w for w, names in files_of.items() if len(names) > 1 or got_count[w] > want_count.get(w, got_count[w])]
    return OutputComparison(
        equal=rows == want,
        expected_windows=len(want_count),
        lost_windows=sorted(w[0] for w in want_count if w not in got_count),
        duplicated_windows=sorted(w[0] for w in duplicated),
        unexpected_windows=sorted(w[0] for w in got_count if w not in want_count),
        changed_windows=_changed(rows, want, {w for w in got_count if w in want_count} - set(duplicated)),
    )


def _changed(rows: list[dict[str, Any]], want: list[dict[str, Any]], both: set[tuple[int, int]]) -> list[int]:
    """The starts of the windows in ``both`` whose rows differ between ``rows`` and ``want`` (canonical rows)."""
    got: dict[tuple[int, int], list] = {}
    expected: dict[tuple[int, int], list] = {}
    for row in rows:
        got.setdefault(_window(row), []).append(row)
    for row in want:
        expected.setdefault(_window(row), []).append(row)
    return sorted(w[0] for w in both if got.get(w) != expected.get(w))
