"""The units' durable tables read without Spark, their failure-free reference, and the check of one against the other.

Problem: a restarted unit must neither lose nor duplicate output (issue 5). A unit's table is a Parquet file
sink folder; only the files its metadata log (``<table>/_spark_metadata``) lists belong to committed
micro-batches (a unit killed mid-batch leaves uncommitted part files behind, which readers must ignore).
The reference is the same three queries computed in plain Python over the seeded input files.

- :func:`committed_batches`: the metadata log, batch id -> (commit wall time, Parquet files). The log is
  ``<n>`` files (``v1`` then one JSON line per added file) compacted every few batches into ``<n>.compact``
  (everything up to ``n``), as Spark's ``FileStreamSinkLog`` writes it.
- :func:`reference_rows`: per unit, the rows a failure-free run writes for every window (O1: speed sum in
  hundredths and count per segment and window; O2: reports per incident, segment and window; O3: the
  incidents of O2 joined with O1's speeds on (window, segment), kept when the window's average speed is
  below ``jam_speed``).
- :func:`check_unit`: committed rows against the reference rows of the windows the unit has closed:
  ``lost`` = reference rows missing, ``duplicated`` = extra copies of a row (a batch written twice).

Complexity: linear in the input records and the committed rows.

Example::

    >>> from spark_jobs.recovery_units.spec import SmartCitySpec
    >>> spec = SmartCitySpec(p1=2, p2=1, rate=20, window_s=4, slide_s=2, n_segments=5, n_users=20)
    >>> from spark_jobs.workloads.generator import file_records
    >>> loc = file_records(spec, "locations", 0) + file_records(spec, "locations", 1)
    >>> rows = reference_rows(spec, loc, [])
    >>> sum(r["n"] for r in rows["O1[0]"] + rows["O1[1]"]) == 2 * len(loc)  # each record in 2 sliding windows
    True
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ft_core.topology.document import split_task_id
from spark_jobs.recovery_units.queries import SCHEMAS, table_dir
from spark_jobs.recovery_units.spec import SmartCitySpec

Row = dict[str, Any]


def columns(unit: str) -> list[str]:
    """The table's columns, in schema order."""
    return [c.split()[0] for c in SCHEMAS[split_task_id(unit)[0]].split(", ")]


def _log_entries(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


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


def _windows(spec: SmartCitySpec, ts: int) -> range:
    w, s = spec.window_ms, spec.slide * 1000
    last = (ts // s) * s
    return range(last, ts - w, -s)


def reference_rows(spec: SmartCitySpec, locations: list[Row], reports: list[Row]) -> dict[str, list[Row]]:
    """Per unit, the failure-free table rows over the given input records (every window)."""
    w = spec.window_ms
    speed: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for r in locations:
        for start in _windows(spec, r["ts"]):
            acc = speed[(start, r["segment"])]
            acc[0] += round(r["speed"] * 100)
            acc[1] += 1
    reported: Counter = Counter()
    for r in reports:
        for start in _windows(spec, r["ts"]):
            reported[(start, r["segment"], r["incident"])] += 1
    out: dict[str, list[Row]] = {u: [] for u in spec.unit_ids()}
    for (start, seg), (speed_c, n) in speed.items():
        out[f"O1[{spec.group('O1', seg)}]"].append(
            {"window_start": start, "window_end": start + w, "segment": seg, "speed_c": speed_c, "n": n})
    jam_c = round(spec.jam_speed * 100)
    for (start, seg, incident), count in reported.items():
        h = spec.group("O2", seg)
        out[f"O2[{h}]"].append({"window_start": start, "window_end": start + w, "segment": seg,
                                "incident": incident, "reports": count})
        acc = speed.get((start, seg))
        if acc and acc[0] < jam_c * acc[1]:
            out[f"O3[{spec.group('O3', seg)}]"].append({"window_start": start, "window_end": start + w, "segment": seg,
                                                       "incident": incident, "speed_c": acc[0], "n": acc[1]})
    return out


def input_reference(spec: SmartCitySpec, input_dir: Path) -> dict[str, list[Row]]:
    """:func:`reference_rows` over every record in the input folder."""
    from spark_jobs.workloads.generator import read_records

    return reference_rows(spec, read_records(spec, input_dir, "locations"), read_records(spec, input_dir, "incidents"))


class UnitCheck(BaseModel):
    """One unit's committed table against the reference, for the windows it has closed."""

    unit: str
    closed_until_ms: int | None
    rows: int
    expected_rows: int
    lost_rows: int
    duplicated_rows: int
    unexpected_rows: int


def _key(row: Row, cols: list[str]) -> tuple:
    return tuple(int(row[c]) for c in cols)


def check_unit(unit: str, committed: list[Row], reference: list[Row], closed_until_ms: int | None) -> UnitCheck:
    """Compare rows of windows ending at or before ``closed_until_ms`` (None: nothing is closed yet).
    Rows of later windows are left out on both sides: a running unit may have written them already."""
    cols = columns(unit)
    limit = -1 if closed_until_ms is None else closed_until_ms
    got = Counter(_key(r, cols) for r in committed if r["window_end"] <= limit)
    want = Counter(_key(r, cols) for r in reference if r["window_end"] <= limit)
    lost = sum((want - got).values())
    extra = got - want
    duplicated = sum(min(n, extra[k]) for k, n in extra.items() if k in want)
    return UnitCheck(unit=unit, closed_until_ms=closed_until_ms, rows=sum(got.values()), expected_rows=sum(want.values()),
                     lost_rows=lost, duplicated_rows=duplicated, unexpected_rows=sum(extra.values()) - duplicated)
