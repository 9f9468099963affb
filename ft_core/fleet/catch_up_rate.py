"""A job's processing rate with its whole CPUs, from a fleet recovery in which it caught up beside others (issue 33,
item 3; issue 38, item 1: the drain at the node's measured free share).

Problem: a fleet recovery measures when each job ran again (``running``: restart plus its restart delay) and when it
was back. The planner (:mod:`ft_core.fleet.recovery_order`) needs each job's processing rate ``mu`` with its cores'
whole CPUs; what a recovery shows is the rate the job had *beside the others catching up then*, on ``cpus`` shared
CPUs. Taking the shown rate as the job's own under-predicts a job restarted into a busier host and over-predicts one
restarted alone (measured: held jobs back 1.6-2.3x later than planned, docs/benchmarks/fleet-recovery.md).

Model (the planner's, inverted): from ``running`` to ``back`` the job processed everything that arrived from
``pending_s`` before the failure to ``back``, ``input_rate * (pending_s + back)`` rows, at ``mu`` times its share of
its CPUs, ``f(t) = min(1, (cpus - steady(t)) / catching(t))``: ``catching(t)`` the cores of the run's jobs catching
up at ``t`` (running, not yet back; one never back catches up all along), ``steady(t)`` what the jobs already back use (``cores * input_rate /
processing_rate``, their planned rates). So::

    mu = input_rate * (pending_s + back) / integral of f over [running, back]

With ``cpus`` None (each core a CPU of its own) ``f = 1``.

Algorithm: ``f`` is constant between the run's events (a job running, a job back): sort them and sum. Complexity
O(J log J + J^2) for the J jobs of one run.

Example: two one-core jobs on one CPU, both running from 10 s and back at 40 s, 10 rows/s in, nothing pending: each
processed 400 rows in 30 s at half its CPU, so ``mu`` is 400 / 15::

    >>> a = RecoveredJob(job="a", cores=1, input_rate=10, processing_rate=30, running_s=10, back_s=40)
    >>> b = a.model_copy(update={"job": "b"})
    >>> round(processing_rate_alone(a, [a, b], cpus=1), 2), round(processing_rate_alone(a, [a, b], cpus=None), 2)
    (26.67, 13.33)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ft_core.fleet.recovery_order import FleetJob


class RecoveredJob(FleetJob):
    """One job of a recovery as planned (its cores and rates), and the seconds after the failure at which it ran
    again and was back (None: not measured)."""

    running_s: float | None = None
    back_s: float | None = None


def processing_rate_alone(job: RecoveredJob, run: Sequence[RecoveredJob], cpus: float | None) -> float | None:
    """``job``'s processing rate with its whole CPUs (module docstring); None when its recovery did not measure it
    (not running or not back, back before running, or no CPU share at all while it caught up)."""
    if job.running_s is None or job.back_s is None or job.back_s <= job.running_s:
        return None
    seconds = job.back_s - job.running_s if cpus is None else share_seconds(job, run, cpus)
    if seconds <= 0:
        return None
    return job.input_rate * (job.pending_s + job.back_s) / seconds


def share_seconds(job: RecoveredJob, run: Sequence[RecoveredJob], cpus: float) -> float:
    """The integral of ``job``'s share of its CPUs over its catch-up, ``[running_s, back_s]``; a job of the run that
    ran again and was never back is catching up all along."""
    ran = [j for j in run if j.running_s is not None and j.job != job.job] + [job]
    end = {j.job: math.inf if j.back_s is None else j.back_s for j in ran}
    cuts = sorted({t for j in ran for t in (j.running_s, end[j.job]) if job.running_s <= t <= job.back_s})
    total = 0.0
    for lo, hi in zip(cuts, cuts[1:]):
        mid = (lo + hi) / 2
        catching = math.fsum(j.cores for j in ran if j.running_s <= mid < end[j.job])
        steady = math.fsum(j.cores * j.input_rate / j.processing_rate for j in ran if end[j.job] <= mid)
        total += (hi - lo) * min(1.0, max(0.0, cpus - steady) / catching)
    return total
