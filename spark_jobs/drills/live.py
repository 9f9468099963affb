"""The steps of a chaos drill on a job that is already running, as separate functions (the Airflow drill DAG).

Problem: ``ftops drill run`` (:mod:`.drill`) builds a private cluster and drives one process from start to
end; a scheduled drill instead hits a registered job where it runs (its deployment, :mod:`.job_streams`)
and each step is an Airflow task, the waits deferred to the triggerer in between. The steps:

1. :func:`preflight`: the primary and the current replica run on their masters, the failure domain has
   live workers, the plan is known; nothing is touched when a check fails;
2. :func:`inject`: what the primary had delivered, then SIGKILL of every worker of the domain with its
   executors (and optionally the primary driver); recorded with the wall time. On a cluster ftops did not
   start (no cluster state, a failure-domain map instead) the primary's own driver kills its executors on
   the domain's hosts and keeps them off until replacement capacity comes
   (:mod:`spark_jobs.runtime.executor_faults`);
3. (deferred) tentative outputs arrive in the replica's sink; :func:`add_replacement` after the chosen
   delay (a new worker, as a cloud replaces a lost node); (deferred) the primary has executors again, or
   :func:`restart_primary` when its driver was killed; (deferred) the primary has caught up;
4. :func:`measure`: the primary's output against the failure-free reference over the input so far (the
   pipeline's batch reference job, run locally), the replica's tentative accuracy per failure window
   (the pipeline's accuracy function), the times.

Times are seconds from the kill, taken from file modification times and the jobs' own progress records.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from pydantic import BaseModel

from ft_core.errors import ExternalError, InputError
from spark_jobs.runtime.job_streams import JobDeployment, primary_app_name, replica_app_name


class DrillContext(BaseModel):
    """What the steps pass on (an XCom between Airflow tasks)."""

    job: str
    plan_id: int | None
    plan_tasks: list[str]
    predicted_output_fidelity: float
    predicted_accuracy: float | None = None  # the plan's estimate (issue 15), None: not estimated
    domain: str
    kill_driver: bool
    replica_output: str | None
    replica_stream: str | None = None  # the replica's query name: its progress in the history store
    t_fail: float | None = None
    failure_end_ms: int | None = None
    verify_from_ms: int | None = None  # the first window the drill checks (None: every window of the input)
    killed: list[str] = []
    t_capacity: float | None = None
    backlog_ms: int | None = None
    engine_native: bool = False  # a cluster ftops did not start: the job loses its own executors (executor_faults)


def master_apps(ui: str) -> list[dict]:
    """The active applications a Spark master lists (its ``/json/``); ExternalError when it does not answer."""
    from spark_jobs.cluster.web_ui import master_state

    return master_state(ui).get("activeapps", [])


def preflight(dep: JobDeployment, job: str, plan: dict | None, domain: str, kill_driver: bool) -> DrillContext:
    """Check that the drill can run and say what it predicts; raises InputError/ExternalError otherwise.
    ``domain`` ``auto`` picks the failure domain hosting most of the primary's executors. A job on a cluster
    ftops started is failed there (its cluster state); a job on any other cluster needs a failure-domain map
    and is failed by its own driver (:mod:`spark_jobs.runtime.executor_faults`)."""
    from spark_jobs.cluster.standalone import require_state
    from spark_jobs.runtime.executor_faults import domains_of_run

    state = require_state(Path(dep.cluster_state)) if dep.cluster_state else None

    def hosting(pool: str, app: str, output: Path) -> dict[str, int]:
        """Failure domain -> executors of the pool's application (the workers' own JSON, or its driver's UI)."""
        if state is None:
            return domains_of_run(output, dep.domains)
        return executor_domains(state, app, pool, dep.primary_ui if pool == "primary" else dep.standby_ui)

    if state is not None:
        known, where = {w.domain for w in state.workers("primary") if w.domain}, "the primary pool"
    elif dep.domains:
        known, where = set(dep.domains.values()), "the failure-domain map"
    else:
        raise InputError(f"job {job!r}: its deployment has neither a local cluster state nor a failure-domain map; "
                         "register it with --domains FILE (worker host -> domain) to drill it")
    if domain != "auto" and domain not in known:
        raise InputError(f"failure domain {domain!r}: {where} has {', '.join(sorted(known)) or 'no domains'}")
    primary = _running_app(dep.primary_ui, primary_app_name(job), f"job {job!r}: its primary", dep.primary_master)
    domain = _hosting_domain(job, hosting("primary", primary, dep.primary_output), domain)
    tasks = sorted(plan["payload"].get("tasks", [])) if plan else []
    replica = None
    if plan and tasks:
        app = _running_app(dep.standby_ui, replica_app_name(job, plan["plan_id"]),
                           f"job {job!r}: the replica of plan #{plan['plan_id']}", dep.standby_master)
        replica = str(dep.replica_output(plan["plan_id"]))
        if domain in hosting("standby", app, Path(replica)):
            raise InputError(f"blast radius: failure domain {domain!r} holds {job!r}'s replica; a drill must not "
                             "fail what is meant to cover the failure")
    if state is not None:
        check_blast_radius(state, domain)
    return DrillContext(job=job, plan_id=plan["plan_id"] if plan else None, plan_tasks=tasks,
                        predicted_output_fidelity=float(plan["objective"]) if plan else 0.0, domain=domain,
                        predicted_accuracy=plan.get("predicted_accuracy") if plan else 0.0,
                        kill_driver=kill_driver, replica_output=replica, engine_native=state is None,
                        replica_stream=replica_app_name(job, plan["plan_id"]) if replica else None)


def _running_app(master_ui: str, name: str, what: str, master: str) -> str:
    """The id of the running application ``name`` on a master; ExternalError naming ``what`` otherwise."""
    apps = {a["name"]: a["id"] for a in master_apps(master_ui) if a.get("state") == "RUNNING"}
    if name not in apps:
        raise ExternalError(f"{what} ({name}) is not running on {master}")
    return apps[name]


def _hosting_domain(job: str, hosting: dict[str, int], domain: str) -> str:
    """``domain``, checked to host executors of the primary (``auto``: the one hosting most)."""
    if domain == "auto":
        if not hosting:
            raise ExternalError(f"job {job!r}: its primary has no executor in a failure domain right now")
        return max(sorted(hosting), key=hosting.get)
    if domain not in hosting:
        raise InputError(f"failure domain {domain!r} hosts no executor of {job!r}'s primary (it runs in "
                         f"{', '.join(sorted(hosting)) or 'no domain'}): nothing would fail; choose one of those or 'auto'")
    return domain


def check_blast_radius(state, domain: str) -> None:
    """A drill touches only the domain it names, and never the only standby capacity left."""
    standby = state.workers("standby")
    if standby and all(w.domain == domain for w in standby):
        raise InputError(f"blast radius: failure domain {domain!r} holds all of the standby capacity; a drill must "
                         "leave standby workers for the replica and for recovery")


def executor_domains(state, app_id: str, pool: str = "primary", master_ui: str | None = None) -> dict[str, int]:
    """Failure domain -> number of the application's executors on ``pool``'s live workers (each worker's
    own JSON lists its executors, at the address ``master_ui``'s master reports; default: the state's)."""
    from spark_jobs.cluster.worker_ui import executors_by_worker

    out: dict[str, int] = {}
    for w, executors in executors_by_worker(master_ui or state.master_ui(pool), state.workers(pool)):
        n = sum(1 for e in executors if e.get("appid") == app_id)
        if n:
            out[w.domain] = out.get(w.domain, 0) + n
    return out


def delivered_until(output: Path, files: list[tuple[float, list[dict]]] | None = None) -> int:
    """The latest window end the run has written (0: none); ``files``: its output files, when already read."""
    from spark_jobs.drills.progress import watermark_of, window_files

    files = window_files(output) if files is None else files
    written = max((int(r["window_end"]) for _, rows in files for r in rows), default=0)
    return max(written, watermark_of(output) or 0)


def verification_start(files: list[tuple[float, list[dict]]], batches: int = 5) -> int | None:
    """The first window a drill checks: the earliest window start in the run's last ``batches`` output files
    (``spark_jobs.drills.progress.window_files``) before the fault. A query restarted from its checkpoint
    replays at most its uncommitted micro-batch, so every window a fault can lose or repeat starts there or
    later; None when the run has written nothing."""
    return min((int(r["window_start"]) for _, rows in files[-batches:] for r in rows), default=None)


def inject(dep: JobDeployment, ctx: DrillContext) -> DrillContext:
    """The correlated failure: SIGKILL the domain's workers (with their executors) and, if asked, the driver."""
    from spark_jobs.cluster.standalone import kill_domain
    from spark_jobs.drills.progress import window_files

    ctx = ctx.model_copy()
    written = window_files(dep.primary_output)  # read once for both marks
    ctx.failure_end_ms = delivered_until(dep.primary_output, written)
    ctx.verify_from_ms = verification_start(written) if dep.workload().pipeline.output.window_local else None
    ctx.t_fail = time.time()
    if ctx.engine_native:
        ctx.killed = [f"executor {e}" for e in _engine_native_fault(dep, ctx, down=True)["executors"]]
    else:
        ctx.killed = [p.name for p in kill_domain(Path(dep.cluster_state), ctx.domain)]
    if ctx.kill_driver:
        from spark_jobs.runtime.launch import submitted_group
        from spark_jobs.runtime.processes import own_group_alive, signal_own_group

        group = submitted_group(dep.primary_output)
        if group and own_group_alive(*group):
            signal_own_group(*group, signal.SIGKILL)
            ctx.killed.append("primary driver")
    return ctx


def input_watermark(dep: JobDeployment) -> int | None:
    """The input's event-time watermark now (every source's newest event time, minus its watermark delay)."""
    from spark_jobs.pipeline.input_files import input_watermark as watermark_of_input

    return watermark_of_input(dep.workload(), dep.input)


def add_replacement(dep: JobDeployment, ctx: DrillContext, domain: str = "rack-c", timeout_s: float = 120.0) -> DrillContext:
    """Replacement capacity: a new one-core worker in ``domain``, waited for until the master lists it
    (engine-native: the primary asks for its lost executors back, wherever the cluster has room)."""
    from spark_jobs.cluster.standalone import add_worker

    ctx = ctx.model_copy()
    if ctx.engine_native:
        _engine_native_fault(dep, ctx, down=False, timeout_s=timeout_s)
    else:
        add_worker(Path(dep.cluster_state), domain, "primary", 1, "1g", timeout_s=timeout_s)
    ctx.t_capacity = time.time()
    ctx.backlog_ms = input_watermark(dep)
    return ctx


def _engine_native_fault(dep: JobDeployment, ctx: DrillContext, down: bool, timeout_s: float = 60.0) -> dict:
    """The domain down (or up again) through the primary's own driver; what it did."""
    from spark_jobs.runtime.executor_faults import hosts_of, request_domain_down, request_domain_up, wait_applied

    output = dep.primary_output
    if not down and not primary_driver_alive(dep):  # killed with the domain: its resubmission reads the request
        request_domain_up(output)
        return {"executors": []}
    request = request_domain_down(output, ctx.domain, hosts_of(dep.domains, ctx.domain)) if down else \
        request_domain_up(output)
    return wait_applied(output, request, timeout_s)


def primary_driver_alive(dep: JobDeployment) -> bool:
    from spark_jobs.runtime.launch import driver_running

    return driver_running(dep.primary_output)


def restore_capacity(dep: JobDeployment, ctx: DrillContext, capacity_added: bool) -> list[str]:
    """Put back what an aborted drill took: replacement capacity if none came yet, the primary (from its
    checkpoint) if its driver died. Returns what was done."""
    from spark_jobs.runtime.detached_submit import submit_stream
    from spark_jobs.runtime.job_streams import primary_run_argv

    done = []
    if not capacity_added:
        add_replacement(dep, ctx)
        done.append("replacement worker added")
    if not primary_driver_alive(dep):
        submit_stream(primary_app_name(ctx.job), dep.primary_ui, [str(a) for a in primary_run_argv(dep)], wait=False)
        done.append("primary resubmitted from its checkpoint")
    return done


def measure(dep: JobDeployment, ctx: DrillContext, work_dir: Path) -> dict:
    """The drill report (the fields of ``ftops drill run --json`` that a live job can measure); the
    batch reference runs in ``work_dir``."""
    from spark_jobs.drills.progress import first_batch_reaching, watermark_of
    from spark_jobs.pipeline.accuracy import window_of
    from spark_jobs.pipeline.sink import closed_rows, compare_output
    from spark_jobs.runtime.reference import batch_reference

    workload = dep.workload()
    until = watermark_of(dep.primary_output) or 0
    since = ctx.verify_from_ms
    reference, _meta = batch_reference(workload, dep.input, Path(work_dir), since_ms=since,
                                       event_index=None if since is None else dep.path / "drills" / "event-index.json")
    expected = closed_rows(reference, until)
    comparison = compare_output(dep.primary_output, expected, until_ms=until, from_ms=since)
    windows = sorted({window_of(r) for r in expected if ctx.failure_end_ms < r["window_end"] <= (ctx.backlog_ms or 0)})
    tentative = _rows(Path(ctx.replica_output)) if ctx.replica_output else []
    per_window = workload.accuracy(tentative, expected, windows)
    values = [per_window[w] for w in sorted(per_window)]
    caught = first_batch_reaching(dep.primary_output, ctx.backlog_ms, ctx.t_fail) if ctx.backlog_ms else None
    return {
        "workload": workload.name, "plan_tasks": ctx.plan_tasks, "predicted_output_fidelity": ctx.predicted_output_fidelity,
        "predicted_accuracy": ctx.predicted_accuracy,
        "tentative_accuracy": sum(values) / len(values) if values else None,
        "tentative_accuracy_per_window": values, "failure_window_starts_ms": [w[0] for w in sorted(per_window)],
        "time_to_first_tentative_s": _first_tentative_s(ctx), "time_to_caught_up_s": None if caught is None else caught - ctx.t_fail,
        "lost_windows": len(comparison.lost_windows), "duplicated_windows": len(comparison.duplicated_windows),
        "output_equals_reference": comparison.equal, "windows_compared": comparison.expected_windows,
        "compared_from_ms": since, "compared_until_ms": until, "fail_domain": ctx.domain, "killed": ctx.killed, "kill_driver": ctx.kill_driver,
        "capacity_alive_s": None if ctx.t_capacity is None else ctx.t_capacity - ctx.t_fail,
        "query_failures": query_failures(dep, ctx),
    }


def query_failures(dep: JobDeployment, ctx: DrillContext) -> dict[str, list[dict]]:
    """Per stream, the times its query failed since the failure (started again from its checkpoint, or the
    failure that ended it: :mod:`spark_jobs.runtime.query_restarts`); a lost executor can fail a
    micro-batch on Spark 4.3."""
    from spark_jobs.runtime.query_restarts import failures_since

    return failures_since({"primary": dep.primary_output, "replica": Path(ctx.replica_output) if ctx.replica_output else None},
                          ctx.t_fail or 0.0)



def _rows(folder: Path) -> list[dict]:
    from spark_jobs.drills.progress import window_files

    return [r for _, rows in window_files(folder) for r in rows]


def _first_tentative_s(ctx: DrillContext) -> float | None:
    from spark_jobs.drills.progress import window_files

    if not ctx.replica_output:
        return None
    times = [mtime for mtime, rows in window_files(Path(ctx.replica_output))
             if mtime >= ctx.t_fail and any(r["window_end"] > ctx.failure_end_ms for r in rows)]
    return min(times) - ctx.t_fail if times else None


def verdict(report: dict, max_recovery_s: float | None) -> list[str]:
    """Why the drill fails (empty: it passed): output lost or duplicated, the recovery-time bound missed."""
    problems = []
    if report["lost_windows"] or report["duplicated_windows"] or not report["output_equals_reference"]:
        problems.append(f"output differs from the reference: {report['lost_windows']} windows lost, "
                        f"{report['duplicated_windows']} duplicated")
    caught = report["time_to_caught_up_s"]
    if caught is None:
        problems.append("the primary did not catch up")
    elif max_recovery_s is not None and caught > max_recovery_s:
        problems.append(f"recovery took {caught:.1f} s, over the job's bound of {max_recovery_s:.0f} s")
    return problems
