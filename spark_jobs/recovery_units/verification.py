"""Did the units lose or duplicate output? Every unit's committed table against the failure-free reference.

Problem: a restarted unit must neither lose nor duplicate rows (issue 5), and that must be checked on a
running deployment, whose units have each closed a different part of event time. Method: per unit, the
watermark of its last completed micro-batch (``closed_until``: its progress is reported after the batch
commits, so every window ending at or before it is in the table) is read first; then the reference is
computed (:mod:`.reference`, the pipeline's own operators in batch over the input now there) and the
committed rows are read (:func:`.tables.read_committed`). Rows whose closing column (the window end, or for
a table without a window its event time) is at or before ``closed_until`` are compared as multisets of
whole rows (floats to 10 significant digits, :func:`spark_jobs.pipeline.sink.canonical`): ``lost`` =
reference rows missing, ``duplicated`` = extra copies of a reference row (a batch written twice),
``unexpected`` = rows the reference does not have. A table with no closing column (neither a window nor an
event time) cannot say which of its rows are final: only its duplicates are counted.
Complexity: linear in the committed and reference rows.

    >>> r = {"window_start": 0, "window_end": 10, "n": 1}
    >>> check_unit("O1[0]", "window_end", [r, r], [r, dict(r, window_end=20)], 10).model_dump()
    {'unit': 'O1[0]', 'closed_by': 'window_end', 'closed_until_ms': 10, 'rows': 2, 'expected_rows': 1, 'lost_rows': 0, 'duplicated_rows': 1, 'unexpected_rows': 0}
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ft_core.topology.document import split_task_id
from spark_jobs.pipeline.sink import canonical
from spark_jobs.recovery_units.deployment import load, read_progress
from spark_jobs.recovery_units.runtime import epoch_ms
from spark_jobs.recovery_units.tables import Row, read_committed, table_dir


class UnitCheck(BaseModel):
    """One unit's committed table against the reference, for the rows it has closed."""

    unit: str
    closed_by: str | None
    closed_until_ms: int | None
    rows: int
    expected_rows: int
    lost_rows: int
    duplicated_rows: int
    unexpected_rows: int


class UnitsVerification(BaseModel):
    lost_rows: int
    duplicated_rows: int
    units: list[dict]


def _closing_ms(value: Any) -> int:
    """A closing column's value in epoch ms (a timestamp read from Parquet is UTC)."""
    if isinstance(value, datetime):
        return int((value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp() * 1000)
    return int(value)


def _key(row: Row) -> str:
    return json.dumps(canonical(row), sort_keys=True, default=str)


def check_unit(unit: str, closed_by: str | None, committed: list[Row], reference: list[Row],
               closed_until_ms: int | None) -> UnitCheck:
    """Compare the rows closed by ``closed_until_ms`` (None: nothing is closed yet); later rows are left out on
    both sides (a running unit may have written some already)."""
    if closed_by is None:
        got, want = Counter(map(_key, committed)), Counter(map(_key, reference))
        duplicated = sum(max(0, n - want[k]) for k, n in got.items() if k in want)
        return UnitCheck(unit=unit, closed_by=None, closed_until_ms=closed_until_ms, rows=sum(got.values()),
                         expected_rows=sum(want.values()), lost_rows=0, duplicated_rows=duplicated, unexpected_rows=0)
    limit = -1 if closed_until_ms is None else closed_until_ms
    got = Counter(_key(r) for r in committed if _closing_ms(r[closed_by]) <= limit)
    want = Counter(_key(r) for r in reference if _closing_ms(r[closed_by]) <= limit)
    lost = sum((want - got).values())
    extra = got - want
    duplicated = sum(n for k, n in extra.items() if k in want)
    return UnitCheck(unit=unit, closed_by=closed_by, closed_until_ms=closed_until_ms, rows=sum(got.values()),
                     expected_rows=sum(want.values()), lost_rows=lost, duplicated_rows=duplicated,
                     unexpected_rows=sum(extra.values()) - duplicated)


def closed_until(root: Path, unit: str) -> int | None:
    """The watermark of the unit's last completed micro-batch: rows closed by it are in its table (the batch
    that used that watermark wrote them, and its progress is reported after its commit)."""
    marks = [epoch_ms(r.get("watermark")) for r in read_progress(root, unit)]
    marks = [m for m in marks if m]
    return max(marks) if marks else None


def read_reference(folder: Path) -> list[Row]:
    """The rows of a reference table (a batch Parquet folder)."""
    import pyarrow.parquet as pq

    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    return [row for f in files for row in pq.read_table(f).to_pylist()]


def verify(root: Path) -> UnitsVerification:
    """Every unit's committed table against the failure-free reference over the current input."""
    from spark_jobs.recovery_units.reference import reference_tables

    dep = load(root)
    root = Path(dep.root)
    units = dep.units.unit_ids()
    limits = {u: closed_until(root, u) for u in units}  # before reading anything: never ahead of the tables
    reference = reference_tables(root)
    checks = []
    for u in units:
        layout = dep.layouts[split_task_id(u)[0]]
        checks.append(check_unit(u, layout.closing_column, read_committed(root, u),
                                 read_reference(table_dir(reference, u)), limits[u]))
    return UnitsVerification(lost_rows=sum(c.lost_rows for c in checks), duplicated_rows=sum(c.duplicated_rows for c in checks),
                             units=[c.model_dump() for c in checks])
