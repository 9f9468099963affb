"""Where a predicted time back misses: the restart, the catch-up after it, or the latency baseline (issue 15).

Problem: ``ftops bench recovery-runtime`` compares the catch-up model's predicted time back per query
(:mod:`ft_core.recovery.catch_up`) with the measured one (:mod:`.latency`). One number per query hides
where a miss comes from. Split it, per failed query, into

- **the restart**: when the model has the query's last failed partition running (its stage's start plus
  the restart delay measured before the failure, :mod:`.rates`), against the end of that partition's first
  batch after the failure;
- **the drain**: when the model has the backlog gone (the query's predicted time back), against the end of
  the first batch after the restart whose event-time lag is below twice the lag before the failure;
- **the settling**: from the drain until the query counts as back, which the model does not have. A query
  is back when its time-averaged lag stays below 1.2 times the one before the failure (:mod:`.latency`);
  when the recovery leaves more applications on the same cores than before (a restarted partition runs in
  an application of its own), the lag settles higher, and the test passes late, or when a batch happens to
  be quick. ``lag_after_s`` is the time-averaged lag over the minute after the drain, beside
  ``lag_before_s``, over the ``normal_s`` seconds before the failure.

Method: from the run's own folder (its deployment's progress logs and input files) and its ``run.json``
(the measured rates, the stages that ran). Complexity: linear in the progress records.

Example (a finished run of the benchmark; seconds from the failure)::

    misses = query_misses(work_dir / "catch-up-1", run, stage_times=[0, 20, 50], normal_s=30)
    misses["O1[0]"].restarted_s - misses["O1[0]"].predicted_restart_s   # the restart's share of the miss
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from ft_core.recovery.catch_up import CatchUpModel, UnitRates, stage_runs
from spark_jobs.recovery_units.bench import StrategyRun
from spark_jobs.recovery_units.deployment import load, read_progress
from spark_jobs.recovery_units.latency import InputArrivals, normal_lag, unit_marks
from spark_jobs.recovery_units.recovery import last_failure

AFTER_S = 60.0  # the seconds after the backlog is gone over which a query's new steady lag is averaged


class QueryMiss(BaseModel):
    """One failed query's predicted and measured times (seconds after the failure) and its lag before the
    failure and after it is back (seconds); None where the run has no such record."""

    predicted_restart_s: float | None
    restarted_s: float | None
    predicted_back_s: float | None
    drained_s: float | None
    back_s: float | None
    lag_before_s: float | None
    lag_after_s: float | None


def query_misses(run_dir: Path, run: StrategyRun, stage_times: list[float], normal_s: float) -> dict[str, QueryMiss]:
    """Per failed query of the run in ``run_dir`` (its ``units`` deployment kept), where its prediction
    misses; empty for a failed run, one without predictions, or one whose folder is gone."""
    root = run_dir / "units"
    if run.error or not run.rates or not (root / "deployment.json").exists():
        return {}
    failure, dep = last_failure(root), load(root)
    queries = dep.units.problem(failure.units, dep.units.declared_cost(1.0))["queries"]
    model = CatchUpModel(rates={u: UnitRates(**r) for u, r in run.rates.items()}, stage_times=stage_times)
    predicted = stage_runs([(s["stage"], s["units"]) for s in run.stages], model)
    arrivals = InputArrivals(dep.workload, Path(dep.input))
    first_batch = {u: _first_batch_after(root, u, failure.time) for u in failure.units}  # read once, shared by queries
    out = {}
    for q, spec in queries.items():
        parts, back = spec["partitions"], run.query_recovered_s.get(q)
        marks = unit_marks(root, q, arrivals)
        restarted = _latest(first_batch[p] for p in parts)
        before = normal_lag(marks, failure.time, normal_s)
        drained = _drained(marks, failure.time, restarted, before)
        after = None if drained is None else normal_lag(marks, failure.time + drained + AFTER_S, AFTER_S)
        out[q] = QueryMiss(predicted_restart_s=_latest(predicted.get(p) for p in parts), restarted_s=restarted,
                           predicted_back_s=run.predicted_s.get(q), drained_s=drained, back_s=back,
                           lag_before_s=_round(before), lag_after_s=_round(after))
    return out


def _drained(marks: list[tuple[float, float]], failure_time: float, restarted: float | None, before: float | None) -> float | None:
    """Seconds from the failure to the end of the first batch, from the restart on, whose lag at its end is
    below twice the lag before the failure: the backlog is gone."""
    if restarted is None or before is None:
        return None
    return next((round(t - failure_time, 2) for t, came in marks
                 if t - failure_time >= restarted and t - came < 2 * before), None)


def _first_batch_after(root: Path, unit: str, failure_time: float) -> float | None:
    """Seconds from the failure to the end of the unit's first batch after it (its restart's first batch)."""
    ends = sorted(float(r["reported_at"]) for r in read_progress(root, unit) if float(r["reported_at"]) > failure_time)
    return round(ends[0] - failure_time, 2) if ends else None


def _latest(times: Iterable[float | None]) -> float | None:
    values = list(times)
    return None if not values or any(v is None for v in values) else round(max(values), 2)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
