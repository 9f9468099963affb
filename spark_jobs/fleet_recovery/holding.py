"""Which lost jobs a fleet recovery holds down, and the plan it runs (issue 33, item 3).

Problem: a lost job's application keeps its driver and waits for cores; a standalone master gives returning cores to
the waiting applications in submission order. To restart jobs in the planner's order, a job that would take a
returning core before a job planned ahead of it must be *held down* (its driver stopped, resubmitted from its
checkpoint in its stage). Holding down costs the job a restart from its checkpoint (``restart_s``) where waiting costs
only its executors' start (``resume_s``).

Algorithm: the jobs go to the planner in submission order (so ``fifo`` is the master's own order). From the plan,
:func:`queue_jumpers` holds down a job without a waiting application (its driver died: it must be resubmitted anyway)
and a job that a job of an earlier stage would queue behind (submitted after it, or itself held down and so
resubmitted, behind every waiting one). Every plan is predicted with each job's own cost, held or kept
(:func:`costed`); ``staged`` also weighs the master's own order (nothing held but the jobs whose driver died) and keeps
the lower predicted priority-weighted mean, so a restart that costs more than it saves is not paid.

Complexity: two plans (:mod:`ft_core.fleet.recovery_order`) and O(J^2) for :func:`queue_jumpers`.
"""

from __future__ import annotations

from typing import Any

MASTER_ORDER = "the master's own order (holding jobs down would cost more restarts than it saves)"


def choose_plan(planned: list[dict[str, Any]], capacity, policy: str, submitted: dict[str, float | None]):
    """The plan (``FleetRecoveryPlan``, predicted with each job's own restart cost) and the jobs it holds down."""
    from ft_core.fleet.recovery_order import plan_fleet_recovery
    from spark_jobs.fleet_recovery.inputs import as_fleet_job

    by_job = {p["job"]: p for p in planned}
    order = sorted(by_job, key=lambda j: (submitted.get(j) is None, submitted.get(j) or 0.0, j))
    dead = {j for j in order if submitted.get(j) is None}
    plan = plan_fleet_recovery([as_fleet_job(by_job[j]) for j in order], capacity, policy=policy)
    held = queue_jumpers([(r.job, r.stage) for r in plan.jobs], submitted)
    plan = costed(plan, by_job, held, capacity.cpus)
    if policy != "staged" or not set(held) - dead:
        return plan, held
    master = plan_fleet_recovery([as_fleet_job(by_job[j]) for j in order], capacity, policy="fifo")
    master_held = queue_jumpers([(r.job, r.stage) for r in master.jobs], submitted)
    master = costed(master, by_job, master_held, capacity.cpus).model_copy(update={"order_rule": MASTER_ORDER})
    better = (master.predicted_weighted_mean_s is not None and plan.predicted_weighted_mean_s is not None
              and master.predicted_weighted_mean_s < plan.predicted_weighted_mean_s)
    return (master, master_held) if better else (plan, held)


def costed(plan, by_job: dict[str, dict[str, Any]], held: list[str], cpus: float | None = None):
    """``plan`` with each job's time back predicted with its own restart cost (held: from its checkpoint; kept: its
    executors' start), the jobs sharing ``cpus`` (:func:`ft_core.fleet.recovery_order.predict_back`)."""
    from ft_core.fleet.recovery_order import predict_back, weighted_mean_back
    from spark_jobs.fleet_recovery.inputs import as_fleet_job

    backs = predict_back([as_fleet_job(by_job[r.job], kept=r.job not in held) for r in plan.jobs],
                         [r.start_s for r in plan.jobs], cpus)
    jobs = [r.model_copy(update={"predicted_back_s": None if b is None else round(b, 3)})
            for r, b in zip(plan.jobs, backs)]
    mean = weighted_mean_back(jobs)
    return plan.model_copy(update={"jobs": jobs, "predicted_weighted_mean_s": None if mean is None else round(mean, 3),
                                   "never_back": [r.job for r in jobs if r.predicted_back_s is None]})


def queue_jumpers(plan: list[tuple[str, int | None]], submitted: dict[str, float | None]) -> list[str]:
    """The jobs to hold down so that a master serving waiting applications in submission order gives returning cores
    stage by stage as ``plan`` ((job, stage) in plan order) says (module docstring). A job the plan never restarts
    (stage None) is not held down: it keeps its driver and waits.

    >>> queue_jumpers([("high", 1), ("low", 2)], {"low": 1.0, "high": 2.0})  # low, submitted first, would jump
    ['low']
    >>> queue_jumpers([("low", 1), ("high", 2)], {"low": 1.0, "high": 2.0})  # the master's order is the plan's
    []
    >>> queue_jumpers([("b", 1), ("a", 1)], {"a": 1.0, "b": 2.0})  # one stage fits both: nobody jumps anybody
    []
    >>> queue_jumpers([("a", 1), ("b", 2), ("c", 3)], {"a": None, "b": 5.0, "c": 9.0})  # a, resubmitted, queues last
    ['a', 'b', 'c']
    """
    held: list[str] = []
    for job, stage in plan:
        if stage is None:
            continue
        mine = submitted.get(job)
        earlier = [k for k, s in plan if s is not None and s < stage]
        if mine is None or any(k in held or (submitted.get(k) or 0.0) > mine for k in earlier):
            held.append(job)
    return held


def stage_needs(plan: list[tuple[str, int | None]], held: list[str], cores_of: dict[str, float],
                app_of: dict[str, str | None]) -> dict:
    """Per stage of ``plan`` ((job, stage) pairs; keys as text: XCom is JSON): ``stages``, its jobs; ``cores``, the free
    cores its held jobs need (its kept ones take their cores themselves); ``waiting``, its kept applications, each to
    hold an executor.

    >>> stage_needs([("high", 1), ("low", 2), ("lost", None)], ["low"], {"high": 1, "low": 2, "lost": 1},
    ...             {"high": "ftops-high-primary", "low": "ftops-low-primary", "lost": None})["cores"]
    {'1': 0.0, '2': 2.0}
    """
    stages: dict[str, list[str]] = {}
    cores: dict[str, float] = {}
    waiting: dict[str, list[str]] = {}
    for job, stage in plan:
        if stage is None:
            continue
        k = str(stage)
        stages.setdefault(k, []).append(job)
        cores[k] = cores.get(k, 0.0) + (cores_of[job] if job in held else 0.0)
        if job not in held and app_of[job]:
            waiting.setdefault(k, []).append(app_of[job])
    return {"stages": stages, "cores": cores, "waiting": waiting}
