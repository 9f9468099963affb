"""A chaos drill on a registered, running job from the command line (``ftops drill job NAME``): the steps
of the Airflow drill DAG (:mod:`spark_jobs.drills.live`), in one process, with the same guards.

Problem: a team without a scheduler, or an operator at a terminal, drills a job the same way the DAG does,
and the two must never drill (or recover) one job at once. The command takes the job's lease for the
whole drill (renewed from a thread, so a killed command's lease expires after ``lease_ttl_s``), checks the
steady-state hypothesis and the blast radius, injects the failure, waits (checking the abort probes at
every poll), adds capacity, waits for the primary to catch up, measures, checks the steady state after,
and writes the experiment report; an abort probe restores capacity and records the drill ``aborted``.
Running the command is the approval a job in ``approve`` mode asks for; a job in ``recommend`` mode is
never drilled.

    # report = run_job_drill(store_factory, JobDrillSettings(job="alerts"), holder="command ftops drill job")
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from ft_core.errors import FtopsError, InputError
from ft_core.store.experiments import ExperimentReport
from spark_jobs.drills.probes import Probes

STALE_DRILL = "its holder stopped without finishing it (its lease expired)"


class JobDrillSettings(BaseModel):
    """The drill's choices (the drill DAG's Params)."""

    job: str = Field(min_length=1)
    domain: str = "auto"
    kill_driver: bool = False
    replacement_delay_s: float = Field(30.0, ge=0, le=86_400)
    timeout_s: float = Field(600.0, ge=30, le=86_400)
    steady_lag_s: float = Field(60.0, gt=0, le=86_400)
    max_duration_s: float = Field(1800.0, ge=30, le=86_400)
    max_lag_s: float = Field(600.0, gt=0, le=86_400)
    lease_ttl_s: float = Field(120.0, ge=10, le=86_400)


class DrillAborted(FtopsError):
    """An abort probe fired; ``probe`` names it."""

    exit_code = 1
    label = "aborted"

    def __init__(self, probe: str, reason: str):
        self.probe = probe
        super().__init__(reason)


def _watch(probes: Probes, done: Callable[[], object], *, timeout_s: float, what: str, interval_s: float = 2.0):
    """Poll ``done`` until it returns a value, checking the abort probes at every poll."""
    from spark_jobs.runtime.waiting import wait_for

    def poll():
        fired = probes.fired()
        if fired is not None:
            raise DrillAborted(*fired)
        return done()

    return wait_for(poll, timeout_s=timeout_s, interval_s=interval_s, what=what)


def _app_executors(dep, app_name: str) -> int | None:
    from spark_jobs.cluster.standalone import require_state
    from spark_jobs.drills.live import executor_domains, master_apps

    apps = [a["id"] for a in master_apps(dep.primary_ui) if a.get("name") == app_name and a.get("state") == "RUNNING"]
    if not apps:
        return None
    n = sum(executor_domains(require_state(Path(dep.cluster_state)), apps[0], master_ui=dep.primary_ui).values())
    return n or None


def _caught_up(dep, steady: int, after: float, watermark_ms: int | None) -> Callable[[], bool | None]:
    from spark_jobs.drills.probes import caught_up_lag_files
    from spark_jobs.drills.progress import caught_up_now

    streak = [0]

    def check() -> bool | None:  # two polls in a row, as the DAG's trigger
        ok, _ = caught_up_now(dep.primary_checkpoint, dep.input, after_ts=after, max_lag_files=caught_up_lag_files(steady),
                              output_dir=dep.primary_output, watermark_ms=watermark_ms)
        streak[0] = streak[0] + 1 if ok else 0
        return True if streak[0] >= 2 else None

    return check


def _run_steps(store, dep, job: dict, s: JobDrillSettings, progress: Callable[[str], None]) -> ExperimentReport:
    from spark_jobs.drills.experiment import drill_experiment
    from spark_jobs.drills.live import (
        add_replacement,
        inject,
        measure,
        preflight,
        primary_driver_alive,
        query_failures,
        restore_capacity,
        verdict,
    )
    from spark_jobs.drills.probes import event_lag_s, other_workers, steady_lag_files, wait_steady
    from spark_jobs.drills.progress import new_outputs
    from spark_jobs.runtime.detached_submit import submit_stream
    from spark_jobs.runtime.job_streams import primary_app_name, primary_run_argv

    plan = store.running_replica_plan(s.job)
    ctx = preflight(dep, s.job, plan, s.domain, s.kill_driver)
    lag, replica_lag = wait_steady(dep.pipeline, dep.params, dep.input, dep.primary_output, s.steady_lag_s,
                                   ctx.replica_output)
    steady = steady_lag_files(dep.primary_checkpoint, dep.input)
    probes = Probes(t_fail=0.0, domain=ctx.domain, max_duration_s=s.max_duration_s, max_lag_s=s.max_lag_s,
                    others=other_workers(dep.cluster_state, ctx.domain), input_dir=str(dep.input),
                    primary_output=str(dep.primary_output), pipeline=dep.pipeline, params=dep.params,
                    primary_stream=primary_app_name(s.job))
    params = {"failure_domain": s.domain, "kill_driver": s.kill_driver, "replacement_delay_s": s.replacement_delay_s}
    drill_id = store.start_drill(s.job, ctx.plan_id, params)
    pre = {**ctx.model_dump(), "drill_id": drill_id, "checked_at": time.time(), "replacement_delay_s": s.replacement_delay_s,
           "probes": probes.model_dump(), "hypothesis": {"primary_running": True, "replica_running": ctx.replica_output is not None,
                                                         "lag_s": round(lag, 1), "steady_lag_bound_s": s.steady_lag_s,
                                                         "replica_lag_s": None if replica_lag is None else round(replica_lag, 1),
                                                         "lag_files": steady}}
    progress(f"drill #{drill_id}: steady ({lag:.1f} s behind); failing {ctx.domain}")
    ctx = inject(dep, ctx)
    probes.t_fail = ctx.t_fail
    injected, capacity, report, fired, restored = ctx.model_dump(), None, None, None, []
    try:
        if ctx.replica_output:
            progress("waiting for the replica's tentative output")
            _watch(probes, lambda: new_outputs(ctx.replica_output, "batch-*.jsonl", ctx.t_fail) or None,
                   timeout_s=s.timeout_s, what="the replica's tentative output")
        due = ctx.t_fail + s.replacement_delay_s
        _watch(probes, lambda: True if time.time() >= due else None, timeout_s=s.replacement_delay_s + 60,
               what="replacement capacity to be due", interval_s=1.0)
        ctx = add_replacement(dep, ctx)
        capacity, probes.lag_after = ctx.model_dump(), ctx.t_capacity
        progress(f"a replacement worker joined {ctx.t_capacity - ctx.t_fail:.1f} s after the failure")
        if not primary_driver_alive(dep):
            submit_stream(primary_app_name(s.job), dep.primary_ui, [str(a) for a in primary_run_argv(dep)], wait=False)
        _watch(probes, lambda: _app_executors(dep, primary_app_name(s.job)), timeout_s=s.timeout_s,
               what="the primary's executors")
        progress("the primary runs again; waiting until it has caught up")
        _watch(probes, _caught_up(dep, steady, ctx.t_capacity, ctx.backlog_ms), timeout_s=s.timeout_s,
               what="the primary to catch up")
        report = measure(dep, ctx, dep.path / "drills" / f"drill-{drill_id}" / "reference")
        after = event_lag_s(dep.pipeline, dep.params, dep.input, dep.primary_output)
        report["steady_after"] = None if after is None else {"lag_s": round(after, 1), "bound_s": s.steady_lag_s}
        problems = verdict(report, job.get("max_recovery_s"))
        if after is None or after > s.steady_lag_s:
            problems.append(f"not back to steady state: the primary is {after} s behind its input (bound {s.steady_lag_s} s)")
        status = "failed" if problems else "passed"
        store.finish_drill(drill_id, {**report, "problems": problems}, status)
    except DrillAborted as exc:
        fired, problems, status = (exc.probe, str(exc)), [f"abort probe {exc.probe}: {exc}"], "aborted"
        restored = restore_capacity(dep, ctx, capacity_added=capacity is not None)
        store.finish_drill(drill_id, {"error": problems[0], "restored": restored}, "aborted")
    except BaseException as exc:
        store.finish_drill(drill_id, {"error": f"the drill stopped: {exc}"}, "failed")
        raise
    experiment = drill_experiment(pre, injected, capacity, report, verdict=status, reasons=problems, dag_run_id=None,
                                  fired=fired, restored=restored, query_failures=query_failures(dep, ctx))
    store.save_experiment(experiment)
    return experiment


def run_job_drill(store_factory, settings: JobDrillSettings, holder: str,
                  progress: Callable[[str], None] = lambda _: None) -> ExperimentReport:
    """Drill ``settings.job`` holding its lease; returns the experiment report (BusyError when another
    experiment holds the job, InputError/ExternalError when the job is not drillable now)."""
    from ft_core.store.leases import LeaseKeeper
    from spark_jobs.runtime.atomic_json import write_json
    from spark_jobs.runtime.job_streams import parse_deployment

    with LeaseKeeper(store_factory, settings.job, "drill", holder, ttl_s=settings.lease_ttl_s):
        progress(f"took the lease on {settings.job}")
        store = store_factory()
        try:
            store.abandon_running_drills(settings.job, STALE_DRILL)
            job = store.job(settings.job)
            if job["apply_mode"] == "recommend":
                raise InputError(f"job {settings.job!r} is in recommend mode: ftops does not drill it")
            dep = parse_deployment(job["deployment"], settings.job)
            experiment = _run_steps(store, dep, job, settings, progress)
        finally:
            store.conn.close()
    path = dep.path / "drills" / f"drill-{experiment.experiment_id}" / "experiment.json"
    write_json(path, experiment)
    progress(f"{experiment.title}; report: {path}")
    return experiment
