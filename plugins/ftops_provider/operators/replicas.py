"""Deciding when a job's replica is resubmitted with a new plan, and recording what runs.

The dynamic plan adaptation paper 000 left as future work: a replica keeps running its plan until a new
replication plan beats it by more than a threshold of output fidelity (or no replica runs yet and the plan
replicates something). The new replica is a new query (other key groups), so it gets its own checkpoint
lineage and output folder (``spark_jobs.runtime.job_streams``); the old one is stopped only after the new one runs.

Guards (issue 16): a job in ``recommend`` mode gets its plans stored and never applied; in ``approve``
mode a change waits for a person (the DAG's human-in-the-loop step, with the plan diff and the gain); a
job's replica changes at most once per ``replica_cooldown_s`` (a replica that died is replaced at once:
that is a repair, not a change). A change holds the job's lease (kind ``replica_change``) from the moment
it is proposed until it is recorded or rejected, so it never runs beside a drill or a recovery of the job;
a job whose lease someone else holds gets no change this run (the next run proposes it again). A change that
is not recorded, whatever stopped it (its replica found no standby cores, a step failed, a person rejected it), is
undone when the run's other tasks are done (:func:`undo_unapplied`): its new replica stopped, its lease released.
(A run someone marks failed by hand skips that step: its lease then lapses after ``CHANGE_LEASE_S``.) A replica
running unrecorded would be one no drill or recovery counts, and a lease left behind would refuse every
experiment on the job for half an hour.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


CHANGE_LEASE_S = 1800.0  # a change's whole path (approval aside): submit, wait until it runs, stop the old one


def replica_changes(names: list[str], threshold: float, holder: str, conn_id: str = "ftops_db") -> list[dict]:
    """The replicas to (re)submit: one entry per job whose current plan should replace the applied one and
    whose lease ``holder`` took (a job busy with another experiment is left for the next run)."""
    from ft_core.store.leases import BusyError
    from ftops_provider.hooks.history import HistoryStoreHook

    store = HistoryStoreHook(conn_id).store()
    out = []
    try:
        for change in (_change(store, name, threshold) for name in names):
            if change is None:
                continue
            try:
                store.acquire_lease(change["job"], "replica_change", holder, ttl_s=CHANGE_LEASE_S)
            except BusyError as exc:
                log.info("%s: its replica change waits for the next run", exc)
                continue
            out.append(change)
    finally:
        store.conn.close()
    return out


def release_changes(changes: list[dict], holder: str, conn_id: str = "ftops_db") -> None:
    """Release the leases of changes that are done (recorded) or will not happen (rejected)."""
    from ftops_provider.hooks.history import HistoryStoreHook

    store = HistoryStoreHook(conn_id).store()
    try:
        for c in changes:
            store.release_lease(c["job"], holder)
    finally:
        store.conn.close()


def _change(store, name: str, threshold: float) -> dict | None:
    from ft_core.input.names import is_name
    from spark_jobs.runtime.job_streams import parse_deployment, replica_app_name, replica_run_argv

    if not is_name(name):  # a row stored before names were checked: its name must not reach paths or app names
        log.warning("job %r: its name is not an identifier (ft_core.input.names); register it again under one: "
                    "its replica is not managed", name)
        return None
    job = store.job(name)
    if not job.get("deployment"):
        log.info("job %s: no deployment registered, its replica is not managed here", name)
        return None
    dep = parse_deployment(job["deployment"], name)
    if getattr(dep, "kind", "") == "attached":
        log.info("job %s is attached (ftops did not write it): its replication plans are recommendations only", name)
        return None
    if not _primary_running(dep, name):
        log.info("job %s: its primary is not running on %s: no replica is submitted", name, dep.primary_master)
        return None
    plan = store.current_plan(name, "replication")
    tasks = sorted(plan["payload"].get("tasks", [])) if plan else []
    applied = next((a for a in store.applied_plans(name) if a["role"] == "replica" and a["stopped_at"] is None), None)
    alive = applied is not None and _app_running(dep.standby_ui, replica_app_name(name, applied["plan_id"]))
    if applied and not alive:  # recorded as running but gone (stopped or killed outside Airflow): replace it
        log.info("job %s: the replica of plan #%s is recorded but not running on %s", name, applied["plan_id"],
                 dep.standby_master)
    if plan is None or not tasks or (alive and applied["plan_id"] == plan["plan_id"]):
        return None
    gain = replacement_gain(store, name, plan, applied["plan_id"] if alive else None)
    if alive and gain <= threshold:
        log.info("job %s: plan #%s gains %.4f OF over the applied #%s (threshold %.4f): the replica stays",
                 name, plan["plan_id"], gain, applied["plan_id"], threshold)
        return None
    if job["apply_mode"] == "recommend":
        log.info("job %s (recommend mode): plan #%s (gain %.4f) is stored, not applied", name, plan["plan_id"], gain)
        store.log_event(name, "plan_recommended", {"plan_id": plan["plan_id"], "gain": gain})
        return None
    if alive and _in_cooldown(applied, job["replica_cooldown_s"]):
        log.info("job %s: the replica changed less than %.0f s ago (cooldown): plan #%s waits", name,
                 job["replica_cooldown_s"], plan["plan_id"])
        return None
    log.info("job %s: replica plan #%s (OF %.4f, gain %.4f) replaces %s", name, plan["plan_id"], plan["objective"], gain,
             f"#{applied['plan_id']}" if applied else "no replica")
    return {"job": name, "plan_id": plan["plan_id"], "app_name": replica_app_name(name, plan["plan_id"]),
            "needs_approval": job["apply_mode"] == "approve", "gain": round(gain, 6), "tasks": tasks,
            "old_tasks": sorted(store.plan(applied["plan_id"])["payload"].get("tasks", [])) if applied else [],
            "run_args": [str(a) for a in replica_run_argv(dep, plan["plan_id"], tasks)], "master_ui": dep.standby_ui,
            "master_url": dep.standby_master, "old_plan_id": applied["plan_id"] if applied else None,
            "new_output": str(dep.replica_output(plan["plan_id"])),
            # nothing to stop when the old replica is gone (its folder may even be the new one's: same plan)
            "old_output": str(dep.replica_output(applied["plan_id"])) if alive else ""}


def _in_cooldown(applied: dict, cooldown_s: float) -> bool:
    from datetime import datetime, timezone

    return (datetime.now(timezone.utc) - applied["started_at"]).total_seconds() < cooldown_s


def approval_body(changes: list[dict]) -> str:
    """The request a person answers: per job, the plan diff and the predicted gain (Markdown)."""
    lines = ["ftops would resubmit these replicas with new replication plans:", ""]
    for c in changes:
        added = sorted(set(c["tasks"]) - set(c["old_tasks"]))
        removed = sorted(set(c["old_tasks"]) - set(c["tasks"]))
        lines += [f"- **{c['job']}**: plan #{c['plan_id']} replaces "
                  f"{'#' + str(c['old_plan_id']) if c['old_plan_id'] is not None else 'no replica'}; predicted output "
                  f"fidelity +{c['gain']:.4f}; tasks added {', '.join(added) or 'none'}, removed {', '.join(removed) or 'none'}"]
    return "\n".join(lines)


def approved_changes(changes: list[dict], decision: dict | None, holder: str) -> list[dict]:
    """The changes to apply: every one that needs no approval, and those that do when a person approved
    (the leases of rejected ones are released)."""
    approved = bool(decision) and "Approve" in (decision.get("chosen_options") or [])
    release_changes([c for c in changes if c["needs_approval"] and not approved], holder)
    return [c for c in changes if not c["needs_approval"] or approved]


def replacement_gain(store, name: str, plan: dict, applied_plan_id: int | None) -> float:
    """The OF ``plan`` gains over the applied plan, both evaluated on the job's latest topology.

    Stored objectives were computed on the rates of their own day: comparing them would resubmit an
    identical replica whenever the measured rates drift. With no applied plan the gain is the plan's OF.
    """
    from ft_core.replication.plan import fidelity_under
    from ft_core.topology.document import parse_topology
    from ft_core.topology.task_graph import build_task_graph

    graph = build_task_graph(parse_topology(store.latest_topology(name)))
    applied = store.plan(applied_plan_id)["payload"].get("tasks", []) if applied_plan_id is not None else []
    return fidelity_under(graph, plan["payload"].get("tasks", [])) - fidelity_under(graph, applied)


def _primary_running(dep, name: str) -> bool:
    """A replica only makes sense beside a running primary (it would hold standby cores for nothing)."""
    from spark_jobs.runtime.job_streams import primary_app_name

    return _app_running(dep.primary_ui, primary_app_name(name))


def _app_running(master_ui: str, app_name: str) -> bool:
    from spark_jobs.drills.live import master_apps

    return any(a["name"] == app_name and a.get("state") == "RUNNING" for a in master_apps(master_ui))


def record_applied(changes: list[dict], holder: str, conn_id: str = "ftops_db") -> list[dict]:
    """Record each new replica as the job's applied plan (and the replaced one as stopped); the change is
    done, its lease released."""
    from ftops_provider.hooks.history import HistoryStoreHook
    from spark_jobs.runtime.detached_submit import active_apps

    store = HistoryStoreHook(conn_id).store()
    out = []
    try:
        for c in changes:
            running = active_apps(c["master_ui"], c["app_name"])
            app_id = running[0]["id"] if running else None
            if c["old_plan_id"] is not None:
                store.stop_applied_plan(c["job"], "replica", c["old_plan_id"])
            store.record_applied_plan(c["plan_id"], c["job"], "replica", app_id, c["master_url"])
            store.release_lease(c["job"], holder)
            out.append({"job": c["job"], "plan_id": c["plan_id"], "app_id": app_id})
    finally:
        store.conn.close()
    return out


def undo_unapplied(proposed: list[dict], recorded: list[dict], holder: str, conn_id: str = "ftops_db") -> list[dict]:
    """At the run's end, whatever happened before: every proposed change not recorded as applied has its new
    replica stopped (when this run submitted one), the record of the replica it replaced closed when that one was
    already gone (the store says no replica runs, as none does), and its lease released. Returns the changes
    undone."""
    from pathlib import Path

    from ftops_provider.hooks.history import HistoryStoreHook
    from spark_jobs.runtime.launch import stop_run

    done = {(r["job"], r["plan_id"]) for r in recorded}
    undone = [c for c in proposed if (c["job"], c["plan_id"]) not in done]
    store = HistoryStoreHook(conn_id).store()
    try:
        for c in undone:
            new = Path(c["new_output"])
            stopped = (new / "_submit.json").exists() and stop_run(new, timeout_s=30)
            if c["old_plan_id"] is not None and not c["old_output"]:  # the replica it was to replace is gone
                store.stop_applied_plan(c["job"], "replica", c["old_plan_id"])
            store.release_lease(c["job"], holder)
            log.warning("job %s: the change to plan #%s was not applied%s; its lease is released (the next run "
                        "proposes it again)", c["job"], c["plan_id"], ": its new replica is stopped" if stopped else "")
    finally:
        store.conn.close()
    return undone
