"""The steps of a chaos drill on a registered, running job (the logic is in ``spark_jobs.drills.live``).

Each operator does one step and passes a :class:`~spark_jobs.drills.live.DrillContext` on through XCom; the
waits between the steps are deferred sensors (``ftops_provider.sensors.waits``). The drill is recorded in
the history store when it starts and when it ends; :class:`VerifyDrillOperator` fails the run, visibly,
when output was lost or duplicated or the primary missed the job's recovery-time bound.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from ft_core.input.quantities import PositiveSeconds, Seconds, Seed
from ftops_provider.arguments import bad_input_fails_the_task, checked
from ftops_provider.hooks.history import HistoryStoreHook
from ftops_provider.leases import run_holder
from spark_jobs.drills.experiment import drill_experiment
from spark_jobs.drills.job_drill import STALE_DRILL
from spark_jobs.drills.probes import (STEADY_LAG_S, STEADY_WAIT_S, caught_up_lag_files, other_workers, steady_lag_files,
                                     wait_steady)


def approved(decision: dict | None) -> bool:
    """Whether an approval task's answer (its XCom) says Approve."""
    return bool(decision) and "Approve" in (decision.get("chosen_options") or [])


def drill_approval_body(pre: dict) -> str:
    """What a person approves (Markdown): the job, the domain to fail, what the drill expects and risks."""
    h = pre["hypothesis"]
    return "\n".join([
        f"ftops would fail **{pre['domain']}** under job **{pre['job']}** (drill #{pre['drill_id']}): SIGKILL of its "
        f"workers{' and the primary driver' if pre['kill_driver'] else ''}, replacement capacity after "
        f"{pre['replacement_delay_s']:.0f} s.", "",
        f"- replication plan #{pre['plan_id']}: predicted output fidelity {pre['predicted_output_fidelity']:.3f}, "
        f"predicted accuracy {_fraction(pre.get('predicted_accuracy'))}"
        if pre["plan_id"] is not None else "- no replica runs: tentative output is lost during the failure",
        f"- steady state now: the primary is {h['lag_s']:.1f} s behind its input"
        + ("" if h.get("replica_lag_s") is None else f", the replica {h['replica_lag_s']:.1f} s")
        + f" (bound {h['steady_lag_bound_s']:.0f} s)",
        f"- aborted if it runs past {pre['probes']['max_duration_s']:.0f} s, another domain is lost, or the primary "
        f"falls {pre['probes']['max_lag_s']:.0f} s behind once capacity is back"])


def _fraction(value: float | None) -> str:
    return "not estimated" if value is None else f"{value:.3f}"


def lease_holder(context: Any) -> str:
    return run_holder(context["dag"].dag_id, context["run_id"])


def release_drill_lease(store, job: str, context: Any) -> None:
    if store.release_lease(job, lease_holder(context)):
        context["task"].log.info("released the lease on %s", job)


class DrillFailed(Exception):
    """The drill ran, and the job did not pass it (the message says why)."""


def _dep(store, job: str):
    from ftops_provider.operators.profiling import job_and_deployment

    return job_and_deployment(store, job)


class DrillPreflightOperator(BaseOperator):
    """Check the job can be drilled (streams running, domain known, plan stored) and open the drill record."""

    template_fields = ("job_name", "domain", "kill_driver", "replacement_delay_s", "timeout_s", "steady_lag_s",
                       "max_duration_s", "max_lag_s")

    def __init__(self, *, job_name: str, domain: str, kill_driver: bool | str = False, replacement_delay_s: float | str = 30,
                 timeout_s: float | str = 600, steady_lag_s: float | str = STEADY_LAG_S, max_duration_s: float | str = 1800,
                 max_lag_s: float | str = 600, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name, self.domain = job_name, domain
        self.kill_driver, self.replacement_delay_s = kill_driver, replacement_delay_s
        self.timeout_s = timeout_s
        self.steady_lag_s, self.max_duration_s, self.max_lag_s = steady_lag_s, max_duration_s, max_lag_s
        self.ftops_db_conn_id = ftops_db_conn_id

    @property
    def lease_ttl_s(self) -> float:
        """The drill's whole budget: the preflight's wait for the steady state, the replacement delay, its waits
        (each up to ``timeout_s``) and the verification; the run releases the lease when it ends, the expiry only
        matters if Airflow loses it."""
        return STEADY_WAIT_S + float(self.replacement_delay_s) + 4 * float(self.timeout_s) + 900.0

    def execute(self, context: Any) -> dict[str, Any]:
        import time

        from airflow.sdk.exceptions import AirflowSkipException

        from ft_core.store.leases import BusyError
        from spark_jobs.drills.live import preflight
        from spark_jobs.runtime.job_streams import primary_app_name, primary_run_argv

        kill = checked(bool, self.kill_driver, "kill_driver")
        delay = checked(Seconds, self.replacement_delay_s, "replacement_delay_s")
        steady_bound = checked(PositiveSeconds, self.steady_lag_s, "steady_lag_s")
        max_duration = checked(PositiveSeconds, self.max_duration_s, "max_duration_s")
        max_lag = checked(PositiveSeconds, self.max_lag_s, "max_lag_s")
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            try:  # one experiment per job: a second drill (or a recovery) at the same time is refused, not failed
                store.acquire_lease(self.job_name, "drill", lease_holder(context), ttl_s=self.lease_ttl_s)
            except BusyError as exc:
                raise AirflowSkipException(str(exc)) from None
            try:
                stale = store.abandon_running_drills(self.job_name, STALE_DRILL, keep_dag_run_id=context["run_id"])
                if stale:
                    self.log.warning("closed drill(s) %s of %s as aborted: %s", stale, self.job_name, STALE_DRILL)
                job, dep = _dep(store, self.job_name)
                if job["apply_mode"] == "recommend":
                    raise AirflowSkipException(f"job {self.job_name!r} is in recommend mode: ftops does not drill it")
                plan = store.running_replica_plan(self.job_name)
                ctx = preflight(dep, self.job_name, plan, self.domain, kill)
                lag, replica_lag = wait_steady(dep.pipeline, dep.params, dep.input, dep.primary_output, steady_bound,
                                               ctx.replica_output)
                params = {"failure_domain": self.domain, "domain": ctx.domain, "kill_driver": kill,
                          "replacement_delay_s": delay}
                drill_id = store.start_drill(self.job_name, ctx.plan_id, params, context["run_id"])
            except BaseException:
                release_drill_lease(store, self.job_name, context)
                raise
        finally:
            store.conn.close()
        steady = steady_lag_files(dep.primary_checkpoint, dep.input)
        self.log.info("drill #%s of %s: plan %s (predicted OF %.3f, accuracy %s), failing %s; steady: %d input files, "
                      "%.1f s behind", drill_id, self.job_name, ctx.plan_id, ctx.predicted_output_fidelity,
                      _fraction(ctx.predicted_accuracy), ctx.domain, steady, lag)
        probes = {"domain": ctx.domain, "max_duration_s": max_duration, "max_lag_s": max_lag,
                  "others": other_workers(dep.cluster_state, ctx.domain), "input_dir": str(dep.input),
                  "primary_output": str(dep.primary_output), "pipeline": dep.pipeline, "params": dep.params,
                  "primary_stream": primary_app_name(self.job_name)}
        return {**ctx.model_dump(), "drill_id": drill_id, "steady_lag_files": steady,
                "caught_up_lag_files": caught_up_lag_files(steady), "checked_at": time.time(),
                "replacement_delay_s": delay,
                "needs_approval": job["apply_mode"] == "approve", "probes": probes,
                "hypothesis": {"primary_running": True, "replica_running": ctx.replica_output is not None,
                               "lag_s": round(lag, 1), "replica_lag_s": None if replica_lag is None else round(replica_lag, 1),
                               "steady_lag_bound_s": steady_bound, "lag_files": steady},
                "deployment": dep.model_dump(), "max_recovery_s": job.get("max_recovery_s"),
                "paths": {"input": str(dep.input), "primary_output": str(dep.primary_output),
                          "primary_checkpoint": str(dep.primary_checkpoint)},
                "primary_app": primary_app_name(self.job_name), "primary_run_args": [str(a) for a in primary_run_argv(dep)]}


def _query_failures(pre: dict, injected: dict | None) -> dict[str, list[dict]] | None:
    """The streams' query failures since the fault (None: nothing was injected)."""
    if not injected:
        return None
    from spark_jobs.drills.live import DrillContext, query_failures
    from spark_jobs.runtime.job_streams import JobDeployment

    ctx = DrillContext.model_validate({k: injected[k] for k in DrillContext.model_fields if k in injected})
    return query_failures(JobDeployment.model_validate(pre["deployment"]), ctx)


class InjectFailureOperator(BaseOperator):
    """SIGKILL the failure domain's workers (and the primary driver if asked); returns the context with the
    failure time and when replacement capacity is due."""

    def __init__(self, *, preflight_task_id: str = "preflight", **kwargs: Any):
        super().__init__(**kwargs)
        self.preflight_task_id = preflight_task_id

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowSkipException

        from spark_jobs.drills.live import DrillContext, inject
        from spark_jobs.runtime.job_streams import JobDeployment

        pre = context["ti"].xcom_pull(task_ids=self.preflight_task_id)
        if pre["needs_approval"] and not approved(context["ti"].xcom_pull(task_ids="approve_drill")):
            raise AirflowSkipException("nobody approved the drill: nothing was injected")
        dep = JobDeployment.model_validate(pre["deployment"])
        ctx = inject(dep, DrillContext.model_validate({k: pre[k] for k in DrillContext.model_fields if k in pre}))
        due = datetime.fromtimestamp(ctx.t_fail, tz=timezone.utc) + timedelta(seconds=pre["replacement_delay_s"])
        self.log.info("killed %s at %s; primary had delivered windows ending <= %s", ", ".join(ctx.killed),
                      ctx.t_fail, ctx.failure_end_ms)
        return {**pre, **ctx.model_dump(), "capacity_due": due.isoformat(), "probes": {**pre["probes"], "t_fail": ctx.t_fail}}


class AddCapacityOperator(BaseOperator):
    """Replacement capacity: a new worker joins the primary pool (the local stack's model of a cloud
    replacing a lost node); returns the context with the capacity time and the input's watermark then."""

    def __init__(self, *, inject_task_id: str = "inject_failure", domain: str = "rack-c", **kwargs: Any):
        super().__init__(**kwargs)
        self.inject_task_id = inject_task_id
        self.domain = domain

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.drills.live import DrillContext, add_replacement
        from spark_jobs.runtime.job_streams import JobDeployment

        doc = context["ti"].xcom_pull(task_ids=self.inject_task_id)
        dep = JobDeployment.model_validate(doc["deployment"])
        ctx = add_replacement(dep, DrillContext.model_validate({k: doc[k] for k in DrillContext.model_fields}), self.domain)
        self.log.info("a %s worker joined %.1f s after the failure", self.domain, ctx.t_capacity - ctx.t_fail)
        return {**doc, **ctx.model_dump(), "probes": {**doc["probes"], "lag_after": ctx.t_capacity}}


class InjectFaultsOperator(BaseOperator):
    """Apply a fault profile (thesis 002's fault model, ``ftops faults validate``) to the primary application
    for ``duration_s`` once it runs again, so the drill measures recovery under slowdowns too; skipped
    without a profile. The injector works in this task for the duration (it pauses and resumes executor
    JVMs on this host, so it is work, not a wait) and resumes every paused executor before it returns.
    Returns the injection report (faults applied per kind, seconds paused per executor)."""

    template_fields = ("profile", "duration_s", "seed")

    def __init__(self, *, profile: str, duration_s: float | str = 60, seed: int | str = 1,
                 capacity_task_id: str = "add_capacity", **kwargs: Any):
        super().__init__(**kwargs)
        self.profile, self.duration_s, self.seed = profile, duration_s, seed
        self.capacity_task_id = capacity_task_id

    def execute(self, context: Any) -> dict[str, Any]:
        from pathlib import Path

        from airflow.sdk.exceptions import AirflowSkipException

        from ft_core.redundancy.fault_profile import fault_schedule, load_fault_profile
        from spark_jobs.fault_injection import inject

        if not self.profile:
            raise AirflowSkipException("no fault profile given")
        duration, seed = checked(PositiveSeconds, self.duration_s, "fault_duration_s"), checked(Seed, self.seed, "fault_seed")
        with bad_input_fails_the_task():  # a bad profile, or one with too many faults, fails here, naming the field
            profile = load_fault_profile(self.profile)
            fault_schedule(profile, duration, seed, field="fault_duration_s")
        doc = context["ti"].xcom_pull(task_ids=self.capacity_task_id)
        root = Path(doc["deployment"]["root"])
        report = inject(profile, duration_s=duration, seed=seed, output=root / "primary",
                        state_dir=Path(doc["deployment"]["cluster_state"]) if doc["deployment"].get("cluster_state") else None,
                        log=self.log.info)
        self.log.info("%s: %s applied, %d skipped, paused %s", report.profile, report.applied, report.skipped,
                      report.paused_s)
        return {"profile": report.profile, "seed": report.seed, "duration_s": report.duration_s,
                "applied": report.applied, "skipped": report.skipped, "paused_s": report.paused_s}


class VerifyDrillOperator(BaseOperator):
    """Measure the drill (the primary's output against the reference, tentative accuracy per failure window,
    times), store it, and fail when output was lost or duplicated or the recovery-time bound was missed."""

    def __init__(self, *, capacity_task_id: str = "add_capacity", faults_task_id: str = "inject_faults",
                 ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.capacity_task_id = capacity_task_id
        self.faults_task_id = faults_task_id
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.drills.live import DrillContext, measure, verdict
        from spark_jobs.drills.probes import event_lag_s
        from spark_jobs.runtime.job_streams import JobDeployment

        doc = context["ti"].xcom_pull(task_ids=self.capacity_task_id)
        if doc is None:  # every wait skipped (trigger rule none_failed): nothing was injected, nothing to measure
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException("no capacity was added: nothing was injected, nothing to measure")
        dep = JobDeployment.model_validate(doc["deployment"])
        work_dir = dep.path / "drills" / f"drill-{doc['drill_id']}" / "reference"
        report = measure(dep, DrillContext.model_validate({k: doc[k] for k in DrillContext.model_fields}), work_dir)
        faults = context["ti"].xcom_pull(task_ids=self.faults_task_id)
        if faults:  # the injected faults are part of what the drill measured
            report = {**report, "faults": faults}
        bound = doc["hypothesis"]["steady_lag_bound_s"]
        lag = event_lag_s(dep.pipeline, dep.params, dep.input, dep.primary_output)
        report = {**report, "steady_after": None if lag is None else {"lag_s": round(lag, 1), "bound_s": bound}}
        problems = verdict(report, doc.get("max_recovery_s"))
        if lag is None or lag > bound:
            problems.append(f"not back to steady state: the primary is {'-' if lag is None else f'{lag:.0f}'} s behind "
                            f"its input, more than {bound:.0f} s")
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            store.finish_drill(doc["drill_id"], {**report, "problems": problems}, "failed" if problems else "passed")
        finally:
            store.conn.close()
        acc = report["tentative_accuracy"]
        self.log.info("drill #%s: predicted OF %.3f, measured accuracy %s over %d windows, first tentative %s s, caught up "
                      "%s s, %d lost / %d duplicated windows", doc["drill_id"], report["predicted_output_fidelity"],
                      "-" if acc is None else f"{acc:.3f}", len(report["tentative_accuracy_per_window"]),
                      report["time_to_first_tentative_s"], report["time_to_caught_up_s"], report["lost_windows"],
                      report["duplicated_windows"])
        if problems:
            raise DrillFailed(f"drill #{doc['drill_id']} of {doc['job']} failed: " + "; ".join(problems))
        return report


class FinishDrillOperator(BaseOperator):
    """The drill's last step, whatever happened before (trigger rule ``all_done``): the verdict recorded,
    the experiment report written (history store and ``<job root>/drills/drill-N/experiment.json``) and
    the lease released on every path.

    - refused (another experiment holds the job, recommend mode): skipped, nothing was started;
    - not approved: recorded ``aborted`` (nothing was injected), skipped;
    - an abort probe fired: capacity restored (the replacement worker, the primary resubmitted if its
      driver died), recorded ``aborted`` with the reason, and this step fails, visibly;
    - another step failed: capacity restored as after an abort (a drill that failed between its fault and
      the replacement capacity would otherwise leave the job short of a domain, and every later drill
      refused), recorded ``failed`` (unless verification already recorded it) and this step fails: the
      run's leaf, so the run fails too;
    - verified: the report written and the lease released."""

    WAITS = ("wait_tentative", "wait_replacement_due", "wait_executors", "wait_caught_up")

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowSkipException

        ti = context["ti"]
        states = task_states(context)
        pre = ti.xcom_pull(task_ids="preflight")
        if not pre:
            if states.get("preflight") == "skipped":
                raise AirflowSkipException("the drill was refused before it started (see the preflight's log)")
            raise AirflowFailException("the preflight failed: no drill was started")
        injected, capacity = ti.xcom_pull(task_ids="inject_failure"), ti.xcom_pull(task_ids="add_capacity")
        fired = next(((ti.xcom_pull(task_ids=w, key="abort_probe"), r) for w in self.WAITS
                      if (r := ti.xcom_pull(task_ids=w, key="abort_reason"))), None)
        failed = sorted(t for t, state in states.items() if state in ("failed", "upstream_failed") and t != self.task_id)
        verdict, reasons, restored = self._verdict(pre, injected or self._partial_injection(pre, states), fired, failed, ti)
        report = ti.xcom_pull(task_ids="verify")
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            if store.drill_status(pre["drill_id"]) == "running":  # verification records passed/failed itself
                store.finish_drill(pre["drill_id"], {"error": "; ".join(reasons), "restored": restored}, verdict)
            else:
                verdict = store.drill_status(pre["drill_id"])
                report = report or store.drill_report(pre["drill_id"])
                reasons = reasons or list(report.get("problems") or [])
            experiment = drill_experiment(pre, injected, capacity, report,
                                          verdict=verdict, reasons=reasons, dag_run_id=context["run_id"], fired=fired,
                                          restored=restored, query_failures=_query_failures(pre, injected))
            store.save_experiment(experiment)
            release_drill_lease(store, pre["job"], context)
        finally:
            store.conn.close()
        self._write(pre, experiment)
        if verdict == "aborted" and injected is None:
            raise AirflowSkipException(f"drill #{pre['drill_id']}: {reasons[0]}; recorded as aborted")
        if verdict != "passed":
            raise AirflowFailException(f"drill #{pre['drill_id']} {verdict}: {'; '.join(reasons)}")
        return experiment.model_dump()

    def _verdict(self, pre, injected, fired, failed, ti) -> tuple[str, list[str], list[str]]:
        if fired is not None:
            return "aborted", [f"abort probe {fired[0]}: {fired[1]}"], self._restore(injected, ti)
        if injected is None and not failed:
            return "aborted", ["not approved: nothing was injected"], []
        if failed:
            return "failed", [f"step {', '.join(failed)} failed; see the DAG run"], self._restore(injected, ti)
        return "passed", [], []


    def _write(self, pre: dict, experiment) -> None:
        from spark_jobs.runtime.atomic_json import write_json

        path = Path(pre["deployment"]["root"]) / "drills" / f"drill-{pre['drill_id']}" / "experiment.json"
        write_json(path, experiment)
        self.log.info("%s; experiment report: %s (and the Fault tolerance view)", experiment.title, path)

    @staticmethod
    def _partial_injection(pre: dict, states: dict[str, str]) -> dict | None:
        """The preflight's context when ``inject_failure`` failed part way (the domain may be down already,
        with no context pushed): restoring then adds capacity that may turn out spare, never too little."""
        return {**pre, "t_fail": None} if states.get("inject_failure") == "failed" else None

    def _restore(self, injected: dict | None, ti) -> list[str]:
        """Put back what the drill took; a restore that fails is reported, and the verdict, the report and
        the lease release still happen (a held lease would refuse every later experiment on the job)."""
        from spark_jobs.drills.live import DrillContext, restore_capacity
        from spark_jobs.runtime.job_streams import JobDeployment

        if injected is None:
            return []
        try:
            return restore_capacity(JobDeployment.model_validate(injected["deployment"]),
                                    DrillContext.model_validate({k: injected[k] for k in DrillContext.model_fields
                                                                 if k in injected}),
                                    capacity_added=ti.xcom_pull(task_ids="add_capacity") is not None)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the drill must still be recorded and its lease freed
            self.log.exception("restoring capacity failed")
            return [f"restoring capacity failed: {exc}"]


def task_states(context: Any) -> dict[str, str]:
    """Task id -> state of this DAG run's tasks (through the Task SDK: a task cannot query the database)."""
    ti = context["ti"]
    states = ti.get_task_states(dag_id=ti.dag_id, run_ids=[ti.run_id])
    return {task: str(getattr(state, "value", state)) for task, state in states.get(ti.run_id, {}).items()}
