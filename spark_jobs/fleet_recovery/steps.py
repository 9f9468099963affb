"""The steps of a fleet recovery, each under the jobs' leases and in the fault journal (issue 33, item 3; issue 35).

1. :func:`open_run`: take each lost job's lease (kind ``recovery``), read the planner's inputs
   (:mod:`spark_jobs.fleet_recovery.inputs`), plan and choose the jobs to hold down
   (:mod:`spark_jobs.fleet_recovery.holding`), record the run, then hold those jobs down: each one's driver stopped,
   journaled first as ``driver_killed`` (undo: the primary resubmitted from its checkpoint). The others keep their
   drivers and get executors as soon as their stage's cores return.
2. :func:`restart_stage`: the stage's held jobs resubmitted from their checkpoints (each fault closed with what
   happened), then every job of the stage waited for until it holds executors; each restart recorded with its time
   back as predicted then (the actual start, the job's own restart cost);
3. :func:`finish`: each job's time back recorded (:mod:`spark_jobs.fleet_recovery.back`); a job still held down (a
   stage that never came, a failed task) resubmitted now; the leases released; the run closed.

Every step renews every lease of the run (:func:`renew_leases`; the DAG's waits do too, from the triggerer). If the
run dies, its leases lapse within :data:`~spark_jobs.fleet_recovery.runs.LEASE_TTL_S`, its faults are orphaned, and
the safety net (``ftops_safety_net``) resubmits the jobs it held down and records the run as failed
(:mod:`spark_jobs.fleet_recovery.runs`): no job stays down because its recovery died. A DAG run opens
one fleet recovery: a retried planning task gets the recorded one back, as recorded.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ft_core.errors import InputError
from spark_jobs.fleet_recovery.runs import LEASE_TTL_S, holder_of

log = logging.getLogger(__name__)


def open_run(store, *, named: list[str], failed_at: float, arrivals: list[dict[str, float]], replacement_s: float,
             policy: str, restart_s: float, headroom: float, dag_run_id: str,
             lease_ttl_s: float = LEASE_TTL_S) -> dict[str, Any] | None:
    """Plan and open the run; None when no job is lost. Returns the run's summary (:func:`summary`). A DAG run's
    retried task gets its recorded run back (refused once that run has finished: start a new DAG run). The jobs'
    leases last ``lease_ttl_s`` from each renewal: a dead run's jobs are given back that long after it stopped."""
    from spark_jobs.cli.job import registered_deployment
    from spark_jobs.fleet_recovery.inputs import lost_jobs, primary_master_ui

    existing = store.fleet_recovery_of(dag_run_id)
    if existing is not None:
        return _resumed(store, existing, dag_run_id)
    holder = holder_of(dag_run_id)
    jobs = lost_jobs(store, named, failed_at)
    if not jobs:
        return None
    deps = {job: registered_deployment(store, job) for job in jobs}
    uis = {job: primary_master_ui(dep, job) for job, dep in deps.items()}
    if len(set(uis.values())) > 1:
        raise InputError("the lost jobs run on different masters (" + ", ".join(f"{j}: {u}" for j, u in uis.items())
                         + "): recover each master's jobs in a run of their own (jobs=...)", field="jobs")
    taken = []
    try:
        for job in jobs:
            store.acquire_lease(job, "recovery", holder, ttl_s=lease_ttl_s)
            taken.append(job)
        run_id, held = _plan_and_record(store, jobs, deps, next(iter(uis.values())), failed_at, arrivals,
                                        replacement_s, policy, restart_s, headroom, dag_run_id, lease_ttl_s)
    except Exception:  # nothing was held down yet: give the jobs back to everyone else
        for job in taken:
            store.release_lease(job, holder)
        raise
    for job in held:
        hold_down(store, job, deps[job], holder, run_id, lease_ttl_s)
    return summary(store, run_id)


def _plan_and_record(store, jobs, deps, ui, failed_at, arrivals, replacement_s, policy, restart_s, headroom,
                     dag_run_id, lease_ttl_s) -> tuple[int, list[str]]:
    from ft_core.fleet.recovery_order import FleetCapacity
    from spark_jobs.fleet_recovery.holding import choose_plan
    from spark_jobs.fleet_recovery.inputs import capacity, fleet_job, submitted_at

    submitted = submitted_at(ui, jobs, deps)
    planned = [fleet_job(store, job, deps[job], failed_at, restart_s=restart_s, headroom=headroom,
                         started_ms=submitted[job]) for job in jobs]
    cpus = shared_cpus(deps, demand=sum(p["cores"] for p in planned))
    cap = FleetCapacity(**capacity(ui, arrivals, replacement_s, failed_at), cpus=cpus)
    plan, held = choose_plan(planned, cap, policy, submitted)
    by_job = {p["job"]: {**p, "held": p["job"] in held} for p in planned}
    rows = [{"job": r.job, "priority": r.priority, "stage": r.stage, "planned_start_s": r.start_s,
             "planned_back_s": r.predicted_back_s, "inputs": by_job[r.job]} for r in plan.jobs]
    run_id = store.open_fleet_recovery(dag_run_id, policy, failed_at, {**plan.model_dump(), "capacity": cap.model_dump(),
                                                                       "master_ui": ui, "held": held,
                                                                       "lease_ttl_s": lease_ttl_s}, rows)
    return run_id, held


def shared_cpus(deps: dict, demand: float) -> float | None:
    """The CPUs the lost jobs' executors (``demand`` cores) will share as their capacity returns, measured now on
    their cluster (one master: one cluster); None where each core is a CPU of its own."""
    from spark_jobs.cluster.seam import cluster_of

    cpus = cluster_of(next(iter(deps.values()))).shared_cpus(demand)
    if cpus is not None:
        log.info("the lost jobs' %g cores will share %.2f CPUs as their capacity returns (measured now, beside "
                 "the work running there)", demand, cpus)
    return cpus


def summary(store, run_id: int) -> dict[str, Any]:
    """What the DAG's tasks need of a run, from the store: ``run_id``, ``master_ui``, ``failed_at``, ``held``,
    ``order_rule``, ``predicted_weighted_mean_s``, ``lease_ttl_s``, ``shared_cpus`` and each stage's needs
    (:func:`spark_jobs.fleet_recovery.holding.stage_needs`)."""
    from spark_jobs.cli.job import registered_deployment
    from spark_jobs.fleet_recovery.holding import stage_needs
    from spark_jobs.fleet_recovery.inputs import planned_cpus, primary_app

    run = store.fleet_recovery(run_id)
    plan, rows = run["plan"], run["jobs"]
    apps = {r["job"]: primary_app(registered_deployment(store, r["job"]), r["job"]) for r in rows}
    needs = stage_needs([(r["job"], r["stage"]) for r in rows], plan["held"],
                        {r["job"]: r["inputs"]["cores"] for r in rows}, apps)
    return {"run_id": run_id, "master_ui": plan["master_ui"], "failed_at": run["failed_at"].timestamp(),
            "held": plan["held"], "order_rule": plan["order_rule"],
            "predicted_weighted_mean_s": plan["predicted_weighted_mean_s"], "lease_ttl_s": lease_ttl(plan),
            "shared_cpus": planned_cpus(plan), **needs}


def _resumed(store, run_id: int, dag_run_id: str) -> dict[str, Any]:
    run = store.fleet_recovery(run_id)
    if run["status"] != "running":
        raise InputError(f"this DAG run's fleet recovery #{run_id} has finished ({run['status']}: {run['outcome']}); "
                         "to recover again, trigger a new run", field="dag_run")
    renew_leases(store, run_id, holder_of(dag_run_id))
    log.info("fleet recovery #%s of this DAG run is under way: resuming it as recorded", run_id)
    return summary(store, run_id)


def lease_ttl(plan: dict[str, Any]) -> float:
    """The run's lease TTL, as recorded when it opened (runs recorded before it was a choice: the default)."""
    return float(plan.get("lease_ttl_s", LEASE_TTL_S))


def renew_leases(store, run_id: int, holder: str) -> None:
    """Keep the lease of every job of the run for its TTL (taken again if it lapsed and nobody took it)."""
    run = store.fleet_recovery(run_id)
    for row in run["jobs"]:
        store.acquire_lease(row["job"], "recovery", holder, ttl_s=lease_ttl(run["plan"]))


def hold_down(store, job: str, dep, holder: str, run_id: int, lease_ttl_s: float) -> None:
    """Journal, then stop, the job's driver. A retried task finds its fault: applied, nothing to do; journaled but
    not applied (the task died between the two), the driver is stopped now."""
    from spark_jobs.drills.engine import kill_primary_driver
    from spark_jobs.runtime.job_streams import primary_app_name

    fault = open_fault(store, job, holder)
    if fault is not None and fault["applied_at"] is not None:
        return
    fault_id = fault["fault_id"] if fault is not None else store.open_fault(
        job, "fleet_recovery", run_id, holder, "driver_killed", primary_app_name(job),
        {"seam": "streams", "role": "primary"}, undo_within_s=lease_ttl_s)
    stopped = kill_primary_driver(dep)
    store.fault_applied(fault_id)
    log.info("%s: held down (%s) until its stage", job, "driver stopped" if stopped else "its driver was not running")


def open_fault(store, job: str, holder: str) -> dict[str, Any] | None:
    return next((f for f in store.open_faults(job) if f["holder"] == holder and f["kind"] == "driver_killed"), None)


def restart_stage(store, run_id: int, jobs: list[str], dag_run_id: str, driver_env: dict[str, str]) -> list[dict]:
    """Resubmit the stage's held jobs from their checkpoints (each fault closed with what happened), record every
    job's restart with its time back as predicted now, then wait until each holds executors."""
    from spark_jobs.cli.job import registered_deployment
    from spark_jobs.drills.reconcile import submit_primary

    holder = holder_of(dag_run_id)
    renew_leases(store, run_id, holder)
    run = store.fleet_recovery(run_id)
    failed_at = run["failed_at"].timestamp()
    starts = {r["job"]: r["planned_start_s"] if r["restarted_at"] is None else r["restarted_at"].timestamp() - failed_at
              for r in run["jobs"]}
    done = []
    for job in jobs:
        started = time.time()
        submitted = submit_primary(job, registered_deployment(store, job), driver_env, wait=False)
        fault = open_fault(store, job, holder)
        if fault is not None:
            store.close_fault(fault["fault_id"], holder, "primary resubmitted from its checkpoint in its stage"
                              if submitted and submitted.get("submitted") else "its primary was running again")
        starts[job] = since_failure = started - failed_at
        predicted = predicted_now(run, starts)[job]
        store.fleet_restarted(run_id, job, started, None if predicted is None else round(predicted, 2))
        done.append({"job": job, "resubmitted": bool(submitted and submitted.get("submitted")),
                     "predicted_back_s": predicted})
        log.info("%s: restarted %.1f s after the failure (%s); predicted back at %s s", job, since_failure,
                 "resubmitted from its checkpoint" if done[-1]["resubmitted"] else "its waiting application",
                 "never" if predicted is None else f"{predicted:.1f}")
    for job in jobs:
        _await_executors(job, registered_deployment(store, job), lambda: renew_leases(store, run_id, holder),
                         lease_ttl(run["plan"]) / 3)
    return done


def predicted_now(run: dict[str, Any], starts: dict[str, float | None]) -> dict[str, float | None]:
    """Each job's time back predicted from ``starts`` (seconds after the failure: the restarts so far as they happened,
    the rest as planned), every job with its own restart cost, sharing the CPUs measured when the run was planned."""
    from ft_core.fleet.recovery_order import predict_back
    from spark_jobs.fleet_recovery.inputs import as_fleet_job, planned_cpus

    rows = run["jobs"]
    backs = predict_back([as_fleet_job(r["inputs"], kept=not r["inputs"].get("held", True)) for r in rows],
                         [starts.get(r["job"]) for r in rows], planned_cpus(run["plan"]))
    return {r["job"]: b for r, b in zip(rows, backs)}


def _await_executors(job: str, dep, renew, renew_every_s: float, timeout_s: float = 120.0) -> None:
    """Until the job's primary holds executors (its cores taken), so the next stage's wait counts only the cores
    left, renewing the run's leases (``renew``) every ``renew_every_s`` meanwhile; a primary still without one after
    ``timeout_s`` is logged, not fatal (the wait for it to be back says)."""
    from ft_core.errors import ExternalError
    from spark_jobs.fleet_recovery.inputs import primary_executors
    from spark_jobs.runtime.waiting import wait_for

    renewed = [time.time()]

    def holds() -> bool | None:
        if time.time() - renewed[0] >= renew_every_s:
            renew()
            renewed[0] = time.time()
        return (primary_executors(dep, job) or 0) > 0 or None

    try:
        wait_for(holds, timeout_s=timeout_s, interval_s=1.0, what=f"{job}'s primary to hold executors")
    except ExternalError as exc:
        log.warning("%s", exc)


def finish(store, run_id: int, dag_run_id: str, driver_env: dict[str, str]) -> dict[str, Any]:
    """Record each job's time back, resubmit the jobs still held down, release the leases, close the run."""
    from spark_jobs.drills.reconcile import undo_fault
    from spark_jobs.fleet_recovery.back import back_times

    holder = holder_of(dag_run_id)
    back, missing = back_times(store, run_id)
    for job, b in back.items():
        store.fleet_back(run_id, job, b["back_at"], b["restart_delay_s"])
    problems, undone = [], set()
    jobs = store.fleet_recovery(run_id)["jobs"]
    for row in jobs:
        fault = open_fault(store, row["job"], holder)
        if fault is not None:  # its stage never came: it is not left down
            repair = undo_fault(store, fault, holder, driver_env)
            problems.append(f"{row['job']} was never restarted in its stage; at the end: {repair.outcome}")
            undone.add(row["job"])
        elif row["stage"] is None:
            problems.append(f"{row['job']} had no stage (no returning capacity fits it): it kept its driver, waiting")
    problems += [m for m in missing if m.split(":", 1)[0] not in undone]
    status = "failed" if problems else "done"
    outcome = "; ".join(problems) or "every job back"
    store.finish_fleet_recovery(run_id, status, outcome)  # closed while still held: no reconciler takes it for dead
    for row in jobs:
        store.release_lease(row["job"], holder)
    return {"run_id": run_id, "status": status, "outcome": outcome,
            "jobs": [{k: r[k] for k in ("job", "priority", "stage", "planned_back_s", "predicted_back_s",
                                         "measured_back_s")} for r in store.fleet_recovery(run_id)["jobs"]]}
