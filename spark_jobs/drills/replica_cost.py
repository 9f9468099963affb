"""What a partial replica costs: its executors' CPU against the primary's, per input record.

Problem: partial active replication is only worth it if a replica of ``r`` of ``n`` tasks costs about
``r / n`` of the job (issue 13's target: at most ``r / n + 0.10`` of the primary's executor CPU). Both
jobs read the same input records, and the replica drops the rows of tasks outside its plan as early as
the first operator, so its CPU per input record is the measure.

Method: each run writes Spark's event log (:mod:`spark_jobs.runtime.event_log`); the micro-batches a
run completed before ``until`` (the failure), after its first one (JVM and plan warm-up), give the
executor CPU of every task attempt (:func:`~spark_jobs.runtime.event_log.task_costs`) and the input
records (its metrics lines, ``num_input_rows``). ``ratio = (replica CPU / replica records) /
(primary CPU / primary records)``. Complexity: one pass over each event log.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from spark_jobs.pipeline.metrics import read_metrics
from spark_jobs.runtime.event_log import task_costs


class RunCost(BaseModel):
    first_batch: int
    last_batch: int
    input_rows: int
    cpu_s: float

    @property
    def cpu_per_row_ms(self) -> float:
        return 1000 * self.cpu_s / self.input_rows if self.input_rows else 0.0


class ReplicaCost(BaseModel):
    primary: RunCost
    replica: RunCost
    ratio: float | None  # replica CPU per input record / primary CPU per input record


def run_cost(output: Path, events: Path, until: float) -> RunCost | None:
    """CPU and input records of the batches a run completed before ``until`` (after its first one)."""
    done = []
    for rec in read_metrics(Path(output) / "_metrics" / "metrics.jsonl"):
        start = datetime.fromisoformat(rec["timestamp"].replace("Z", "+00:00")).timestamp()
        if rec["batch_id"] >= 1 and start + (rec.get("batch_duration_ms") or 0) / 1000 <= until:
            done.append(rec)
    if not done:
        return None
    first, last = min(r["batch_id"] for r in done), max(r["batch_id"] for r in done)
    costs = task_costs(events, first, last)
    return RunCost(first_batch=first, last_batch=last, input_rows=sum(r.get("num_input_rows") or 0 for r in done),
                   cpu_s=costs.cpu_s)


def replica_cost(primary_out: Path, primary_events: Path, replica_out: Path, replica_events: Path,
                 until: float) -> ReplicaCost | None:
    """The replica's cost relative to the primary's over what both did before ``until``."""
    primary, replica = run_cost(primary_out, primary_events, until), run_cost(replica_out, replica_events, until)
    if primary is None or replica is None:
        return None
    ratio = replica.cpu_per_row_ms / primary.cpu_per_row_ms if primary.cpu_per_row_ms and replica.input_rows else None
    return ReplicaCost(primary=primary, replica=replica, ratio=ratio)
