"""The tasks of ``ftops_fleet_recovery`` (issue 33, item 3): plan and hold the lost jobs down, wait (deferred) for
each stage's cores on the master, restart the stage's jobs from their checkpoints, wait (deferred) until every job is
back, finish. The steps themselves are :mod:`spark_jobs.fleet_recovery.steps`; these operators only resolve their
arguments and connections and hand the steps the store.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from ft_core.input.quantities import PositiveSeconds, Seconds
from ftops_provider.arguments import bad_input_fails_the_task, checked, checked_name
from ftops_provider.hooks.history import HistoryStoreHook
from ftops_provider.sensors.waits import _DeferredWait

PLAN_TASK = "plan_fleet"
LEASE_MARGIN_S = 300.0  # a lease outlives the longest wait between two steps by this much


def lease_ttl_s(timeout_s: float) -> float:
    """How long the jobs' leases last without a step renewing them: a dead run's jobs are resubmitted by the safety
    net at most this long after its last step."""
    return float(timeout_s) + LEASE_MARGIN_S


def failure_time(text: str) -> float:
    """``failed_at``: epoch seconds or an ISO 8601 time; empty: now."""
    from ft_core.errors import InputError

    text = (text or "").strip()
    if not text:
        return time.time()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"failed_at: {text!r} is neither epoch seconds nor an ISO 8601 time", field="failed_at") from None


def _planned(context: Any) -> dict[str, Any]:
    planned = context["ti"].xcom_pull(task_ids=PLAN_TASK)
    if not planned:
        raise AirflowSkipException("no job was lost: nothing to recover in this run")
    return planned


def _stage_jobs(context: Any, stage: int) -> tuple[dict[str, Any], list[str]]:
    planned = _planned(context)
    jobs = planned["stages"].get(str(stage), [])
    if not jobs:
        raise AirflowSkipException(f"stage {stage} restarts no job")
    return planned, jobs


class PlanFleetRecoveryOperator(BaseOperator):
    """Find the lost jobs, take their leases, plan their restart order, record the run and hold the jobs down."""

    template_fields = ("jobs", "failed_at", "arrivals", "replacement_s", "policy", "restart_s", "headroom", "timeout_s")
    ui_color = "#fdecea"

    def __init__(self, *, jobs: str = "", failed_at: str = "", arrivals: str = "", replacement_s: Any = 60,
                 policy: str = "staged", restart_s: Any = 20, headroom: Any = 2.0, timeout_s: Any = 900,
                 ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.jobs, self.failed_at, self.arrivals, self.replacement_s = jobs, failed_at, arrivals, replacement_s
        self.policy, self.restart_s, self.headroom, self.timeout_s = policy, restart_s, headroom, timeout_s
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any] | None:
        from ft_core.errors import InputError
        from ft_core.fleet.recovery_order import POLICIES
        from spark_jobs.fleet_recovery.inputs import parse_arrivals
        from spark_jobs.fleet_recovery.steps import open_run

        with bad_input_fails_the_task():
            named = [checked_name(j.strip(), field="jobs") for j in str(self.jobs or "").split(",") if j.strip()]
            if self.policy not in POLICIES:
                raise InputError(f"policy: {self.policy!r} is not one of {', '.join(POLICIES)}", field="policy")
            headroom = float(self.headroom)
            if not headroom > 1:
                raise InputError(f"headroom: must be above 1 (a job must outpace its input), got {self.headroom!r}",
                                 field="headroom")
            arguments = dict(named=named, failed_at=failure_time(self.failed_at), arrivals=parse_arrivals(self.arrivals),
                             replacement_s=checked(PositiveSeconds, self.replacement_s, "replacement_s"),
                             policy=self.policy, restart_s=checked(Seconds, self.restart_s, "restart_s"),
                             headroom=headroom,
                             lease_ttl_s=lease_ttl_s(checked(PositiveSeconds, self.timeout_s, "timeout_s")))
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            with bad_input_fails_the_task():
                planned = open_run(store, dag_run_id=context["run_id"], **arguments)
        finally:
            store.conn.close()
        if planned is None:
            self.log.info("no registered job has lost its executors: nothing to recover")
            return None
        self.log.info("fleet recovery #%s (%s): stages %s; predicted priority-weighted mean time back %s s",
                      planned["run_id"], planned["order_rule"], planned["stages"], planned["predicted_weighted_mean_s"])
        return planned


class FleetStageCapacitySensor(_DeferredWait):
    """Wait (deferred) until the master has the free cores stage ``stage`` restarts its held jobs with, and its kept
    jobs' applications hold executors again; skips a stage with no job."""

    def __init__(self, *, stage: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.stage = stage

    def make_trigger(self, context: Any):
        from ftops_provider.triggers.spark_capacity import SparkCapacityTrigger

        planned, jobs = _stage_jobs(context, self.stage)
        cores = int(round(planned["cores"].get(str(self.stage), 0)))
        waiting = planned["waiting"].get(str(self.stage), [])
        self.log.info("stage %d (%s) needs %d free cores on %s%s", self.stage, ", ".join(jobs), cores,
                      planned["master_ui"], f" and executors of {', '.join(waiting)}" if waiting else "")
        return SparkCapacityTrigger(planned["master_ui"], min_free_cores=cores, running_apps=waiting,
                                    timeout_s=self.timeout_s, poll_interval_s=self.poll_interval_s)


class RestartFleetStageOperator(BaseOperator):
    """Restart stage ``stage``'s jobs from their checkpoints and record each restart."""

    template_fields = ("timeout_s",)
    ui_color = "#e6f4ea"

    def __init__(self, *, stage: int, timeout_s: Any = 900, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.stage, self.timeout_s, self.ftops_db_conn_id = stage, timeout_s, ftops_db_conn_id

    def execute(self, context: Any) -> list[dict[str, Any]]:
        from airflow.sdk.log import mask_secret

        from spark_jobs.fleet_recovery.steps import restart_stage

        planned, jobs = _stage_jobs(context, self.stage)
        hook = HistoryStoreHook(self.ftops_db_conn_id)
        dsn = hook.dsn()
        mask_secret(dsn)
        store = hook.store()
        try:
            return restart_stage(store, planned["run_id"], jobs, context["run_id"], lease_ttl_s(float(self.timeout_s)),
                                 {"FTOPS_DATABASE_URL": dsn})
        finally:
            store.conn.close()


class FleetBackSensor(_DeferredWait):
    """Wait (deferred) until every restarted job is back; each one's time back is recorded as it comes."""

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", poll_interval_s: float = 3.0, **kwargs: Any):
        super().__init__(poll_interval_s=poll_interval_s, **kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def make_trigger(self, context: Any):
        from ftops_provider.triggers.fleet_back import FleetBackTrigger

        planned = _planned(context)
        return FleetBackTrigger(planned["run_id"], timeout_s=self.timeout_s, poll_interval_s=self.poll_interval_s,
                                ftops_db_conn_id=self.ftops_db_conn_id)


class FinishFleetRecoveryOperator(BaseOperator):
    """Record the times back, resubmit any job still held down, release the leases, close the run; fails when a job
    is not back."""

    ui_color = "#e6f4ea"

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow.sdk.log import mask_secret

        from spark_jobs.fleet_recovery.steps import finish

        planned = _planned(context)
        hook = HistoryStoreHook(self.ftops_db_conn_id)
        dsn = hook.dsn()
        mask_secret(dsn)
        store = hook.store()
        try:
            result = finish(store, planned["run_id"], context["run_id"], {"FTOPS_DATABASE_URL": dsn})
        finally:
            store.conn.close()
        for j in result["jobs"]:
            self.log.info("%s (priority %g, stage %s): back at %s s; planned %s s, predicted at its restart %s s",
                          j["job"], j["priority"], j["stage"], j["measured_back_s"], j["planned_back_s"],
                          j["predicted_back_s"])
        if result["status"] != "done":
            raise AirflowFailException(f"fleet recovery #{result['run_id']}: {result['outcome']}")
        return result
