"""Catch-up: when a restarted partition is back to normal, not only when it restarts (issue 15, beyond paper 003).

Problem: paper 003 charges a failed partition only its restart: a query counts as recovered at the
stage that restarts its last failed partition. On a cluster most of a query's time back to normal is
*catch-up*: a partition down for ``d`` seconds restarts with ``d`` seconds of input waiting and drains
it only as fast as its processing rate exceeds its input rate, sharing its node with whatever else
restarted there. Given a staged schedule (which partition starts at which stage, on which node), when
each stage's capacity arrives, and per partition its input rate ``λ`` and processing rate ``μ`` (rows
per second on one whole node) and its restart delay, predict when each partition is caught up and
each query is back.

Model (times in seconds after the failure):

- a partition of stage ``k`` runs from ``r = start_k + restart_s``, where stage ``k`` starts at
  ``start_k = max(stage_times[k], u_{k-1})``, ``u_{k-1}`` the time the previous non-empty stage's applications
  are up (``start_{k-1} + running_s``: their queries started, which both executors wait for before the next
  stage, before the first batch ends; ``running_s`` defaults to ``restart_s``); its backlog then is
  ``λ (pending_s + r)`` rows (``pending_s``: input not yet committed when it failed, e.g. half a
  trigger interval, or the time since the last checkpoint);
- the partitions placed on one node share it (processor sharing; a node of size ``z`` has ``z``
  whole-node units of processing; the survivors' pooled free capacity ``c`` under the cap is a node of
  size ``c / node_cap``): a caught-up partition uses ``λ / μ`` of it, the rest is split evenly among the
  partitions still catching up, at most one whole node each (``μ`` is measured on one), and one with
  share ``s`` drains ``s μ - λ`` rows per second. A partition is caught up when its backlog is empty and
  its share keeps up with its input; one whose share never does never catches up (its node is
  overloaded): ``None``;
- a query is back when the last failed partition of its upstream closure is caught up (pipelined
  catch-up approximated by the slowest, as in :mod:`ft_core.simulation.failure_timeline`).

Algorithm: per node an event simulation. Between events (a partition starts, a backlog empties) every
rate is constant, so the next event's time is exact. Complexity: O(P^2) per node for its P partitions
(at most 2P events, O(P) work each).

Example: a partition restarts 20 s after the failure plus 10 s of restart; 10 rows/s arrive and a whole
node processes 40 rows/s. Alone it drains 30 rows/s of a 300-row backlog: caught up at 40 s. With a
second one like it on the same node each gets half: 20 - 10 = 10 rows/s, caught up at 60 s::

    >>> rates = {"a": UnitRates(input_rate=10, processing_rate=40, restart_s=10),
    ...          "b": UnitRates(input_rate=10, processing_rate=40, restart_s=10)}
    >>> node_catch_up([("a", 30.0, 300.0)], rates, size=1.0)
    {'a': 40.0}
    >>> node_catch_up([("a", 30.0, 300.0), ("b", 30.0, 300.0)], rates, size=1.0)
    {'a': 60.0, 'b': 60.0}
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ft_core.errors import InputError
from ft_core.input.quantities import NonNegative, Positive, Seconds
from ft_core.recovery.problem import RecoveryProblem
from ft_core.recovery.staged import StagedSchedule

_EPS = 1e-9


class UnitRates(BaseModel):
    """One partition's measured rates: rows per second arriving, rows per second one whole node processes
    while it has a backlog, seconds from its stage's start until it processes (start, state restore, its first
    batch's end), and until its application is up (queries started: the next stage may start; None: restart_s)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    input_rate: NonNegative
    processing_rate: Positive
    restart_s: Seconds = 0.0
    running_s: Seconds | None = None

    @model_validator(mode="after")
    def _can_keep_up(self) -> UnitRates:
        if self.input_rate >= self.processing_rate:
            raise ValueError(f"input_rate {self.input_rate:g} rows/s is not below processing_rate "
                             f"{self.processing_rate:g}: the partition can never catch up")
        return self


class CatchUpModel(BaseModel):
    """Rates per failed partition, when each stage's capacity is usable (seconds after the failure, stage 0
    first: the survivors, usually at detection), and the input pending at the failure (seconds of input)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    rates: dict[str, UnitRates]
    stage_times: list[Seconds] = Field(min_length=1)
    pending_s: Seconds = 0.0

    @model_validator(mode="after")
    def _times_ordered(self) -> CatchUpModel:
        if any(b < a for a, b in zip(self.stage_times, self.stage_times[1:])):
            raise ValueError(f"stage_times must not decrease, got {self.stage_times}")
        return self


class CatchUpPrediction(BaseModel):
    """Per failed partition when it runs and when it is caught up, per failed query when it is back, and
    the priority-weighted mean over the queries (``None``: never, under this schedule)."""

    restarted_s: dict[str, float | None]
    caught_up_s: dict[str, float | None]
    query_back_s: dict[str, float | None]
    weighted_mean_s: float | None


def node_catch_up(starts: list[tuple[str, float, float]], rates: dict[str, UnitRates], size: float,
                  demand: dict[str, float] | None = None) -> dict[str, float | None]:
    """When each partition on one node is caught up: ``starts`` holds (partition, time it runs, backlog rows
    then); ``size`` is the node's processing in whole nodes (see the module docstring). ``demand``: what a
    partition's processing rate was measured on, in the same units as ``size`` (default 1, one node); the
    partitions catching up then get the same fraction of their demand (a fleet's jobs of different cores
    sharing a host's CPUs: :mod:`ft_core.fleet.recovery_order`)."""
    pending = deque(sorted(starts, key=lambda s: s[1]))
    backlog: dict[str, float] = {}
    done: dict[str, float | None] = {}
    t = pending[0][1] if pending else 0.0
    while pending or backlog:
        while pending and pending[0][1] <= t + _EPS:
            pid, _, rows = pending.popleft()
            backlog[pid] = rows
        next_start = pending[0][1] if pending else math.inf
        if not backlog:
            t = next_start
            continue
        drain = _drains(backlog, done, rates, size, demand or {})
        caught = [p for p, rows in backlog.items() if rows <= _EPS and drain[p] >= -_EPS]  # empty and keeping up
        if caught:
            for p in caught:
                done[p] = t
                del backlog[p]
            continue
        finish = min((rows / drain[p] for p, rows in backlog.items() if drain[p] > 0 and rows > _EPS), default=math.inf)
        step = min(finish, next_start - t)
        if math.isinf(step):
            done.update(dict.fromkeys(backlog))  # overloaded and nothing else to come: never caught up
            break
        for p, rows in backlog.items():
            backlog[p] = 0.0 if drain[p] > 0 and rows / drain[p] <= step + _EPS else rows - drain[p] * step
        t += step
    return done


def _drains(backlog: dict[str, float], done: dict[str, float | None], rates: dict[str, UnitRates], size: float,
            demand: dict[str, float]) -> dict[str, float]:
    """Rows per second each catching-up partition drains: the node less what the caught-up ones use, split in
    proportion to demand (evenly by default), at most its whole demand each (its processing rate is measured
    on that)."""
    steady = math.fsum(demand.get(p, 1.0) * rates[p].input_rate / rates[p].processing_rate
                       for p, at in done.items() if at is not None)
    share = min(1.0, max(0.0, size - steady) / math.fsum(demand.get(p, 1.0) for p in backlog))
    return {p: share * rates[p].processing_rate - rates[p].input_rate for p in backlog}


def predict_catch_up(problem: RecoveryProblem, schedule: StagedSchedule, model: CatchUpModel) -> CatchUpPrediction:
    """Each failed partition's and query's time back under ``schedule`` (see the module docstring)."""
    check_catch_up_model(problem, model, len(schedule.stages))
    node_size = {n: usable / schedule.node_cap for n, usable in schedule.nodes.items()}
    per_node: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    restarted: dict[str, float | None] = dict.fromkeys(problem.partitions)
    node_of = {pid: stage.placement[pid] for stage in schedule.stages for pid in stage.partitions}
    for pid, runs in stage_runs([(s.stage, s.partitions) for s in schedule.stages], model).items():
        restarted[pid] = runs
        per_node[node_of[pid]].append((pid, runs, model.rates[pid].input_rate * (model.pending_s + runs)))
    caught: dict[str, float | None] = dict.fromkeys(problem.partitions)
    for node, starts in per_node.items():
        caught.update(node_catch_up(starts, model.rates, node_size[node]))
    back = {q: _latest([caught[p] for p in problem.queries[q].partitions]) for q in problem.query_ids()}
    return CatchUpPrediction(restarted_s=_rounded(restarted), caught_up_s=_rounded(caught), query_back_s=_rounded(back),
                             weighted_mean_s=weighted_mean(back, {q: problem.queries[q].priority for q in back}))


def stage_runs(stages: Sequence[tuple[int, Sequence[str]]], model: CatchUpModel) -> dict[str, float]:
    """When each restarted partition runs, given each stage's number and the partitions it starts, in order:
    a stage starts once its capacity is there *and* every application of the previous non-empty stage is up
    (both executors, ``execute_schedule`` and the Airflow DAG's ``wait_capacity_k >> start_stage_k >>
    record_stage_k`` chain, start a stage only then: its queries started, ``running_s``), and the partition runs
    ``restart_s`` later."""
    runs: dict[str, float] = {}
    ready = 0.0
    for number, partitions in stages:
        if not partitions:
            continue
        start = max(model.stage_times[number], ready)
        rates = [model.rates[pid] for pid in partitions]
        runs.update({pid: start + r.restart_s for pid, r in zip(partitions, rates)})
        ready = start + max(r.restart_s if r.running_s is None else r.running_s for r in rates)
    return runs


def with_prediction(problem: RecoveryProblem, schedule: StagedSchedule, model: CatchUpModel) -> StagedSchedule:
    """``schedule`` with each query's predicted time back and their priority-weighted mean filled in."""
    predicted = predict_catch_up(problem, schedule, model)
    return schedule.model_copy(update={"predicted_back_s": predicted.query_back_s,
                                       "predicted_weighted_mean_s": predicted.weighted_mean_s})


def weighted_mean(back: dict[str, float | None], priority: dict[str, float]) -> float | None:
    """Priority-weighted mean of the times in ``back`` (the plain mean when their priorities are all 0); None
    if a query never is back. ``priority`` may name more queries than ``back``."""
    if not back or any(v is None for v in back.values()):
        return None
    weights = {q: priority[q] for q in back}
    if math.fsum(weights.values()) <= 0:
        weights = dict.fromkeys(back, 1.0)
    return round(math.fsum(weights[q] * t for q, t in back.items()) / math.fsum(weights.values()), 3)


def _latest(times: list[float | None]) -> float | None:
    return None if any(t is None for t in times) else max(times, default=0.0)


def _rounded(values: dict[str, float | None]) -> dict[str, float | None]:
    return {k: None if v is None else round(v, 3) for k, v in values.items()}


def check_catch_up_model(problem: RecoveryProblem, model: CatchUpModel, stages: int, what: str = "") -> None:
    """InputError (its field prefixed with ``what``) unless ``model`` has rates for every failed partition and
    a time for each of ``stages`` stages."""
    prefix = f"{what}: " if what else ""
    missing = [p for p in problem.partitions if p not in model.rates]
    if missing:
        raise InputError(f"{prefix}rates: no rates for failed partition {missing[0]!r}")
    if len(model.stage_times) < stages:
        raise InputError(f"{prefix}stage_times: {len(model.stage_times)} time(s) for {stages} stages "
                         "(one per stage: the survivors' first, then one per arriving node)")
