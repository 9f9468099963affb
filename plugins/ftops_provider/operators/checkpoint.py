"""Checkpoint-interval tuning (Chiron, paper 004) as Airflow steps: profiling copies per candidate interval,
the models and the recommendation, the resubmission of the primary with the new interval.

- :class:`ProfileIntervalOperator` (mapped over the candidate intervals; the ``ftops_profiling`` pool limits
  how many run at once): one isolated copy of the job's workload per interval, with failures injected
  (``spark_jobs.profiling.run_profiling``), its profile kept as a file;
- :class:`RecommendIntervalOperator`: the per-interval profiles merged into one profiles document (stored as
  a ``checkpoint`` profile), Chiron's quadratic models and optimiser, the recommended interval stored as a
  ``checkpoint`` plan; an infeasible bound is reported with the smallest achievable recovery time;
- resubmission: the trigger interval is not pinned by a checkpoint, so the primary restarts on the same
  checkpoint with the new interval. Two drivers on one checkpoint would corrupt it, so the old primary stops
  first, then the new one starts (:class:`ApplyIntervalOperator` records the new interval in the job's
  deployment; the DAG stops, resubmits and waits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from airflow.sdk import BaseOperator

from ft_core.input.quantities import PositiveSeconds, TaskCount
from ftops_provider.arguments import checked
from ftops_provider.hooks.history import HistoryStoreHook


class ProfileIntervalOperator(BaseOperator):
    """Profile one candidate interval: a copy of the job's workload with ``failures`` driver kills."""

    template_fields = ("job_name", "interval_s", "work_dir", "failures", "duration_s")

    def __init__(self, *, job_name: str, interval_s: float | str, work_dir: str, failures: int | str = 1,
                 duration_s: float | str = 60, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name, self.interval_s, self.work_dir = job_name, interval_s, work_dir
        self.failures, self.duration_s = failures, duration_s
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from ftops_provider.operators.profiling import job_and_deployment
        from spark_jobs.profiling import ProfileConfig, run_profiling

        interval = checked(PositiveSeconds, self.interval_s, "interval_s")
        failures = checked(TaskCount, self.failures, "failures")
        duration = checked(PositiveSeconds, self.duration_s, "duration_s")
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            _, dep = job_and_deployment(store, self.job_name)
        finally:
            store.conn.close()
        work = Path(self.work_dir) / f"interval-{interval:g}"
        config = ProfileConfig(pipeline=dep.pipeline, params=dep.params, intervals_s=[interval], failures=failures,
                               duration_s=duration, parallel=1, work_dir=work)
        report = run_profiling(config, progress=lambda msg: self.log.info("%s", msg))
        for warning in report.warnings:
            self.log.warning("%s", warning)
        return {"interval_s": interval, "profiles": report.profiles, "raw": report.raw}


def merge_profiles(paths: list[str]) -> dict:
    """One profiles document from per-interval ones (same settings; each brings its interval's entry)."""
    docs = [json.loads(Path(p).read_text()) for p in paths]
    merged = {k: v for k, v in docs[0].items() if k != "profiles"}
    merged["profiles"] = sorted((entry for d in docs for entry in d["profiles"]), key=lambda e: e["checkpoint_interval_ms"])
    return merged


class RecommendIntervalOperator(BaseOperator):
    """Merge the profiles, plan with Chiron, store both; returns the recommendation (or why none exists)."""

    template_fields = ("job_name", "max_recovery_s", "case")

    def __init__(self, *, job_name: str, profile_task_id: str = "profile_interval", max_recovery_s: float | str | None = None,
                 case: str = "avg", ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name, self.profile_task_id = job_name, profile_task_id
        self.max_recovery_s, self.case = max_recovery_s, case
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from ft_core.checkpoint.profiles import parse_profiles
        from ft_core.checkpoint.tuning import plan_checkpoint
        from ft_core.input_hash import input_hash

        given = None if self.max_recovery_s in (None, "", "None") else checked(PositiveSeconds, self.max_recovery_s, "max_recovery_s")
        case = checked(Literal["min", "avg", "max"], self.case, "case")
        results = [r for r in context["ti"].xcom_pull(task_ids=self.profile_task_id) or [] if r]
        doc = merge_profiles([r["profiles"] for r in results])
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            job = store.job(self.job_name)
            bound = given if given is not None else job.get("max_recovery_s")
            if not bound:
                raise ValueError(f"job {self.job_name!r} has no recovery-time bound: set max_recovery_s")
            store.save_profile(self.job_name, "checkpoint", doc, context["run_id"])
            plan = plan_checkpoint(parse_profiles(doc), float(bound), case=case)
            stored = store.save_plan(self.job_name, "checkpoint", algorithm=f"chiron {plan.variant}",
                                     objective=plan.checkpoint_interval_ms, optimal=False,
                                     payload=plan.model_dump(mode="json"), input_hash=input_hash(doc, bound, case),
                                     parameters={"max_recovery_s": bound, "case": case}, dag_run_id=context["run_id"])
        finally:
            store.conn.close()
        self.log.info("recommended checkpoint interval %.0f ms (predicted latency %.0f ms, recovery %.1f s; R^2 %s)",
                      plan.checkpoint_interval_ms, plan.predicted_latency_ms, plan.predicted_recovery_s, plan.r2)
        return {"plan_id": stored.plan_id, "checkpoint_interval_ms": plan.checkpoint_interval_ms,
                "predicted_latency_ms": plan.predicted_latency_ms, "predicted_recovery_s": plan.predicted_recovery_s,
                "r2": plan.r2}


class ApplyIntervalOperator(BaseOperator):
    """Record the recommended trigger interval in the job's deployment (the primary's next (re)submission
    uses it) and return the resubmission's arguments for the DAG's stop/submit/wait steps."""

    template_fields = ("job_name",)

    def __init__(self, *, job_name: str, recommend_task_id: str = "recommend", ftops_db_conn_id: str = "ftops_db",
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name, self.recommend_task_id = job_name, recommend_task_id
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from ft_core.store.history import JobSpec
        from ftops_provider.operators.profiling import job_and_deployment
        from spark_jobs.runtime.job_streams import primary_app_name, primary_run_argv

        rec = context["ti"].xcom_pull(task_ids=self.recommend_task_id)
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            job, dep = job_and_deployment(store, self.job_name)
            dep = dep.model_copy(update={"trigger_s": round(rec["checkpoint_interval_ms"] / 1000, 3)})
            fields = {k: job[k] for k in JobSpec.model_fields if k in job and k != "deployment"}
            store.register_job(JobSpec(**fields, deployment=dep.model_dump()))
            store.record_applied_plan(rec["plan_id"], self.job_name, "primary", None, dep.primary_master)
        finally:
            store.conn.close()
        return {"app_name": primary_app_name(self.job_name), "run_args": [str(a) for a in primary_run_argv(dep)],
                "master_ui": dep.primary_ui, "output": str(dep.primary_output), "trigger_s": dep.trigger_s}
