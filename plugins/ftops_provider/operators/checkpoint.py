"""Checkpoint-interval tuning (Chiron, paper 004) as Airflow steps: profiling copies per candidate interval,
the models and the recommendation, its validation, and the resubmission of the primary with the new interval
only when the recommendation validated.

- :class:`ProfileIntervalOperator` (in the ``ftops_profiling`` pool, one slot by default, so copies of the
  fleet's jobs do not compete for cores): one isolated copy of the job's workload per candidate interval, one
  after the other, with failures injected (``spark_jobs.profiling.run_profiling``), each profile kept as a file
  under ``<work_dir>/<job>/``;
- :class:`RecommendIntervalOperator`: the per-interval profiles merged into one profiles document (stored as
  a ``checkpoint`` profile), the recovery-time variant chosen by its error against the recovery times the
  copies measured (``variant="auto"``, :mod:`ft_core.checkpoint.variant_choice`), Chiron's quadratic models
  and optimiser, the recommended interval stored as a ``checkpoint`` plan; an infeasible bound is reported
  with the smallest achievable recovery time;
- :class:`ValidateIntervalOperator` (pool ``ftops_profiling``, so it runs under the profile's conditions): a
  copy at the recommended interval with the same failures, its measured recovery time against the predicted
  one; the validation is stored beside the plan (``ftops_checkpoint_validation``) with its verdict and reason;
- :func:`apply_decision`: apply only a validated recommendation (within ``max_recovery_error``, default 20%)
  and only when resubmission was asked for; otherwise the job's interval stays as it is and the reason is
  logged;
- resubmission: the trigger interval is not pinned by a checkpoint, so the primary restarts on the same
  checkpoint with the new interval. Two drivers on one checkpoint would corrupt it, so the old primary stops
  first, then the new one starts (:class:`ApplyIntervalOperator` takes the job's lease, kind
  ``checkpoint_change``, so no drill, recovery or replica change runs beside the restart, and records the
  new interval in the job's deployment; the DAG stops, resubmits, waits and :func:`release_apply_lease`
  gives the lease back on every path). A job busy with another experiment keeps its interval this run.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal

from airflow.sdk import BaseOperator

from ft_core.input.quantities import Fraction, PositiveSeconds, TaskCount
from ftops_provider.arguments import checked, checked_name
from ftops_provider.hooks.history import HistoryStoreHook
from ftops_provider.operators.fleet import pulled

log = logging.getLogger(__name__)


class ProfileIntervalOperator(BaseOperator):
    """Profile the candidate intervals (``interval_s``: one, or a list run one after the other): per interval a copy
    of the job's workload with ``failures`` driver kills. Returns one result per interval."""

    template_fields = ("job_name", "interval_s", "work_dir", "failures", "duration_s")

    def __init__(self, *, job_name: str, interval_s: float | str | list, work_dir: str, failures: int | str = 1,
                 duration_s: float | str = 60, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name, self.interval_s, self.work_dir = job_name, interval_s, work_dir
        self.failures, self.duration_s = failures, duration_s
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> list[dict[str, Any]]:
        from ftops_provider.operators.profiling import job_and_deployment
        from spark_jobs.profiling import ProfileConfig, run_profiling

        checked_name(self.job_name)
        given = self.interval_s if isinstance(self.interval_s, (list, tuple)) else [self.interval_s]
        intervals = [checked(PositiveSeconds, i, "interval_s") for i in given]
        failures = checked(TaskCount, self.failures, "failures")
        duration = checked(PositiveSeconds, self.duration_s, "duration_s")
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            _, dep = job_and_deployment(store, self.job_name)
        finally:
            store.conn.close()
        results = []
        for interval in intervals:
            work = Path(self.work_dir) / self.job_name / f"interval-{interval:g}"
            config = ProfileConfig(pipeline=dep.pipeline, params=dep.params, intervals_s=[interval], failures=failures,
                                   duration_s=duration, parallel=1, work_dir=work, **dep.profiling_settings())
            report = run_profiling(config, progress=lambda msg: self.log.info("%s", msg))
            for warning in report.warnings:
                self.log.warning("%s", warning)
            results.append({"interval_s": interval, "profiles": report.profiles, "raw": report.raw})
        return results


def merge_profiles(paths: list[str]) -> dict:
    """One profiles document from per-interval ones (same settings; each brings its interval's entry)."""
    docs = [json.loads(Path(p).read_text()) for p in paths]
    merged = {k: v for k, v in docs[0].items() if k != "profiles"}
    merged["profiles"] = sorted((entry for d in docs for entry in d["profiles"]), key=lambda e: e["checkpoint_interval_ms"])
    return merged


class RecommendIntervalOperator(BaseOperator):
    """Merge the profiles, choose the variant, plan with Chiron, store both; returns the recommendation."""

    template_fields = ("job_name", "max_recovery_s", "case", "variant")

    def __init__(self, *, job_name: str, profile_task_id: str = "profile_interval", max_recovery_s: float | str | None = None,
                 case: str = "max", variant: str = "auto", ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name, self.profile_task_id = job_name, profile_task_id
        self.max_recovery_s, self.case, self.variant = max_recovery_s, case, variant
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from ft_core.checkpoint.profiles import parse_profiles
        from ft_core.checkpoint.tuning import plan_checkpoint
        from ft_core.checkpoint.variant_choice import resolve_variant
        from ft_core.input_hash import input_hash

        checked_name(self.job_name)
        given = None if self.max_recovery_s in (None, "", "None") else checked(PositiveSeconds, self.max_recovery_s, "max_recovery_s")
        case = checked(Literal["min", "avg", "max"], self.case, "case")
        variant_arg = checked(Literal["auto", "paper_eq4", "eq2", "closed_form", "warmup_elapsed"], self.variant, "variant")
        doc = merge_profiles(_profile_paths(context, self.profile_task_id))
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            job = store.job(self.job_name)
            bound = given if given is not None else job.get("max_recovery_s")
            if not bound:
                raise ValueError(f"job {self.job_name!r} has no recovery-time bound: set max_recovery_s")
            store.save_profile(self.job_name, "checkpoint", doc, context["run_id"])
            parsed = parse_profiles(doc)
            variant, choice = resolve_variant(parsed, variant_arg)
            plan = plan_checkpoint(parsed, float(bound), case=case, variant=variant)
            payload = {**plan.model_dump(mode="json"), "variant_choice": choice.model_dump(mode="json") if choice else None}
            stored = store.save_plan(self.job_name, "checkpoint", algorithm=f"chiron {plan.variant}",
                                     objective=plan.checkpoint_interval_ms, optimal=False, payload=payload,
                                     input_hash=input_hash(doc, bound, case, variant_arg),
                                     parameters={"max_recovery_s": bound, "case": case, "variant": variant_arg},
                                     dag_run_id=context["run_id"])
        finally:
            store.conn.close()
        if choice is not None:
            self.log.info("variant %s", choice.reason)
        self.log.info("recommended checkpoint interval %.0f ms (predicted latency %.0f ms, recovery %.1f s; R^2 %s)",
                      plan.checkpoint_interval_ms, plan.predicted_latency_ms, plan.predicted_recovery_s, plan.r2)
        return {"plan_id": stored.plan_id, "checkpoint_interval_ms": plan.checkpoint_interval_ms,
                "predicted_latency_ms": plan.predicted_latency_ms, "predicted_recovery_s": plan.predicted_recovery_s,
                "r2": plan.r2, "max_recovery_s": float(bound), "case": case, "variant": plan.variant,
                "variant_reason": choice.reason if choice else "given"}


def _profile_paths(context: Any, profile_task_id: str) -> list[str]:
    """The per-interval profile files the profiling step of this job (the same map index) wrote."""
    results = pulled(context["ti"], profile_task_id) or []
    return [r["profiles"] for r in ([results] if isinstance(results, dict) else results) if r]


class ValidateIntervalOperator(BaseOperator):
    """Run the recommended interval as a profiling copy with failures; store measured against predicted
    recovery beside the plan; returns the verdict (``validated``, ``reason``) for :func:`apply_decision`."""

    template_fields = ("job_name", "work_dir", "failures", "duration_s", "max_recovery_error")

    def __init__(self, *, job_name: str, work_dir: str, failures: int | str = 1, duration_s: float | str = 60,
                 max_recovery_error: float | str = 0.2, recommend_task_id: str = "recommend",
                 profile_task_id: str = "profile_interval", ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name, self.work_dir = job_name, work_dir
        self.failures, self.duration_s, self.max_recovery_error = failures, duration_s, max_recovery_error
        self.recommend_task_id, self.profile_task_id = recommend_task_id, profile_task_id
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from ft_core.store.checkpoint_validations import CheckpointValidation
        from ftops_provider.operators.profiling import job_and_deployment
        from spark_jobs.profiling import ValidateConfig, validate_profiles

        checked_name(self.job_name)
        failures = checked(TaskCount, self.failures, "failures")
        duration = checked(PositiveSeconds, self.duration_s, "duration_s")
        bound = checked(Fraction, self.max_recovery_error, "max_recovery_error")
        rec = pulled(context["ti"], self.recommend_task_id)
        work = Path(self.work_dir) / self.job_name / "validation"
        profiles = Path(self.work_dir) / self.job_name / "profiles.json"
        profiles.parent.mkdir(parents=True, exist_ok=True)
        profiles.write_text(json.dumps(merge_profiles(_profile_paths(context, self.profile_task_id))))
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            _, dep = job_and_deployment(store, self.job_name)
        finally:
            store.conn.close()
        config = ValidateConfig(pipeline=dep.pipeline, params=dep.params, profiles=profiles, max_recovery_s=rec["max_recovery_s"],
                                case=rec["case"], variant=rec["variant"], failures=failures, duration_s=duration,
                                parallel=1, work_dir=work, max_recovery_error=bound,
                                **dep.profiling_settings())
        report = validate_profiles(config, progress=lambda msg: self.log.info("%s", msg))
        if round(report.validated_interval_ms) != round(rec["checkpoint_interval_ms"]):
            raise ValueError(f"validation ran {report.validated_interval_ms:g} ms, not the recommended "
                             f"{rec['checkpoint_interval_ms']:.0f} ms: the profiles changed between the steps")
        validation = CheckpointValidation(
            interval_ms=report.validated_interval_ms, variant=report.plan.variant, predicted_recovery_s=report.predicted_recovery_s,
            measured_recovery_s=report.measured_recovery_s, max_recovery_error=bound, validated=report.validated,
            reason=report.reason, report=report.model_dump(mode="json", exclude={"plan"}))
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            validation_id = store.save_checkpoint_validation(self.job_name, rec["plan_id"], validation, context["run_id"])
        finally:
            store.conn.close()
        self.log.info("%s", report.reason)
        return {"validation_id": validation_id, "validated": report.validated, "reason": report.reason,
                "checkpoint_interval_ms": report.validated_interval_ms, "predicted_recovery_s": report.predicted_recovery_s,
                "measured_recovery_s": report.measured_recovery_s, "recovery_error": report.recovery_error}


def apply_decision(validation: dict[str, Any] | None, resubmit: bool) -> tuple[bool, str]:
    """Whether to apply the recommendation, and why (logged): only a validated one, only when resubmission is on."""
    if not validation:
        apply, why = False, "no validation of the recommendation: the job's checkpoint interval is unchanged"
    elif not validation.get("validated"):
        apply, why = False, f"the recommendation is not applied, the job's checkpoint interval is unchanged: {validation.get('reason')}"
    elif not resubmit:
        apply, why = False, f"{validation.get('reason')}; resubmit is off, so the job's checkpoint interval is unchanged"
    else:
        apply, why = True, f"{validation.get('reason')}; applying {validation['checkpoint_interval_ms']:.0f} ms"
    log.info("%s", why)
    return apply, why


APPLY_LEASE_S = 900.0  # stop, resubmit and wait; released at the end, the expiry only matters if Airflow loses the run


def apply_holder(context: Any) -> str:
    from ftops_provider.leases import run_holder

    return run_holder(context["dag"].dag_id, context["run_id"])


def release_apply_lease(job: str, context: Any, conn_id: str = "ftops_db") -> bool:
    """Give back the lease the apply step took (a no-op when it took none)."""
    checked_name(job, field="job")
    store = HistoryStoreHook(conn_id).store()
    try:
        released = store.release_lease(job, apply_holder(context))
    finally:
        store.conn.close()
    if released:
        log.info("released the lease on %s", job)
    return released


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

        from airflow.sdk.exceptions import AirflowSkipException

        from ft_core.store.leases import BusyError

        checked_name(self.job_name)
        rec = pulled(context["ti"], self.recommend_task_id)
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            try:
                store.acquire_lease(self.job_name, "checkpoint_change", apply_holder(context), ttl_s=APPLY_LEASE_S)
            except BusyError as exc:
                raise AirflowSkipException(f"the interval is not applied this run: {exc}") from None
            job, dep = job_and_deployment(store, self.job_name)
            dep = dep.model_copy(update={"trigger_s": round(rec["checkpoint_interval_ms"] / 1000, 3)})
            fields = {k: job[k] for k in JobSpec.model_fields if k in job and k != "deployment"}
            store.register_job(JobSpec(**fields, deployment=dep.model_dump()))
            store.record_applied_plan(rec["plan_id"], self.job_name, "primary", None, dep.primary_master)
        finally:
            store.conn.close()
        return {"app_name": primary_app_name(self.job_name), "run_args": [str(a) for a in primary_run_argv(dep)],
                "master_ui": dep.primary_ui, "output": str(dep.primary_output), "trigger_s": dep.trigger_s}
