"""The drill engine: one owner of a chaos drill's steps, its state, its fault journal and its finish
(issue 35, item 6), behind ``ftops drill job`` and the ``ftops_chaos_drill`` DAG alike.

Problem: a drill on a running job was orchestrated twice (the command and the DAG's operators) and the copies
drifted: the command's catch-all recorded "failed" without giving the capacity back, the steady state after
was checked twice with different messages, the operators passed an untyped dict of 20 keys. And a drill whose
process died after its fault left the fault in place.

Design: a drill is a sequence of steps over one typed :class:`DrillState` (the command keeps it in memory, the
DAG passes it from task to task as XCom). Each step holds the job's lease (taking it again is a no-op for its
holder, and fails with BusyError when the lease lapsed and someone else took the job), so only the lease
holder ever touches the job. Between the steps come waits (:mod:`spark_jobs.drills.waits`: polled by the
command, deferred to the triggerer by the DAG), which check the abort probes, the halt and the lease.

1. :func:`begin`: take the lease, undo what a dead drill left on the job (:mod:`spark_jobs.drills.reconcile`),
   check the job can be drilled (streams running, domain hosting the primary, blast radius), open the record;
2. wait ``steady``: the steady-state hypothesis holds;
3. :func:`inject`: forecast when the primary will be caught up (:mod:`spark_jobs.drills.catch_up`), journal each
   fault with its undo (:mod:`ft_core.store.faults`), then apply it through the
   cluster seam (:mod:`spark_jobs.cluster.seam`): the domain lost, the primary driver killed if asked;
4. waits ``tentative`` (the replica's output) and ``capacity_due``; :func:`add_capacity`: the domain's capacity
   given back in the same domain (its fault closed); :func:`ensure_primary`: the primary resubmitted from its
   checkpoint if its driver died (that fault closed); waits ``executors`` and ``caught_up``;
5. :func:`verify`: measure (the output against the reference, tentative accuracy, times), the steady state
   after, the failure domains against those before; record passed or failed;
6. :func:`finish` (always, also after an abort or an error): undo every fault of the drill still open, write
   the experiment report, release the lease.

So a drill ends with the failure domains it found, by construction: capacity returns to the domain it left.
The decisions (:func:`hosting_domain`, :func:`verdict`, :func:`capacity_problems`) are plain functions with
fast unit tests.

    # state = begin(store, DrillSettings(job="alerts"), holder="command ftops drill job (pid 4242 on vm)")
"""

from __future__ import annotations

import time
from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from ft_core.errors import ExternalError, InputError
from ft_core.input.names import check_name
from ft_core.input.quantities import PositiveSeconds, Seconds
from ft_core.store.experiments import ExperimentReport
from spark_jobs.attach.deployment import AttachedDeployment
from spark_jobs.attach.drill_support import is_attached
from spark_jobs.drills.live import DrillContext
from spark_jobs.drills.probes import STEADY_LAG_S, STEADY_WAIT_S, Probes
from spark_jobs.runtime.job_streams import JobDeployment, parse_deployment, primary_app_name, replica_app_name

STALE_DRILL = "its holder stopped without finishing it (its lease expired)"


class DrillSettings(BaseModel):
    """A drill's choices (the drill DAG's Params, ``ftops drill job``'s flags), with the CLI's bounds and messages."""

    job: str
    domain: str = "auto"
    fault: Literal["host-down", "partition"] = "host-down"
    kill_driver: bool = False
    replacement_delay_s: Seconds = 30.0
    timeout_s: Annotated[PositiveSeconds, Field(ge=30)] = 600.0
    steady_lag_s: PositiveSeconds = STEADY_LAG_S
    steady_wait_s: Seconds = STEADY_WAIT_S
    max_duration_s: Annotated[PositiveSeconds, Field(ge=30)] = 1800.0
    max_lag_s: PositiveSeconds = 600.0
    lease_ttl_s: Annotated[PositiveSeconds, Field(ge=10)] = 120.0

    @field_validator("job")
    @classmethod
    def _job_name(cls, job: str) -> str:
        return check_name(job, "job name")

    @field_validator("domain")
    @classmethod
    def _domain_name(cls, domain: str) -> str:
        return check_name(domain, "failure domain")


PARAM_OF = {"domain": "failure_domain"}  # the DAG Param a setting comes from, where the names differ


def drill_settings(values: dict) -> DrillSettings:
    """``values`` (a DAG run's Params, a command's flags) as settings; InputError ``<param>: <reason>`` otherwise,
    with the value shown as the CLI shows it."""
    from pydantic import ValidationError

    from ft_core.input.validation import describe

    try:
        return DrillSettings.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = PARAM_OF.get(str(err["loc"][0]), str(err["loc"][0])) if err["loc"] else "drill"
        raise InputError(f"{field}: {describe(err)}", field=field) from None


class Hypothesis(BaseModel):
    """The steady state the drill started from."""

    lag_s: float
    replica_lag_s: float | None = None
    bound_s: float
    lag_files: int = 0
    checked_at: float


class DrillState(BaseModel):
    """Everything a drill's steps hand on (the DAG's XCom)."""

    settings: DrillSettings
    holder: str
    dag_run_id: str | None = None
    drill_id: int
    deployment: JobDeployment | AttachedDeployment
    ctx: DrillContext
    needs_approval: bool = False
    max_recovery_s: float | None = None
    capacity_before: dict[str, int] = {}
    capacity_after: dict[str, int] | None = None
    hypothesis: Hypothesis | None = None
    probes: Probes
    faults: dict[str, int] = {}  # "domain" / "driver" -> fault id in the journal
    capacity_due: float | None = None
    caught_up_forecast: dict | None = None  # spark_jobs.drills.catch_up.CatchUpForecast, made just before the fault
    resubmitted: bool = False
    report: dict | None = None
    problems: list[str] = []

    @property
    def job(self) -> str:
        return self.settings.job


class Outcome(BaseModel):
    """How a drill ended, as :func:`finish` records it."""

    verdict: Literal["passed", "failed", "aborted"]
    reasons: list[str] = []
    fired: tuple[str, str] | None = None  # the abort probe that fired: name, reason


def hold_lease(store, state: DrillState) -> None:
    """Take (keep) the job's lease for another TTL; BusyError when someone else holds it now."""
    store.acquire_lease(state.job, "drill", state.holder, ttl_s=state.settings.lease_ttl_s)


def begin(store, settings: DrillSettings, holder: str, dag_run_id: str | None = None,
          driver_env: dict[str, str] | None = None) -> DrillState:
    """Take the lease, repair what a dead experiment left (drivers it starts get ``driver_env``), check the job can
    be drilled and open its record; BusyError/HaltedError when it cannot start now, InputError/ExternalError when
    the job is not drillable."""
    from spark_jobs.drills.fleet_lock import hold_domains
    from spark_jobs.drills.reconcile import reconcile

    store.acquire_lease(settings.job, "drill", holder, ttl_s=settings.lease_ttl_s)
    try:
        repairs = reconcile(store, job=settings.job, by=holder, driver_env=driver_env)  # a dead drill's faults first
        store.abandon_running_drills(settings.job, STALE_DRILL, keep_dag_run_id=dag_run_id)
        job = store.job(settings.job)
        if job["apply_mode"] == "recommend":
            raise InputError(f"job {settings.job!r} is in recommend mode: ftops does not drill it")
        dep = parse_deployment(job["deployment"], settings.job)
        if any(r.kind == "primary" for r in repairs):  # the repair just resubmitted it: give it time to run
            _wait_running(dep, primary_app_name(settings.job), settings.steady_wait_s)
        ctx, capacity = preflight(dep, settings, store.running_replica_plan(settings.job))
        hold_domains(store, settings.job, holder, dep, ctx, capacity)  # no two drills share a failure domain (issue 33)
        params = {"failure_domain": settings.domain, "domain": ctx.domain, "fault": settings.fault,
                  "kill_driver": settings.kill_driver, "replacement_delay_s": settings.replacement_delay_s,
                  "survivor_executors": ctx.survivor_executors, "free_cores_outside": ctx.free_cores_outside}
        drill_id = store.start_drill(settings.job, ctx.plan_id, params, dag_run_id)
    except BaseException:
        store.release_lease(settings.job, holder)
        raise
    attached = is_attached(dep)  # its lag comes from its queries' rows alone (spark_jobs.drills.waits)
    probes = Probes(t_fail=0.0, domain=ctx.domain, max_duration_s=settings.max_duration_s, max_lag_s=settings.max_lag_s,
                    others=_cluster(dep).watched_outside(ctx.domain), primary_output=str(dep.primary_output),
                    input_dir=None if attached else str(dep.input), pipeline=None if attached else dep.pipeline,
                    params=[] if attached else dep.params, primary_stream=None if attached else primary_app_name(settings.job))
    return DrillState(settings=settings, holder=holder, dag_run_id=dag_run_id, drill_id=drill_id, deployment=dep, ctx=ctx,
                      needs_approval=job["apply_mode"] == "approve", max_recovery_s=job.get("max_recovery_s"),
                      capacity_before=capacity, probes=probes)


def _wait_running(dep: JobDeployment, app: str, timeout_s: float) -> None:
    from spark_jobs.drills.live import master_apps
    from spark_jobs.runtime.waiting import wait_for

    wait_for(lambda: any(a.get("name") == app and a.get("state") == "RUNNING" for a in master_apps(dep.primary_ui)) or None,
             timeout_s=max(timeout_s, 30.0), interval_s=2.0, what=f"{app}, resubmitted by the repair, to run")


def _cluster(dep):
    from spark_jobs.cluster.seam import cluster_of

    return cluster_of(dep)


def preflight(dep, settings: DrillSettings, plan: dict | None) -> tuple[DrillContext, dict[str, int]]:
    """Check, touching nothing, that the drill can run: the primary (and the plan's replica) run, the domain
    hosts the primary and not its replica, the blast radius; returns the drill's context and the cluster's
    capacity per domain now. An attached job's application is its primary; it has no replica."""
    from spark_jobs.attach.drill_support import require_running
    from spark_jobs.drills.live import running_app

    cluster = _cluster(dep)
    if is_attached(dep):
        app, plan = require_running(dep, settings.job), None
    else:
        app = primary_app_name(settings.job)
        running_app(dep.primary_ui, app, f"job {settings.job!r}: its primary", dep.primary_master)
    hosting = cluster.executor_domains(app)
    domain = hosting_domain(settings.job, hosting, settings.domain)
    tasks = sorted(plan["payload"].get("tasks", [])) if plan else []
    replica = None
    if plan and tasks:
        name = replica_app_name(settings.job, plan["plan_id"])
        running_app(dep.standby_ui, name, f"job {settings.job!r}: the replica of plan #{plan['plan_id']}", dep.standby_master)
        replica = str(dep.replica_output(plan["plan_id"]))
        if domain in cluster.executor_domains(name, "standby"):
            raise InputError(f"blast radius: failure domain {domain!r} holds {settings.job!r}'s replica; a drill must not "
                             "fail what is meant to cover the failure")
    cluster.check_blast_radius(domain)
    cluster.undo_of(domain, settings.fault)  # the fault is one this cluster can take (InputError otherwise)
    ctx = DrillContext(job=settings.job, plan_id=plan["plan_id"] if plan else None, plan_tasks=tasks,
                       predicted_output_fidelity=float(plan["objective"]) if plan else 0.0, domain=domain,
                       predicted_accuracy=plan.get("predicted_accuracy") if plan else 0.0,
                       kill_driver=settings.kill_driver, replica_output=replica, engine_native=not dep.cluster_state,
                       survivor_executors=sum(n for d, n in hosting.items() if d != domain),
                       free_cores_outside=cluster.free_cores(domain),
                       replica_stream=replica_app_name(settings.job, plan["plan_id"]) if replica else None)
    return ctx, cluster.capacity()


def hosting_domain(job: str, hosting: dict[str, int], domain: str) -> str:
    """``domain``, checked to host executors of the primary (``auto``: the one hosting most, the first by name
    on a tie).

    >>> hosting_domain("alerts", {"rack-b": 1, "rack-a": 1}, "auto")
    'rack-a'
    """
    if domain == "auto":
        if not hosting:
            raise ExternalError(f"job {job!r}: its primary has no executor in a failure domain right now")
        return max(sorted(hosting), key=hosting.get)
    if domain not in hosting:
        raise InputError(f"failure domain {domain!r} hosts no executor of {job!r}'s primary (it runs in "
                         f"{', '.join(sorted(hosting)) or 'no domain'}): nothing would fail; choose one of those or 'auto'")
    return domain


def inject(store, state: DrillState, hypothesis: Hypothesis) -> DrillState:
    """Journal, then apply, the failure: the domain lost (and the primary driver killed, if asked)."""
    from spark_jobs.drills.live import delivered_until, verification_start
    from spark_jobs.drills.progress import window_files

    hold_lease(store, state)
    s, dep, ctx = state.settings, state.deployment, state.ctx.model_copy()
    cluster = _cluster(dep)
    if is_attached(dep):  # what it had committed: the exactly-once check starts there
        from spark_jobs.attach.drill_support import committed_before

        ctx.queries_before, ctx.steady_lag_s = committed_before(dep), hypothesis.lag_s
    else:
        written = window_files(dep.primary_output)  # read once for both marks
        ctx.failure_end_ms = delivered_until(dep.primary_output, written)
        ctx.verify_from_ms = verification_start(written) if dep.workload().pipeline.output.window_local else None
    forecast = _forecast(store, state)  # just before the fault, from what the store holds now
    faults, undo_within = dict(state.faults), s.max_duration_s + s.timeout_s
    kind = "partition" if s.fault == "partition" else "domain_down"
    faults["domain"] = store.open_fault(s.job, "drill", state.drill_id, state.holder, kind, ctx.domain,
                                        cluster.undo_of(ctx.domain, s.fault), undo_within)
    ctx.t_fail = time.time()
    lost = cluster.lose(ctx.domain, s.fault)
    store.fault_applied(faults["domain"], lost.undo)
    ctx.killed = list(lost.hit)
    if s.kill_driver:
        faults["driver"] = store.open_fault(s.job, "drill", state.drill_id, state.holder, "driver_killed",
                                            primary_app_name(s.job), {"seam": "streams", "role": "primary"}, undo_within)
        if kill_primary_driver(dep):
            ctx.killed.append("primary driver")
        store.fault_applied(faults["driver"])
    probes = state.probes.model_copy(update={"t_fail": ctx.t_fail})
    return state.model_copy(update={"ctx": ctx, "faults": faults, "probes": probes, "hypothesis": hypothesis,
                                    "capacity_due": ctx.t_fail + s.replacement_delay_s, "caught_up_forecast": forecast})


def _forecast(store, state: DrillState) -> dict | None:
    """The catch-up forecast (:mod:`spark_jobs.drills.catch_up`); one that cannot be made is logged and left out:
    a forecast never stops a drill."""
    import logging

    from spark_jobs.drills.catch_up import forecast_caught_up

    s = state.settings
    try:
        forecast = forecast_caught_up(store, s.job, replacement_delay_s=s.replacement_delay_s, kill_driver=s.kill_driver,
                                      now=time.time(), trigger_s=getattr(state.deployment, "trigger_s", 0.0),
                                      survivors=state.ctx.survivor_executors > 0,
                                      free_cores_outside=state.ctx.free_cores_outside)
    except (ValueError, ArithmeticError) as exc:  # a model refused its inputs (pydantic's errors are ValueErrors)
        logging.getLogger(__name__).warning("drill #%s: no catch-up forecast: %s", state.drill_id, exc)
        return None
    return forecast.model_dump() if forecast else None


def kill_primary_driver(dep: JobDeployment) -> bool:
    """SIGKILL the primary driver ftops submitted (its process group); whether one was running."""
    import signal

    from spark_jobs.runtime.launch import submitted_group
    from spark_jobs.runtime.processes import own_group_alive, signal_own_group

    group = submitted_group(dep.primary_output)
    if group and own_group_alive(*group):
        signal_own_group(*group, signal.SIGKILL)
        return True
    return False


def add_capacity(store, state: DrillState) -> DrillState:
    """The lost domain's capacity back, in that domain (its fault closed); the input's watermark then is what
    the primary must reach to have caught up."""
    from spark_jobs.drills.live import input_watermark
    from spark_jobs.drills.reconcile import undo_fault

    hold_lease(store, state)
    ctx = state.ctx.model_copy()
    fault = _journaled(store, state, "domain")
    if fault is not None and fault["closed_at"] is None:
        repair = undo_fault(store, fault, state.holder, {})
        if not repair.ok:
            raise ExternalError(f"giving {ctx.domain} back: {repair.outcome}")
        ctx.t_capacity = time.time()
    else:  # closed meanwhile (a halt gave it back): capacity is back since then
        ctx.t_capacity = fault["closed_at"].timestamp() if fault else time.time()
    ctx.backlog_ms = None if is_attached(state.deployment) else input_watermark(state.deployment)
    probes = state.probes.model_copy(update={"lag_after": ctx.t_capacity})
    return state.model_copy(update={"ctx": ctx, "probes": probes})


def ensure_primary(store, state: DrillState, driver_env: dict[str, str]) -> DrillState:
    """Resubmit the primary from its checkpoint if its driver is gone (killed by the drill, or crashed); the
    driver fault, if any, is closed."""
    from spark_jobs.drills.reconcile import resubmit_primary

    hold_lease(store, state)
    resubmitted = resubmit_primary(state.job, state.deployment, driver_env)
    fault = _journaled(store, state, "driver")
    if fault is not None:
        store.close_fault(fault["fault_id"], state.holder,
                          "primary resubmitted from its checkpoint" if resubmitted else "primary was running again")
    return state.model_copy(update={"resubmitted": resubmitted or state.resubmitted})


def _journaled(store, state: DrillState, role: str) -> dict | None:
    fault_id = state.faults.get(role)
    return next((f for f in store.faults(state.job) if f["fault_id"] == fault_id), None) if fault_id else None


def verify(store, state: DrillState, extra: dict | None = None) -> DrillState:
    """Measure the drill, check the steady state and the failure domains after it, record passed or failed;
    ``extra`` goes into the stored report (a fault profile's injection report)."""
    from spark_jobs.drills.live import measure
    from spark_jobs.drills.probes import settled_lag_s

    hold_lease(store, state)
    dep, bound = state.deployment, state.settings.steady_lag_s
    if is_attached(dep):  # judged from what the job recorded: its checkpoints and its progress
        from spark_jobs.attach.drill_support import verify as verify_attached

        report, problems = verify_attached(store, dep, state.ctx, bound, state.max_recovery_s)
    else:
        report = measure(dep, state.ctx, dep.path / "drills" / f"drill-{state.drill_id}" / "reference")
        after, waited = settled_lag_s(dep.pipeline, dep.params, dep.input, dep.primary_output, bound,
                                      on_poll=lambda: hold_lease(store, state))
        report["steady_after"] = None if after is None else {"lag_s": round(after, 1), "bound_s": bound,
                                                             "waited_s": round(waited, 1)}
        problems = verdict(report, state.max_recovery_s, bound, after)
    capacity = _cluster(dep).capacity()
    report.update(capacity_before=state.capacity_before, capacity_after=capacity, **(extra or {}),
                  **caught_up_measures(store, state, report.get("time_to_caught_up_s")))
    problems += capacity_problems(state.capacity_before, capacity)
    store.finish_drill(state.drill_id, {**report, "problems": problems}, "failed" if problems else "passed")
    return state.model_copy(update={"report": report, "problems": problems, "capacity_after": capacity})


def caught_up_measures(store, state: DrillState, caught_s: float | None) -> dict:
    """The report's catch-up forecast beside the measurement: the fault's time, the predicted time caught up, its
    error against the measured one (a fraction of it), the forecast's inputs, and the stall measured (the first
    batch after the fault)."""
    from ft_core.recovery.drill_catch_up import forecast_error
    from spark_jobs.drills.catch_up import first_batch_after

    forecast, t_fail = state.caught_up_forecast, state.ctx.t_fail
    predicted = forecast["predicted_caught_up_s"] if forecast else None
    return {"failed_at": t_fail, "predicted_caught_up_s": predicted, "caught_up_forecast": forecast,
            "caught_up_error": None if (error := forecast_error(predicted, caught_s)) is None else round(error, 3),
            "stall_s": first_batch_after(store, state.job, t_fail) if t_fail else None}


def verdict(report: dict, max_recovery_s: float | None, steady_bound_s: float, lag_after_s: float | None) -> list[str]:
    """Why the drill fails (empty: it passed): output lost or duplicated, the recovery-time bound missed, not
    back to its steady state.

    >>> verdict({"lost_windows": 0, "duplicated_windows": 0, "output_equals_reference": True,
    ...          "time_to_caught_up_s": 50.0}, 40, 60, 3.0)
    ["recovery took 50.0 s, over the job's bound of 40 s"]
    """
    output = output_problem(report["lost_windows"], report["duplicated_windows"], report["output_equals_reference"])
    problems = [output] if output else []
    caught = report["time_to_caught_up_s"]
    if caught is None:
        problems.append("the primary did not catch up")
    elif max_recovery_s is not None and caught > max_recovery_s:
        problems.append(f"recovery took {caught:.1f} s, over the job's bound of {max_recovery_s:.0f} s")
    if lag_after_s is None or lag_after_s > steady_bound_s:
        problems.append(f"not back to steady state: the primary is {lag_after_s} s behind its input "
                        f"(bound {steady_bound_s:.0f} s)")
    return problems


def output_problem(lost: int, duplicated: int, equal: bool) -> str | None:
    """What is wrong with a drill's output against the failure-free reference (None: nothing), one rule for every
    drill (``ftops drill run`` too).

    >>> output_problem(0, 0, False)
    'the output differs from the batch reference: 0 windows lost, 0 duplicated (other rows in its windows)'
    """
    if not equal:
        changed = "" if lost or duplicated else " (other rows in its windows)"
        return f"the output differs from the batch reference: {lost} windows lost, {duplicated} duplicated{changed}"
    if lost or duplicated:
        return f"{lost} windows lost, {duplicated} duplicated"
    return None


def capacity_problems(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """A drill leaves the failure domains it found: the same live workers (or executors) per domain.

    >>> capacity_problems({"rack-a": 1, "rack-b": 1}, {"rack-b": 1, "rack-c": 1})
    ['failure domains changed: before rack-a 1, rack-b 1; after rack-b 1, rack-c 1']
    """
    if before == after:
        return []
    show = (lambda c: ", ".join(f"{d} {n}" for d, n in sorted(c.items())) or "none")
    return [f"failure domains changed: before {show(before)}; after {show(after)}"]


def finish(store, state: DrillState, outcome: Outcome, driver_env: dict[str, str]) -> ExperimentReport:
    """Always the last step: undo what the drill still has open, record the verdict and the experiment report,
    release the lease. An undo that fails is reported; the record and the release still happen."""
    from spark_jobs.drills.experiment import drill_experiment
    from spark_jobs.drills.fleet_lock import release_domains
    from spark_jobs.drills.live import query_failures
    from spark_jobs.drills.reconcile import undo_open_faults

    restored = undo_open_faults(store, state.job, state.holder, driver_env, drill_id=state.drill_id)
    if state.ctx.t_fail:  # a drill that touched the job leaves it running (a refused one starts nothing)
        restored += _streams_running(store, state, driver_env)
    verdict_, reasons = outcome.verdict, list(outcome.reasons)
    if store.drill_status(state.drill_id) == "running":
        store.finish_drill(state.drill_id, {"error": "; ".join(reasons), "restored": restored}, verdict_)
    else:  # verify recorded it
        verdict_ = store.drill_status(state.drill_id)
        reasons = reasons or list(state.problems)
    experiment = drill_experiment(state, verdict=verdict_, reasons=reasons, fired=outcome.fired, restored=restored,
                                  query_failures=query_failures(state.deployment, state.ctx) if state.ctx.t_fail else None)
    store.save_experiment(experiment)
    release_domains(store, state.job, state.holder)
    store.release_lease(state.job, state.holder)
    _write(state, experiment)
    return experiment


def _streams_running(store, state: DrillState, driver_env: dict[str, str]) -> list[str]:
    """The primary and the replica resubmitted from their checkpoints if their drivers died or their master forgot
    them (a master restarted mid-drill); what was resubmitted, for the report."""
    from spark_jobs.drills.reconcile import restart_streams

    try:
        return [f"{kind} ({target}) resubmitted from its checkpoint"
                for kind, target in restart_streams(store, state.job, state.deployment, driver_env)]
    except (ExternalError, InputError, OSError) as exc:
        return [f"could not check or restart the job's streams: {exc}"]


def _write(state: DrillState, experiment: ExperimentReport) -> None:
    import contextlib

    from spark_jobs.runtime.atomic_json import write_json

    path = state.deployment.path / "drills" / f"drill-{state.drill_id}" / "experiment.json"
    with contextlib.suppress(OSError):  # the job's folder is not on this host: the store has the report
        write_json(path, experiment)
