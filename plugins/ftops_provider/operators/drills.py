"""The steps of a chaos drill on a registered, running job (the logic is in ``spark_jobs.drills.live``).

Each operator does one step and passes a :class:`~spark_jobs.drills.live.DrillContext` on through XCom; the
waits between the steps are deferred sensors (``ftops_provider.sensors.waits``). The drill is recorded in
the history store when it starts and when it ends; :class:`VerifyDrillOperator` fails the run, visibly,
when output was lost or duplicated or the primary missed the job's recovery-time bound.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from airflow.sdk.exceptions import AirflowFailException
from airflow.sdk import BaseOperator

from ft_core.input.quantities import PositiveSeconds, Seconds, Seed
from ftops_provider.arguments import bad_input_fails_the_task, checked
from ftops_provider.hooks.history import HistoryStoreHook


class DrillFailed(Exception):
    """The drill ran, and the job did not pass it (the message says why)."""


def _dep(store, job: str):
    from ftops_provider.operators.profiling import job_and_deployment

    return job_and_deployment(store, job)


class DrillPreflightOperator(BaseOperator):
    """Check the job can be drilled (streams running, domain known, plan stored) and open the drill record."""

    template_fields = ("job_name", "domain", "kill_driver", "replacement_delay_s")

    def __init__(self, *, job_name: str, domain: str, kill_driver: bool | str = False, replacement_delay_s: float | str = 30,
                 ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name, self.domain = job_name, domain
        self.kill_driver, self.replacement_delay_s = kill_driver, replacement_delay_s
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.runtime.job_streams import primary_app_name, primary_run_argv
        from spark_jobs.drills.live import preflight

        kill = checked(bool, self.kill_driver, "kill_driver")
        delay = checked(Seconds, self.replacement_delay_s, "replacement_delay_s")
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            job, dep = _dep(store, self.job_name)
            plan = _running_replica_plan(store, self.job_name)
            ctx = preflight(dep, self.job_name, plan, self.domain, kill)
            params = {"failure_domain": self.domain, "kill_driver": kill, "replacement_delay_s": delay}
            drill_id = store.start_drill(self.job_name, ctx.plan_id, params, context["run_id"])
        finally:
            store.conn.close()
        steady = steady_lag_files(dep.primary_checkpoint, dep.input)
        self.log.info("drill #%s of %s: plan %s (predicted OF %.3f), failing %s; steady lag %d input files",
                      drill_id, self.job_name, ctx.plan_id, ctx.predicted_output_fidelity, self.domain, steady)
        return {**ctx.model_dump(), "drill_id": drill_id, "steady_lag_files": steady, "replacement_delay_s": delay,
                "deployment": dep.model_dump(), "max_recovery_s": job.get("max_recovery_s"),
                "primary_app": primary_app_name(self.job_name), "primary_run_args": [str(a) for a in primary_run_argv(dep)]}


def steady_lag_files(checkpoint, input_dir, polls: int = 6, interval_s: float = 1.0) -> int:
    """The primary's lag (unprocessed input files) in steady state: the most seen over a few polls before
    the failure. A stream fed in real time is never at lag zero for long (input arrives during every
    micro-batch), so "caught up" after the failure means back to this lag, as Khaos defines recovery."""
    import time

    from ftops_provider.stream_lag import file_source_lag

    seen = []
    for i in range(polls):
        seen.append(file_source_lag(checkpoint, input_dir).lag_files)
        if i < polls - 1:
            time.sleep(interval_s)
    return max(seen)


def _running_replica_plan(store, job: str) -> dict | None:
    """The replication plan the job's running replica executes: that is what the drill tests. The current
    plan can be newer when it did not improve OF enough to be resubmitted. None: no replica runs."""
    running = [a for a in store.applied_plans(job) if a["role"] == "replica" and a["stopped_at"] is None]
    return store.plan(running[0]["plan_id"]) if running else None


class InjectFailureOperator(BaseOperator):
    """SIGKILL the failure domain's workers (and the primary driver if asked); returns the context with the
    failure time and when replacement capacity is due."""

    def __init__(self, *, preflight_task_id: str = "preflight", **kwargs: Any):
        super().__init__(**kwargs)
        self.preflight_task_id = preflight_task_id

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.runtime.job_streams import JobDeployment
        from spark_jobs.drills.live import DrillContext, inject

        pre = context["ti"].xcom_pull(task_ids=self.preflight_task_id)
        dep = JobDeployment.model_validate(pre["deployment"])
        ctx = inject(dep, DrillContext.model_validate({k: pre[k] for k in DrillContext.model_fields if k in pre}))
        due = datetime.fromtimestamp(ctx.t_fail, tz=timezone.utc) + timedelta(seconds=pre["replacement_delay_s"])
        self.log.info("killed %s at %s; primary had delivered windows ending <= %s", ", ".join(ctx.killed),
                      ctx.t_fail, ctx.failure_end_ms)
        return {**pre, **ctx.model_dump(), "capacity_due": due.isoformat()}


class AddCapacityOperator(BaseOperator):
    """Replacement capacity: a new worker joins the primary pool (the local stack's model of a cloud
    replacing a lost node); returns the context with the capacity time and the input's watermark then."""

    def __init__(self, *, inject_task_id: str = "inject_failure", domain: str = "rack-c", **kwargs: Any):
        super().__init__(**kwargs)
        self.inject_task_id = inject_task_id
        self.domain = domain

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.runtime.job_streams import JobDeployment
        from spark_jobs.drills.live import DrillContext, add_replacement

        doc = context["ti"].xcom_pull(task_ids=self.inject_task_id)
        dep = JobDeployment.model_validate(doc["deployment"])
        ctx = add_replacement(dep, DrillContext.model_validate({k: doc[k] for k in DrillContext.model_fields}), self.domain)
        self.log.info("a %s worker joined %.1f s after the failure", self.domain, ctx.t_capacity - ctx.t_fail)
        return {**doc, **ctx.model_dump()}


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
        from spark_jobs.runtime.job_streams import JobDeployment
        from spark_jobs.drills.live import DrillContext, measure, verdict

        doc = context["ti"].xcom_pull(task_ids=self.capacity_task_id)
        dep = JobDeployment.model_validate(doc["deployment"])
        report = measure(dep, DrillContext.model_validate({k: doc[k] for k in DrillContext.model_fields}))
        faults = context["ti"].xcom_pull(task_ids=self.faults_task_id)
        if faults:  # the injected faults are part of what the drill measured
            report = {**report, "faults": faults}
        problems = verdict(report, doc.get("max_recovery_s"))
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            store.finish_drill(doc["drill_id"], report, "failed" if problems else "passed")
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


class MarkDrillFailedOperator(BaseOperator):
    """When a step before the verdict failed: close the drill record as failed (the run stays failed)."""

    def __init__(self, *, preflight_task_id: str = "preflight", ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.preflight_task_id = preflight_task_id
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> None:
        pre = context["ti"].xcom_pull(task_ids=self.preflight_task_id)
        if not pre:
            raise AirflowFailException("the preflight failed: no drill was started")
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            if store.drill_status(pre["drill_id"]) == "running":
                store.finish_drill(pre["drill_id"], {"error": "a step of the drill failed; see the DAG run"}, "failed")
        finally:
            store.conn.close()
        # Fail this leaf too: a run whose only failed leaf is upstream would otherwise end "success".
        raise AirflowFailException(f"drill #{pre['drill_id']} failed and is recorded as failed")
