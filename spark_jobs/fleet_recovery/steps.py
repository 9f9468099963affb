"""The steps of a fleet recovery, each under the jobs' leases and in the fault journal (issue 33, item 3; issue 35).

1. :func:`open_run`: take each lost job's lease (kind ``recovery``), read the planner's inputs
   (:mod:`spark_jobs.fleet_recovery.inputs`), plan (:func:`ft_core.fleet.recovery_order.plan_fleet_recovery`),
   record the run, then hold down the jobs that would take returning cores out of the plan's order: a lost job's
   application waits for cores, and a standalone master serves waiting applications in submission order, so a job
   is held down (its driver stopped, journaled first as ``driver_killed``; undo: the primary resubmitted from its
   checkpoint) when a job planned before it was submitted after it, or is itself held down (resubmitted, it queues
   behind every waiting one) (:func:`queue_jumpers`). The others keep their drivers: when their stage's cores
   return they get executors at once, with no restart from the checkpoint to pay.
2. :func:`restart_stage`: the stage's jobs resubmitted from their checkpoints, each fault closed, each restart
   recorded with its time back as predicted then (the actual start; the plan's restart delay);
3. :func:`back_times` (the wait polls it) and :func:`finish`: when each job was back (every stream it ran before
   the failure ran two micro-batches within its caught-up band of its input: twice its steady lag plus 5 s, at most
   ``bound_s``), recorded; a job never restarted (a stage that never came, a failed task) is resubmitted now; the
   leases released.

If the run dies, its leases lapse (``lease_ttl_s``, renewed by every step), its faults are orphaned, and the
safety net (``ftops_safety_net``) resubmits the jobs it held down: no job stays down because its recovery died.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ft_core.errors import InputError

log = logging.getLogger(__name__)

BOUND_S = 60.0  # a job counts as back within this many seconds of its input at most (the drills' steady bound)


def holder_of(dag_run_id: str) -> str:
    return f"dag run ftops_fleet_recovery/{dag_run_id}"


def open_run(store, *, named: list[str], failed_at: float, arrivals: list[dict[str, float]], replacement_s: float,
             policy: str, restart_s: float, headroom: float, lease_ttl_s: float, dag_run_id: str) -> dict[str, Any] | None:
    """Plan and open the run (idempotent per DAG run); None when no job is lost. Returns the run's summary: ``run_id``,
    ``master_ui``, ``failed_at``, ``held`` (the jobs held down) and each stage's needs (:func:`stage_needs`)."""
    from ft_core.fleet.recovery_order import FleetCapacity
    from spark_jobs.cli.job import registered_deployment
    from spark_jobs.fleet_recovery.inputs import capacity, fleet_job, lost_jobs, primary_app, primary_master_ui

    holder = holder_of(dag_run_id)
    jobs = lost_jobs(store, named)
    if not jobs:
        return None
    deps = {job: registered_deployment(store, job) for job in jobs}
    uis = {job: primary_master_ui(dep, job) for job, dep in deps.items()}
    if len(set(uis.values())) > 1:
        raise InputError("the lost jobs run on different masters (" + ", ".join(f"{j}: {u}" for j, u in uis.items())
                         + "): recover each master's jobs in a run of their own (jobs=...)", field="jobs")
    for job in jobs:
        store.acquire_lease(job, "recovery", holder, ttl_s=lease_ttl_s)
    planned = [fleet_job(store, job, deps[job], failed_at, restart_s=restart_s, headroom=headroom) for job in jobs]
    ui = next(iter(uis.values()))
    cap = FleetCapacity(**capacity(ui, arrivals, replacement_s))
    plan, held = choose_plan(planned, cap, policy, submitted_at(ui, jobs, deps))
    by_job = {p["job"]: {**p, "held": p["job"] in held} for p in planned}
    rows = [{"job": r.job, "priority": r.priority, "stage": r.stage, "planned_start_s": r.start_s,
             "planned_back_s": r.predicted_back_s, "inputs": by_job[r.job]} for r in plan.jobs]
    run_id = store.open_fleet_recovery(dag_run_id, policy, failed_at, {**plan.model_dump(), "capacity": cap.model_dump(),
                                                                       "master_ui": ui, "held": held}, rows)
    for job in held:
        _hold_down(store, job, deps[job], holder, run_id, lease_ttl_s)
    return {"run_id": run_id, "master_ui": ui, "failed_at": failed_at, "held": held, "order_rule": plan.order_rule,
            "predicted_weighted_mean_s": plan.predicted_weighted_mean_s,
            **stage_needs(plan.jobs, held, {j: p["cores"] for j, p in by_job.items()},
                          {j: primary_app(deps[j], j) for j in jobs})}


def choose_plan(planned: list[dict[str, Any]], capacity, policy: str, submitted: dict[str, float | None]):
    """The plan and the jobs it holds down. Holding a job down costs it a restart from its checkpoint (``restart_s``)
    where waiting costs only its executors' start (``resume_s``), so every plan is predicted with each job's own cost
    (held or kept, :func:`queue_jumpers`), and ``staged`` also weighs the master's own order (submission order,
    nothing held but the jobs whose driver died) and keeps the lower predicted priority-weighted mean. The jobs are
    given to the planner in submission order, so ``fifo`` is the master's order."""
    from ft_core.fleet.recovery_order import plan_fleet_recovery
    from spark_jobs.fleet_recovery.inputs import as_fleet_job

    by_job = {p["job"]: p for p in planned}
    order = sorted(by_job, key=lambda j: (submitted.get(j) is None, submitted.get(j) or 0.0, j))
    plan = plan_fleet_recovery([as_fleet_job(by_job[j]) for j in order], capacity, policy=policy)
    held = queue_jumpers([r.job for r in plan.jobs], submitted)
    plan = _costed(plan, by_job, held)
    if policy != "staged" or not set(held) - {j for j in order if submitted.get(j) is None}:
        return plan, held
    master = plan_fleet_recovery([as_fleet_job(by_job[j]) for j in order], capacity, policy="fifo")
    kept_order = queue_jumpers([r.job for r in master.jobs], submitted)
    master = _costed(master, by_job, kept_order).model_copy(update={"order_rule": "the master's own order (holding "
                                                                  "jobs down would cost more restarts than it saves)"})
    better = (master.predicted_weighted_mean_s is not None and plan.predicted_weighted_mean_s is not None
              and master.predicted_weighted_mean_s < plan.predicted_weighted_mean_s)
    return (master, kept_order) if better else (plan, held)


def _costed(plan, by_job: dict[str, dict[str, Any]], held: list[str]):
    """``plan`` with each job's time back predicted with its own restart cost (held: from its checkpoint; kept: its
    executors' start)."""
    from ft_core.fleet.recovery_order import predicted_back_s, weighted_mean_back
    from spark_jobs.fleet_recovery.inputs import as_fleet_job

    jobs = []
    for r in plan.jobs:
        back = None if r.start_s is None else predicted_back_s(as_fleet_job(by_job[r.job], kept=r.job not in held),
                                                               r.start_s)
        jobs.append(r.model_copy(update={"predicted_back_s": None if back is None else round(back, 3)}))
    mean = weighted_mean_back(jobs)
    return plan.model_copy(update={"jobs": jobs, "predicted_weighted_mean_s": None if mean is None else round(mean, 3),
                                   "never_back": [r.job for r in jobs if r.predicted_back_s is None]})


def stage_needs(restarts, held: list[str], cores_of: dict[str, float], app_of: dict[str, str | None]) -> dict:
    """Per stage (keys as text: XCom is JSON): ``stages``, its jobs; ``cores``, the free cores its held jobs need (its
    kept ones take their cores themselves); ``waiting``, its kept applications, each to hold an executor."""
    stages: dict[str, list[str]] = {}
    cores: dict[str, float] = {}
    waiting: dict[str, list[str]] = {}
    for r in restarts:
        if r.stage is None:
            continue
        k = str(r.stage)
        stages.setdefault(k, []).append(r.job)
        cores[k] = cores.get(k, 0.0) + (cores_of[r.job] if r.job in held else 0.0)
        if r.job not in held and app_of[r.job]:
            waiting.setdefault(k, []).append(app_of[r.job])
    return {"stages": stages, "cores": cores, "waiting": waiting}


def submitted_at(master_ui: str, jobs: list[str], deps: dict) -> dict[str, float | None]:
    """When each job's waiting application was submitted (the master's ``starttime``, ms); None: it has none (its
    driver died)."""
    from spark_jobs.drills.live import master_apps
    from spark_jobs.fleet_recovery.inputs import primary_app

    apps = master_apps(master_ui)
    out: dict[str, float | None] = {}
    for job in jobs:
        key = primary_app(deps[job], job)
        found = [a.get("starttime") for a in apps if key in (a.get("id"), a.get("name"))] if key else []
        out[job] = float(found[0]) if found and found[0] is not None else None
    return out


def queue_jumpers(plan_order: list[str], submitted: dict[str, float | None]) -> list[str]:
    """The jobs to hold down so that a standalone master, serving waiting applications in submission order, gives
    returning cores in ``plan_order``: a job without a waiting application (it must be resubmitted anyway), and a job
    that a job planned before it would queue behind (submitted after it, or itself resubmitted). O(J^2) for J jobs.

    >>> queue_jumpers(["high", "low"], {"low": 1.0, "high": 2.0})  # low, submitted first, would take high's core
    ['low']
    >>> queue_jumpers(["low", "high"], {"low": 1.0, "high": 2.0})  # the master's order is the plan's
    []
    >>> queue_jumpers(["a", "b", "c"], {"a": None, "b": 5.0, "c": 9.0})  # a resubmitted queues behind b and c
    ['a', 'b', 'c']
    """
    held: list[str] = []
    for i, job in enumerate(plan_order):
        mine = submitted.get(job)
        if mine is None or any(k in held or (submitted.get(k) or 0.0) > mine for k in plan_order[:i]):
            held.append(job)
    return held


def _hold_down(store, job: str, dep, holder: str, run_id: int, ttl_s: float) -> None:
    """Journal, then stop, the job's driver (a retried task finds its fault open and does not journal it twice)."""
    from spark_jobs.drills.engine import kill_primary_driver
    from spark_jobs.runtime.job_streams import primary_app_name

    if _open_fault(store, job, holder) is not None:
        return
    fault = store.open_fault(job, "recovery", run_id, holder, "driver_killed", primary_app_name(job),
                             {"seam": "streams", "role": "primary"}, undo_within_s=ttl_s)
    stopped = kill_primary_driver(dep)
    store.fault_applied(fault)
    log.info("%s: held down (%s) until its stage", job, "driver stopped" if stopped else "its driver was not running")


def _open_fault(store, job: str, holder: str) -> dict[str, Any] | None:
    return next((f for f in store.open_faults(job) if f["holder"] == holder and f["kind"] == "driver_killed"), None)


def restart_stage(store, run_id: int, jobs: list[str], dag_run_id: str, lease_ttl_s: float,
                  driver_env: dict[str, str]) -> list[dict[str, Any]]:
    """Resubmit the stage's jobs from their checkpoints (each fault closed) and record each restart with its time
    back as predicted now."""
    from ft_core.fleet.recovery_order import predicted_back_s
    from spark_jobs.cli.job import registered_deployment
    from spark_jobs.drills.reconcile import submit_primary
    from spark_jobs.fleet_recovery.inputs import as_fleet_job

    holder = holder_of(dag_run_id)
    run = store.fleet_recovery(run_id)
    rows = {r["job"]: r for r in run["jobs"]}
    done = []
    for job in jobs:
        store.acquire_lease(job, "recovery", holder, ttl_s=lease_ttl_s)
        started = time.time()
        submitted = submit_primary(job, registered_deployment(store, job), driver_env, wait=False)
        fault = _open_fault(store, job, holder)
        if fault is not None:
            store.close_fault(fault["fault_id"], holder, "primary resubmitted from its checkpoint in its stage")
        inputs = rows[job]["inputs"]
        predicted = predicted_back_s(as_fleet_job(inputs, kept=not inputs.get("held", True)),
                                     started - run["failed_at"].timestamp())
        store.fleet_restarted(run_id, job, started, None if predicted is None else round(predicted, 2))
        done.append({"job": job, "submitted": bool(submitted and submitted.get("submitted")),
                     "predicted_back_s": predicted})
        _await_executors(job, registered_deployment(store, job))
        log.info("%s: restarted %.1f s after the failure; predicted back at %s s", job,
                 started - run["failed_at"].timestamp(), "never" if predicted is None else f"{predicted:.1f}")
    return done


def _await_executors(job: str, dep, timeout_s: float = 120.0) -> None:
    """Until the job's primary holds executors (its cores taken), so the next stage's wait counts only the cores
    left; a primary still without one after ``timeout_s`` is logged, not fatal (the wait for it to be back says)."""
    from ft_core.errors import ExternalError
    from spark_jobs.fleet_recovery.inputs import primary_executors
    from spark_jobs.runtime.waiting import wait_for

    try:
        wait_for(lambda: (primary_executors(dep, job) or 0) > 0 or None, timeout_s=timeout_s, interval_s=1.0,
                 what=f"{job}'s primary to hold executors")
    except ExternalError as exc:
        log.warning("%s", exc)


def back_times(store, run_id: int, bound_s: float = BOUND_S) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Each restarted job that is back: ``back_at`` and ``restart_delay_s``; and what is missing for the others."""
    from spark_jobs.attach.drill_support import caught_up_band

    back, missing = {}, []
    for row in store.fleet_recovery(run_id)["jobs"]:
        if row["restarted_at"] is None:
            missing.append(f"{row['job']}: not restarted yet")
            continue
        sources = row["inputs"].get("sources", {})
        band = caught_up_band(sources.get("steady_lag_s") or 0.0, bound_s)
        found = _back(store, row["job"], row["restarted_at"].timestamp(), sources.get("streams", []), band)
        if isinstance(found, str):
            missing.append(f"{row['job']}: {found}")
        else:
            back[row["job"]] = found
    return back, missing


def _back(store, job: str, since: float, streams: list[str], band_s: float) -> dict[str, float] | str:
    """When the last of ``streams`` ran the first of two micro-batches within ``band_s`` of its input since
    ``since`` (a batch without an event-time lag counts as within), or what is missing."""
    batches = store.job_batches(job, since)
    firsts, ends = [], []
    for stream in streams or list(batches):
        rows = batches.get(stream, [])
        good = [b["batch_end"] for b in rows if b["lag_s"] is None or b["lag_s"] <= band_s]
        if len(good) < 2:
            return f"{stream}: {len(good)} of 2 micro-batches within {band_s:.0f} s of its input since its restart"
        firsts.append(rows[0]["batch_end"])
        ends.append(good[0])
    if not ends:
        return "no stream of the job is known"
    return {"back_at": max(ends), "restart_delay_s": round(min(firsts) - since, 2)}


def finish(store, run_id: int, dag_run_id: str, driver_env: dict[str, str]) -> dict[str, Any]:
    """Record each job's time back, resubmit the jobs still held down, release the leases, close the run."""
    from spark_jobs.drills.reconcile import undo_fault

    holder = holder_of(dag_run_id)
    back, missing = back_times(store, run_id)
    for job, b in back.items():
        store.fleet_back(run_id, job, b["back_at"], b["restart_delay_s"])
    run = store.fleet_recovery(run_id)
    problems = []
    for row in run["jobs"]:
        fault = _open_fault(store, row["job"], holder)
        if fault is not None:  # its stage never came: it is not left down
            repair = undo_fault(store, fault, holder, driver_env)
            problems.append(f"{row['job']} was never restarted in its stage; at the end: {repair.outcome}")
        store.release_lease(row["job"], holder)
    problems += [m for m in missing if not any(m.startswith(f"{j}:") for j in back)]
    status = "failed" if problems else "done"
    outcome = "; ".join(problems) or "every job back"
    store.finish_fleet_recovery(run_id, status, outcome)
    return {"run_id": run_id, "status": status, "outcome": outcome,
            "jobs": [{k: r[k] for k in ("job", "priority", "stage", "planned_back_s", "predicted_back_s",
                                         "measured_back_s")} for r in store.fleet_recovery(run_id)["jobs"]]}
