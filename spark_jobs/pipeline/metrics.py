"""Per-task (key group) input and output counts per micro-batch: how many rows each logical task read
and emitted.

Problem: the topology's tasks are key groups, which Spark does not know about; profiling needs how
many records each task read. ftops marks the rows entering every operator with
``df.observe(name, ...)``, one ``sum(g == k)`` per key group ``k`` (:func:`observe_groups`); names are
``<operator>.in`` (``<operator>.in.<input>`` for an operator with several inputs), and
``<operator>.out`` for the rows leaving it when they still carry its key. A
:class:`TaskMetricsListener` (a ``StreamingQueryListener``, no change to the user's code) reads
``progress.observedMetrics`` after every micro-batch and appends one JSON line per batch::

    {"query": "...", "run_id": "...", "app_id": "...", "batch_id": 3, "timestamp": "...", "num_input_rows": 200,
     "batch_duration_ms": 812, "watermark": "...", "tasks": {"O1[0]": {"in": 61, "out": 40}, ...}}

:func:`spark_jobs.pipeline.rates.measured` turns those lines into the topology's task rates.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from ft_core.topology.document import split_task_id
from spark_jobs.runtime.progress_listener import ProgressListener


def observe_groups(df, name: str, group_col: str, parallelism: int, enabled: bool = True):
    """Attach an observation counting ``df``'s rows per key group (no-op when disabled)."""
    if not enabled:
        return df
    from pyspark.sql import functions as F

    exprs = [F.sum(F.when(F.col(group_col) == k, 1).otherwise(0)).cast("long").alias(str(k))
             for k in range(parallelism)]
    return df.observe(name, *exprs)


def restrict(df, group_col: str, groups: list[int] | None):
    """Keep only rows whose key group is in ``groups`` (a replica's plan); None keeps everything."""
    if groups is None:
        return df
    from pyspark.sql import functions as F

    return df.filter(F.col(group_col).isin(groups) if groups else F.lit(False))


def task_counts(observed: dict[str, Any], task_ids: list[str]) -> dict[str, dict[str, int]]:
    """``{"O1[0]": {"in": n, "out": m}}`` from a progress's observed metrics (the inputs of an operator
    with several inputs are summed)."""
    tasks = {t: {"in": 0, "out": 0} for t in task_ids}
    for name, row in observed.items():
        parts = name.split(".")
        if len(parts) < 2 or parts[1] not in ("in", "out"):
            continue
        values = row.asDict() if hasattr(row, "asDict") else dict(row)
        for k, v in values.items():
            task = f"{parts[0]}[{k}]"
            if task in tasks and v is not None:
                tasks[task][parts[1]] += int(v)
    return tasks


class TaskMetricsListener(ProgressListener):
    """Appends one JSON line per micro-batch of the query named ``query_name`` to ``path``."""

    def __init__(self, path: Path, task_ids: list[str], query_name: str, extra: dict[str, Any] | None = None):
        super().__init__([query_name])
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.task_ids = list(task_ids)
        self.extra = extra or {}
        self._lock = threading.Lock()

    def on_progress(self, p) -> None:
        record = {
            "query": p.name,
            "run_id": str(p.runId),
            "batch_id": p.batchId,
            "timestamp": p.timestamp,
            "num_input_rows": p.numInputRows,
            "batch_duration_ms": p.batchDuration,
            "watermark": (p.eventTime or {}).get("watermark"),
            **self.extra,
            "tasks": task_counts(p.observedMetrics or {}, self.task_ids),
        }
        with self._lock, self.path.open("a") as fh:
            fh.write(json.dumps(record, separators=(",", ":"), default=str) + "\n")


def application_run(record: dict[str, Any]) -> str:
    """Which application run wrote a metrics record: its Spark application id (a query that failed and started
    again in the same driver has a new run id but is the same run); the query's run id in records written
    before the application id was recorded."""
    return record.get("app_id") or record.get("run_id", "")


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def total_counts(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per task, the ``in`` and ``out`` counts summed over micro-batches."""
    totals: dict[str, dict[str, int]] = defaultdict(lambda: {"in": 0, "out": 0})
    for rec in records:
        for task, c in rec["tasks"].items():
            totals[task]["in"] += c.get("in", 0)
            totals[task]["out"] += c.get("out", 0)
    return dict(totals)



def observed_groups(records: list[dict[str, Any]], kind: str = "in") -> dict[str, set[int]]:
    """Per operator, the key groups that saw at least one row (``kind`` in/out)."""
    seen: dict[str, set[int]] = defaultdict(set)
    for task, c in total_counts(records).items():
        if c[kind] > 0:
            op, k = split_task_id(task)
            seen[op].add(k)
    return dict(seen)
