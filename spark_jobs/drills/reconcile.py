"""Undoing faults from the journal: a drill's own finish, the next experiment, the safety net, ``ftops doctor
--repair`` and ``ftops halt`` all undo the same way (issue 35, items 2 and 3).

Problem: a fault must not outlive the process that injected it. The fault journal (:mod:`ft_core.store.faults`)
holds every fault with a document saying how to undo it; this module acts on those documents, knowing nothing
else of the experiment that wrote them:

- ``domain_down`` / ``partition``: the domain's capacity given back in that domain, or its links healed
  (:func:`spark_jobs.cluster.seam.give_back`);
- ``driver_killed``: the primary resubmitted from its checkpoint (:func:`resubmit_primary`);
- ``executors_paused``: every executor JVM of the application the profile paused is continued (SIGCONT;
  harmless to one that runs), and the domains the profile downed given back.

:func:`reconcile` undoes the *orphaned* faults (their holder no longer holds the job's lease: it died), or every
open fault (``force``, the halt), then makes each job it touched whole: its open drills closed as aborted when
nobody holds the job, its primary running from its checkpoint and the replica of its applied plan running; a fleet
recovery whose holder died is recorded as failed (:mod:`spark_jobs.fleet_recovery.runs`).
Every undo is idempotent and serialized per cluster and per stream (file locks), so the drill's own restore and
a reconciler racing it add capacity once.

    # repairs = reconcile(store, by="safety net (pid 42 on vm)", driver_env={"FTOPS_DATABASE_URL": url})
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ft_core.errors import FtopsError

log = logging.getLogger(__name__)
ORPHAN_GRACE_S = 120.0  # a driver younger than this may still be registering with its master
STALE_EXPERIMENT = "its holder stopped without finishing it (its lease expired); its faults were undone"


class Repair(BaseModel):
    """One fault undone (or not), as a reconciler reports it."""

    job: str
    fault_id: int
    kind: str
    target: str
    holder: str
    outcome: str
    ok: bool


@contextmanager
def locked(path: Path):
    """An exclusive lock on ``path`` (created if missing) for the block: one undo at a time per cluster or stream."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def resubmit_primary(job: str, dep, driver_env: dict[str, str]) -> bool:
    """Submit the job's primary from its checkpoint unless its driver runs (an attached job: its application, with
    its stored submit line); whether it was submitted."""
    done = submit_primary(job, dep, driver_env, wait=False)
    return bool(done and done["submitted"])


def submit_primary(job: str, dep, driver_env: dict[str, str] | None, wait: bool) -> dict | None:
    """The one rule for submitting a job's primary (the repairs, a drill, ``ftops job start``): never a second driver
    beside a live one (two drivers on one checkpoint corrupt it); a driver its master forgot (:func:`orphaned_primary`)
    is stopped and the primary submitted again from its checkpoint. Under the stream's submit lock. None when its
    driver runs; else what the submission says (``submitted``: False when its master lists it running already)."""
    from spark_jobs.attach.drill_support import is_attached
    from spark_jobs.runtime.detached_submit import submit_stream
    from spark_jobs.runtime.job_streams import primary_app_name, primary_run_argv
    from spark_jobs.runtime.launch import driver_running, stop_run

    with locked(dep.primary_output / "_submit.lock"):
        if driver_running(dep.primary_output):
            if is_attached(dep) or not orphaned_primary(dep, job):
                return None
            log.warning("%s: its primary's driver runs but its master %s no longer lists it (a master restarted without "
                        "recovery): stopping it and submitting it again from its checkpoint", job, dep.primary_master)
            stop_run(dep.primary_output)
        if is_attached(dep):
            from spark_jobs.attach.deployment import submit

            submit(job, dep, driver_env)
            return {"submitted": True}
        return submit_stream(primary_app_name(job), dep.primary_ui, [str(a) for a in primary_run_argv(dep)], wait=wait,
                             extra_env=driver_env)


def orphaned_primary(dep, job: str) -> bool:
    """Whether the job's primary driver runs, was submitted over :data:`ORPHAN_GRACE_S` ago, and is missing from
    its master's applications although the master answers: a standalone master restarted without recovery forgets
    the running applications, and their drivers never get executors again. Unknown (the master does not answer) is
    not orphaned."""
    import time

    from spark_jobs.drills.live import master_apps
    from spark_jobs.runtime.job_streams import primary_app_name
    from spark_jobs.runtime.launch import driver_running

    submitted = dep.primary_output / "_submit.json"
    try:
        if not driver_running(dep.primary_output) or time.time() - submitted.stat().st_mtime < ORPHAN_GRACE_S:
            return False  # not running, or still registering
        apps = master_apps(dep.primary_ui)
    except (FtopsError, OSError):
        return False
    return orphaned_app(primary_app_name(job), apps)


def orphaned_primaries(store) -> list[str]:
    """The registered jobs (ftops-run, not attached) whose primary is orphaned (:func:`orphaned_primary`); a job
    whose deployment or master cannot be read is not listed (unknown is not orphaned)."""
    from ft_core.input.names import is_name
    from spark_jobs.runtime.job_streams import parse_deployment

    out = []
    for name in (j["name"] for j in store.jobs()):
        if not is_name(name):
            continue
        try:
            stored = store.job(name).get("deployment")
            if not stored:
                continue
            dep = parse_deployment(stored, name)
            if getattr(dep, "kind", "") != "attached" and orphaned_primary(dep, name):
                out.append(name)
        except (FtopsError, OSError, ValueError):
            continue
    return out


def orphaned_app(app_name: str, active_apps: list[dict]) -> bool:
    """``app_name`` is in none of a master's active applications (RUNNING or WAITING both count as known).

    >>> orphaned_app("ftops-a-primary", [{"name": "ftops-a-primary", "state": "WAITING"}])
    False
    >>> orphaned_app("ftops-a-primary", [{"name": "ftops-b-primary", "state": "RUNNING"}])
    True
    """
    return not any(a.get("name") == app_name for a in active_apps)


def restart_streams(store, job: str, dep, driver_env: dict[str, str]) -> list[tuple[str, str]]:
    """The job's primary and the replica of its applied plan running, each resubmitted from its checkpoint when its
    driver died or its master forgot it; what was resubmitted, as (kind, target) pairs."""
    done = []
    if resubmit_primary(job, dep, driver_env):
        done.append(("primary", job))
    plan = store.running_replica_plan(job)
    if plan is not None and resubmit_replica(job, dep, plan, driver_env):
        done.append(("replica", f"plan #{plan['plan_id']}"))
    return done


def resubmit_replica(job: str, dep, plan: dict, driver_env: dict[str, str], wait: bool = False) -> bool:
    """Submit the replica of ``plan`` unless its application is active on the standby master (``wait``: until it runs
    with a core)."""
    from spark_jobs.runtime.detached_submit import submit_stream
    from spark_jobs.runtime.job_streams import replica_app_name, replica_run_argv

    with locked(dep.replica_output(plan["plan_id"]) / "_submit.lock"):
        argv = replica_run_argv(dep, plan["plan_id"], plan["payload"].get("tasks", []))
        done = submit_stream(replica_app_name(job, plan["plan_id"]), dep.standby_ui, [str(a) for a in argv], wait=wait,
                             extra_env=driver_env)
        return bool(done["submitted"])


def undo_fault(store, fault: dict[str, Any], by: str, driver_env: dict[str, str]) -> Repair:
    """Undo one journaled fault and close it; a failed undo is reported and the fault stays open."""
    try:
        outcome = _undo(store, fault, driver_env)
    except (FtopsError, OSError) as exc:
        log.warning("undoing fault %s (%s %s) failed: %s", fault["fault_id"], fault["kind"], fault["target"], exc)
        return _repair(fault, f"undo failed: {exc}", ok=False)
    store.close_fault(fault["fault_id"], by, outcome)
    return _repair(fault, outcome, ok=True)


def _repair(fault: dict[str, Any], outcome: str, ok: bool) -> Repair:
    return Repair(job=fault["job"], fault_id=fault["fault_id"], kind=fault["kind"], target=fault["target"],
                  holder=fault["holder"], outcome=outcome, ok=ok)


def _undo(store, fault: dict[str, Any], driver_env: dict[str, str]) -> str:
    from spark_jobs.cluster.seam import give_back

    undo = fault["undo"]
    if fault["kind"] in ("domain_down", "partition"):
        with locked(_lock_of(undo)):
            return "; ".join(give_back(undo)) or "capacity was back already"
    if fault["kind"] == "driver_killed":
        dep = _deployment(store, fault["job"])
        return "primary resubmitted from its checkpoint" if resubmit_primary(fault["job"], dep, driver_env) \
            else "primary was running"
    if fault["kind"] == "executors_paused":
        return _continue_executors(undo)
    raise FtopsError(f"fault {fault['fault_id']}: no undo for kind {fault['kind']!r}")


def _lock_of(undo: dict[str, Any]) -> Path:
    if undo.get("seam") == "standalone":
        return Path(undo["state_dir"]) / "seam.lock"
    return Path(undo["outputs"][0]) / "_faults" / "seam.lock"


def _continue_executors(undo: dict[str, Any]) -> str:
    """SIGCONT every executor JVM of the profile's application on this host, and give its domains back."""
    from spark_jobs.cluster.seam import give_back
    from spark_jobs.fault_injection import app_of_run, find_executors

    app = undo.get("app_id") or (app_of_run(Path(undo["output"])) if undo.get("output") else None)
    continued = 0
    for executor in find_executors(app) if app else []:
        try:
            os.kill(executor.pid, signal.SIGCONT)
            continued += 1
        except ProcessLookupError:
            continue
    given = [d for doc in undo.get("domains", []) for d in give_back(doc)]
    return "; ".join([f"{continued} executors of {app or 'the application'} continued", *given])


def _deployment(store, job: str):
    from spark_jobs.runtime.job_streams import parse_deployment

    return parse_deployment(store.job(job)["deployment"], job)


def undo_open_faults(store, job: str, by: str, driver_env: dict[str, str], drill_id: int | None = None) -> list[str]:
    """Undo the job's open faults (only drill ``drill_id``'s when given), oldest first; what was done."""
    faults = [f for f in store.open_faults(job)
              if drill_id is None or (f["experiment_kind"] == "drill" and f["experiment_id"] == drill_id)]
    return [f"{r.kind} {r.target}: {r.outcome}" for r in (undo_fault(store, f, by, driver_env) for f in faults)]


def reconcile(store, job: str | None = None, by: str = "reconciler", driver_env: dict[str, str] | None = None,
              force: bool = False) -> list[Repair]:
    """Undo the orphaned faults (of ``job``, or of every job; ``force``: every open fault), oldest first, then make
    each job touched whole; returns what was done."""
    env = driver_env if driver_env is not None else {}
    faults = store.open_faults(job) if force else store.orphaned_faults(job)
    repairs = [undo_fault(store, f, by, env) for f in faults]
    for name in sorted({r.job for r in repairs}):
        repairs += make_whole(store, name, by, env)
    return repairs + _dead_fleet_recoveries(store, job)


def _dead_fleet_recoveries(store, job: str | None) -> list[Repair]:
    """The fleet recoveries whose holder died, recorded as failed (after their faults were undone above)."""
    from spark_jobs.fleet_recovery.runs import STALE_RUN, abandon_dead_runs, holder_of

    return [Repair(job=", ".join(run["jobs"]), fault_id=0, kind="fleet_recovery", target=f"#{run['run_id']}",
                   holder=holder_of(run["dag_run_id"]), ok=True, outcome=f"recorded as failed: {STALE_RUN}")
            for run in abandon_dead_runs(store, job)]


def make_whole(store, job: str, by: str, driver_env: dict[str, str]) -> list[Repair]:
    """After its faults were undone: the job's open drills closed as aborted when nobody holds the job, and its
    primary and the replica of its applied plan running (each resubmitted from its checkpoint if not)."""
    done = []
    lease = store.lease(job)
    if lease is None or lease["holder"] == by:
        for drill_id in store.abandon_running_drills(job, STALE_EXPERIMENT):
            done.append(Repair(job=job, fault_id=0, kind="drill", target=f"#{drill_id}", holder="", ok=True,
                               outcome="recorded as aborted"))
    dep = _deployment(store, job)
    try:
        for kind, target in restart_streams(store, job, dep, driver_env):
            done.append(Repair(job=job, fault_id=0, kind=kind, target=target, holder="", ok=True,
                               outcome="resubmitted from its checkpoint"))
    except (FtopsError, OSError) as exc:
        done.append(Repair(job=job, fault_id=0, kind="streams", target=job, holder="", ok=False,
                           outcome=f"could not check or restart the job's streams: {exc}"))
    return done


def driver_env(db_dir=None) -> dict[str, str]:
    """The history store's URL for the drivers a command starts (they write their progress there): the one the
    command itself uses (``FTOPS_DATABASE_URL``, else the embedded server in ``db_dir``)."""
    from ft_core.store.url import database_url

    return {"FTOPS_DATABASE_URL": database_url(db_dir)}
