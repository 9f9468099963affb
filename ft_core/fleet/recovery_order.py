"""Fleet-wide staged recovery: which job comes back first as capacity returns (issue 33, item 3; paper 003 with
jobs as queries).

Problem: a failure domain is lost under several jobs at once. Each job must restart its application from its
checkpoint and needs ``cores`` cores to run; capacity comes back in steps: the free cores of the surviving workers
now, then each returning (or replacement) worker at a known time. Choose when each job restarts so that the
priority-weighted mean time until the jobs are back (caught up with their input) is least.

Model (times in seconds after the failure). A job restarted at stage time ``s`` runs from ``r = s + restart_s``
(its driver and executors starting: taken from the cluster's state when the stage starts) and then replays the
input that arrived while it was down, ``input_rate * (pending_s + r)`` records, at ``processing_rate -
input_rate`` records per second (``processing_rate``: what the job processes with its cores, measured; where
jobs share CPUs, see below). Alone on its cores it is back at::

    back = r + input_rate * (pending_s + r) / (processing_rate - input_rate)

An application holds its cores alone (Spark standalone schedules cores, not shares), so where every core is a CPU
of its own jobs restarted together do not slow each other; a job whose processing rate does not exceed its input
rate is never back. ``back`` is then linear in ``s`` with slope ``a = processing_rate / (processing_rate -
input_rate)``: each second a job waits costs it ``a`` seconds of time back.

Where the returning cores share fewer CPUs (``FleetCapacity.cpus``: workers that advertise more cores than their
hosts have free, as on a one-machine cluster; measured when the plan is made), the jobs catching up share those
CPUs: processor sharing, each job catching up getting the same fraction of its cores, a caught-up one using
``cores * input_rate / processing_rate`` (:func:`ft_core.recovery.catch_up.node_catch_up`, the model paper 003's
catch-up policy uses for partitions on one node). ``processing_rate`` is then the job's rate with its cores'
whole CPUs. Times back are no longer independent: :func:`predict_back` predicts them together.

Algorithm: the jobs are paper 003's queries, each with one failed partition (its application) of cost
``cores``; no partition is shared (``f_p = 1``), so BestDensity's profit density (Definition 3) is ``priority /
cores`` and its order is the density order (:func:`ft_core.recovery.best_density.best_density_order` on the same
problem gives it; the tests check). Catch-up changes what waiting costs, so a second order weighs density by the
slope, ``priority * a / cores`` (Smith's ratio rule for weighted completion times, with the catch-up slope as the
job's sensitivity to delay). Each order is packed *order-then-pack* (§4.4 as corrected in the digest): each job in
turn starts at the earliest stage from which enough pooled capacity stays free; a job that fits earlier than one
before it starts earlier, so capacity never idles while a waiting job fits. The plan with the lower predicted
weighted mean time back wins (``policy="staged"``). Baselines, for the benchmark: ``fifo`` (the given order,
no job starting before the one ahead of it, as a standalone master grants cores in submission order) and
``density`` (paper 003's order alone).

Complexity: O(J log J) to order J jobs, O(J S) to pack them into S stages, O(J) to predict (O(J^2) with shared
CPUs: an event simulation): 5,000 jobs over 100 stages in about a second of CPython.

Example: two workers of 4 cores come back 60 s and 120 s after the failure. ``billing`` (priority 3) needs 4
cores; ``clicks`` (priority 1) needs 4 and barely outpaces its input (110 against 100 records/s: slope 11), so
each second it waits costs it 11. Density restarts ``billing`` first; weighing the slope restarts ``clicks``
first and lowers the weighted mean::

    >>> jobs = [FleetJob(job="billing", priority=3, cores=4, input_rate=100, processing_rate=1000, restart_s=10),
    ...         FleetJob(job="clicks", priority=1, cores=4, input_rate=100, processing_rate=110, restart_s=10)]
    >>> capacity = FleetCapacity(free_cores=0, arrivals=[Arrival(at_s=60, cores=4), Arrival(at_s=120, cores=4)])
    >>> [(j.job, j.start_s, j.predicted_back_s) for j in plan_fleet_recovery(jobs, capacity, policy="density").jobs]
    [('billing', 60.0, 77.778), ('clicks', 120.0, 1430.0)]
    >>> plan = plan_fleet_recovery(jobs, capacity)
    >>> [(j.job, j.start_s, j.predicted_back_s) for j in plan.jobs], plan.order_rule
    ([('clicks', 60.0, 770.0), ('billing', 120.0, 144.444)], 'catch-up-weighted density')
    >>> plan.predicted_weighted_mean_s  # against (3 x 77.778 + 1430) / 4 = 415.8 by density
    300.833

Two one-core jobs restarted together on one free CPU each run at half their rate while both catch up::

    >>> pair = [FleetJob(job=n, cores=1, input_rate=10, processing_rate=40) for n in ("a", "b")]
    >>> predict_back(pair, [0.0, 0.0]), predict_back(pair, [0.0, 0.0], cpus=1)
    ([0.0, 0.0], [0.0, 0.0])
    >>> predict_back([p.model_copy(update={"pending_s": 30}) for p in pair], [0.0, 0.0], cpus=1)
    [30.0, 30.0]
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ft_core.errors import InputError
from ft_core.input.names import named
from ft_core.input.quantities import NonNegative, Positive, Seconds
from ft_core.recovery.catch_up import UnitRates, node_catch_up

Policy = Literal["staged", "density", "fifo"]
POLICIES = ("staged", "density", "fifo")
MAX_JOBS = 100_000
MAX_STAGES = 10_000


class FleetJob(BaseModel):
    """A job lost with the domain: its weight, the cores its application needs, its measured rates (records per
    second in, and processed with those cores) and how long its restart takes; ``pending_s``: input not committed
    when it failed (seconds of input, e.g. half a trigger interval)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    job: named("job name")
    priority: Positive = 1.0
    cores: Positive
    input_rate: NonNegative
    processing_rate: Positive
    restart_s: Seconds = 0.0
    pending_s: Seconds = 0.0


class Arrival(BaseModel):
    """Capacity coming back: ``cores`` usable ``at_s`` seconds after the failure (a returning worker)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    at_s: Seconds
    cores: Positive


class FleetCapacity(BaseModel):
    """Free cores on the surviving workers now, the workers coming back, and ``cpus``: the CPUs the restarted jobs
    share (None: each core a CPU of its own; see the module docstring)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    free_cores: NonNegative = 0.0
    arrivals: list[Arrival] = Field(default_factory=list, max_length=MAX_STAGES)
    cpus: Positive | None = None


class FleetRecoveryProblem(BaseModel):
    """The document ``ftops plan fleet-recovery`` reads: the jobs lost and the capacity coming back."""

    model_config = ConfigDict(extra="forbid")
    jobs: list[FleetJob] = Field(min_length=1, max_length=MAX_JOBS)
    capacity: FleetCapacity


class JobRestart(BaseModel):
    """When a job restarts (its stage: 0 the survivors, k the k-th arrival; None: never, no capacity fits it) and
    when it is predicted back (None: never: no stage fits it, or it cannot outpace its input)."""

    job: str
    priority: float
    stage: int | None
    start_s: float | None
    predicted_back_s: float | None


class FleetRecoveryPlan(BaseModel):
    """The restart of every job, in restart order (then never-started jobs), and its predicted weighted mean."""

    policy: Policy
    order_rule: str
    jobs: list[JobRestart]
    predicted_weighted_mean_s: float | None
    never_back: list[str]
    elapsed_s: float


def plan_fleet_recovery(jobs: Sequence[FleetJob], capacity: FleetCapacity, policy: Policy = "staged") -> FleetRecoveryPlan:
    """The fleet's restart plan under ``policy`` (see the module docstring)."""
    started = time.perf_counter()
    _check(jobs, policy)
    times, cores = _stages(capacity)
    if policy == "fifo":
        candidates = [("given order", list(range(len(jobs))), False)]
    else:
        candidates = [("density", _order(jobs, slope=False), True)]
        if policy == "staged":
            candidates.append(("catch-up-weighted density", _order(jobs, slope=True), True))
    best = None
    for rule, order, backfill in candidates:
        stage_of = _pack([jobs[i].cores for i in order], cores, backfill)
        starts = [None if s is None else times[s] for s in stage_of]
        backs = predict_back([jobs[i] for i in order], starts, capacity.cpus)
        restarts = [JobRestart(job=jobs[i].job, priority=jobs[i].priority, stage=s, start_s=start,
                               predicted_back_s=None if b is None else round(b, 3))
                    for i, s, start, b in zip(order, stage_of, starts, backs)]
        mean = weighted_mean_back(restarts)
        score = (math.fsum(r.priority for r in restarts if r.predicted_back_s is None), math.inf if mean is None else mean)
        if best is None or score < best[3]:  # fewer jobs (by priority) never back first, then the lower mean
            best = (rule, restarts, mean, score)
    rule, restarts, mean, _ = best
    restarts.sort(key=lambda r: (r.start_s is None, r.start_s or 0.0))  # stable: ties keep the rule's order
    return FleetRecoveryPlan(policy=policy, order_rule=rule, jobs=restarts,
                             predicted_weighted_mean_s=None if mean is None else round(mean, 3),
                             never_back=[r.job for r in restarts if r.predicted_back_s is None],
                             elapsed_s=time.perf_counter() - started)


def catch_up_slope(job: FleetJob) -> float:
    """Seconds of time back each second of waiting costs the job (infinite when it cannot outpace its input)."""
    spare = job.processing_rate - job.input_rate
    return math.inf if spare <= 0 else job.processing_rate / spare


def predicted_back_s(job: FleetJob, start_s: float) -> float | None:
    """When the job restarted at ``start_s`` is caught up (the module's model); None: never."""
    spare = job.processing_rate - job.input_rate
    if spare <= 0:
        return None
    running = start_s + job.restart_s
    return running + job.input_rate * (job.pending_s + running) / spare


def predict_back(jobs: Sequence[FleetJob], starts: Sequence[float | None], cpus: float | None = None) -> list[float | None]:
    """When each job, restarted at its start (None: never), is back; ``cpus``: the CPUs the jobs catching up share
    (None: each core its own; see the module docstring). None: never back."""
    if cpus is None:
        return [None if s is None else predicted_back_s(j, s) for j, s in zip(jobs, starts)]
    rates, runs, demand = {}, [], {}
    for i, (job, start) in enumerate(zip(jobs, starts)):
        if start is None or math.isinf(catch_up_slope(job)):
            continue
        key = str(i)
        rates[key] = UnitRates(input_rate=job.input_rate, processing_rate=job.processing_rate)
        running = start + job.restart_s
        runs.append((key, running, job.input_rate * (job.pending_s + running)))
        demand[key] = job.cores
    caught = node_catch_up(runs, rates, size=cpus, demand=demand) if runs else {}
    return [caught.get(str(i)) for i in range(len(jobs))]


def _check(jobs: Sequence[FleetJob], policy: str) -> None:
    if policy not in POLICIES:
        raise InputError(f"policy: {policy!r} is not one of {', '.join(POLICIES)}", field="policy")
    if len(jobs) > MAX_JOBS:
        raise InputError(f"jobs: {len(jobs)} jobs, at most {MAX_JOBS:,}", field="jobs")
    names = [j.job for j in jobs]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})[:3]
        raise InputError(f"jobs: each job once; {', '.join(dup)} more than once", field="jobs")


def _stages(capacity: FleetCapacity) -> tuple[list[float], list[float]]:
    """Stage start times (0 for the survivors) and the cores each stage adds, arrivals in time order."""
    arrivals = sorted(capacity.arrivals, key=lambda a: a.at_s)
    return [0.0] + [a.at_s for a in arrivals], [capacity.free_cores] + [a.cores for a in arrivals]


def _order(jobs: Sequence[FleetJob], slope: bool) -> list[int]:
    """Job indices by density (priority per core; times the catch-up slope with ``slope``), highest first; ties by
    name. A job that can never catch up goes last: restarting it early buys nothing back."""
    def key(i: int) -> tuple:
        j = jobs[i]
        a = catch_up_slope(j)
        hopeless = math.isinf(a)
        value = j.priority / j.cores * (1.0 if hopeless or not slope else a)
        return hopeless, -value, j.job
    return sorted(range(len(jobs)), key=key)


def _pack(demands: list[float], stage_cores: list[float], backfill: bool) -> list[int | None]:
    """The stage each demand starts in, in order: the earliest stage from which its cores stay free in every later
    stage (capacity, once given, stays used). Without ``backfill`` no demand starts before the one ahead of it.
    O(S) per demand."""
    free = []  # free[k]: cores still free from stage k on (cumulative capacity minus what started by k)
    total = 0.0
    for c in stage_cores:
        total += c
        free.append(total)
    eps = 1e-9
    floor, stages = 0, []
    for need in demands:
        suffix_min, chosen = math.inf, None
        for k in range(len(free) - 1, floor - 1, -1):  # the earliest k with min(free[k:]) >= need
            suffix_min = min(suffix_min, free[k])
            if suffix_min + eps < need:
                break
            chosen = k
        stages.append(chosen)
        if chosen is None:
            continue
        for k in range(chosen, len(free)):
            free[k] -= need
        if not backfill:
            floor = chosen
    return stages


def weighted_mean_back(restarts: Sequence[JobRestart]) -> float | None:
    """Priority-weighted mean time back of the jobs that come back (None if none does)."""
    back = [(r.priority, r.predicted_back_s) for r in restarts if r.predicted_back_s is not None]
    weight = math.fsum(w for w, _ in back)
    return math.fsum(w * t for w, t in back) / weight if weight else None
