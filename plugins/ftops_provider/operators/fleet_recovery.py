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
from spark_jobs.fleet_recovery.runs import LEASE_TTL_S, LeaseSeconds

PLAN_TASK = "plan_fleet"
LATE_CLOCK_S = 60.0  # a failure time this far ahead of now is refused (a clock or unit mistake)


def failure_time(text: str, now: float | None = None) -> float:
    """``failed_at``: epoch seconds or an ISO 8601 time (UTC unless it names its offset); empty: now. A time in the
    future (milliseconds given for seconds, say) is refused, naming it.

    >>> failure_time("1970-01-01T00:01:00"), failure_time("60.5")
    (60.0, 60.5)
    """
    from datetime import timezone

    from ft_core.errors import InputError

    now = time.time() if now is None else now
    text = (text or "").strip()
    if not text:
        return now
    try:
        value = float(text)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"failed_at: {text!r} is neither epoch seconds nor an ISO 8601 time",
                             field="failed_at") from None
        value = (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()
    if value > now + LATE_CLOCK_S:
        raise InputError(f"failed_at: {text!r} is in the future (epoch seconds, not milliseconds)", field="failed_at")
    return value


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

    template_fields = ("jobs", "failed_at", "arrivals", "replacement_s", "policy", "restart_s", "headroom", "lease_ttl_s")
    ui_color = "#fdecea"

    def __init__(self, *, jobs: str = "", failed_at: str = "", arrivals: str = "", replacement_s: Any = 60,
                 policy: str = "staged", restart_s: Any = 20, headroom: Any = 2.0, lease_ttl_s: Any = LEASE_TTL_S,
                 ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.jobs, self.failed_at, self.arrivals, self.replacement_s = jobs, failed_at, arrivals, replacement_s
        self.policy, self.restart_s, self.headroom, self.lease_ttl_s = policy, restart_s, headroom, lease_ttl_s
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
            try:
                headroom = float(self.headroom)
            except (TypeError, ValueError):
                headroom = float("nan")
            if not headroom > 1 or headroom > 1000:
                raise InputError("headroom: a number above 1 (a job must outpace its input) and at most 1000, got "
                                 f"{self.headroom!r}", field="headroom")
            arguments = dict(named=named, failed_at=failure_time(self.failed_at), arrivals=parse_arrivals(self.arrivals),
                             replacement_s=checked(PositiveSeconds, self.replacement_s, "replacement_s"),
                             policy=self.policy, restart_s=checked(Seconds, self.restart_s, "restart_s"),
                             headroom=headroom, lease_ttl_s=checked(LeaseSeconds, self.lease_ttl_s, "lease_ttl_s"))
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
    jobs' applications hold executors again, keeping the run's leases meanwhile; skips a stage with no job."""

    def __init__(self, *, stage: int, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.stage, self.ftops_db_conn_id = stage, ftops_db_conn_id

    def make_trigger(self, context: Any):
        from ftops_provider.triggers.fleet_stage import FleetStageTrigger
        from spark_jobs.fleet_recovery.runs import holder_of

        planned, jobs = _stage_jobs(context, self.stage)
        cores = int(round(planned["cores"].get(str(self.stage), 0)))
        waiting = planned["waiting"].get(str(self.stage), [])
        self.log.info("stage %d (%s) needs %d free cores on %s%s", self.stage, ", ".join(jobs), cores,
                      planned["master_ui"], f" and executors of {', '.join(waiting)}" if waiting else "")
        return FleetStageTrigger(planned["master_ui"], run_id=planned["run_id"], holder=holder_of(context["run_id"]),
                                 lease_ttl_s=planned.get("lease_ttl_s", LEASE_TTL_S),
                                 ftops_db_conn_id=self.ftops_db_conn_id, min_free_cores=cores, running_apps=waiting,
                                 timeout_s=self.timeout_s, poll_interval_s=self.poll_interval_s)


class RestartFleetStageOperator(BaseOperator):
    """Restart stage ``stage``'s jobs from their checkpoints and record each restart."""

    ui_color = "#e6f4ea"

    def __init__(self, *, stage: int, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.stage, self.ftops_db_conn_id = stage, ftops_db_conn_id

    def execute(self, context: Any) -> list[dict[str, Any]]:
        from airflow.sdk.log import mask_secret

        from spark_jobs.fleet_recovery.steps import restart_stage

        planned, jobs = _stage_jobs(context, self.stage)
        hook = HistoryStoreHook(self.ftops_db_conn_id)
        dsn = hook.dsn()
        mask_secret(dsn)
        store = hook.store()
        try:
            return restart_stage(store, planned["run_id"], jobs, context["run_id"], {"FTOPS_DATABASE_URL": dsn})
        finally:
            store.conn.close()


class FleetBackSensor(_DeferredWait):
    """Wait (deferred) until every restarted job is back; each one's time back is recorded as it comes."""

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", poll_interval_s: float = 3.0, **kwargs: Any):
        super().__init__(poll_interval_s=poll_interval_s, **kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def make_trigger(self, context: Any):
        from ftops_provider.triggers.fleet_back import FleetBackTrigger
        from spark_jobs.fleet_recovery.runs import holder_of

        planned = _planned(context)
        return FleetBackTrigger(planned["run_id"], holder=holder_of(context["run_id"]), timeout_s=self.timeout_s,
                                poll_interval_s=self.poll_interval_s, ftops_db_conn_id=self.ftops_db_conn_id)


class FinishFleetRecoveryOperator(BaseOperator):
    """Record the times back, resubmit any job still held down, release the leases, close the run; fails when a job
    is not back. The run is found in the store by the DAG run's id, so a planning task that failed after it opened the
    run (and held jobs down) is cleaned up too."""

    ui_color = "#e6f4ea"

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow.sdk.log import mask_secret

        from spark_jobs.fleet_recovery.steps import finish

        hook = HistoryStoreHook(self.ftops_db_conn_id)
        dsn = hook.dsn()
        mask_secret(dsn)
        store = hook.store()
        try:
            run_id = store.fleet_recovery_of(context["run_id"])
            if run_id is None:
                raise AirflowSkipException("no fleet recovery was opened in this run: nothing to finish")
            result = finish(store, run_id, context["run_id"], {"FTOPS_DATABASE_URL": dsn})
        finally:
            store.conn.close()
        for j in result["jobs"]:
            self.log.info("%s (priority %g, stage %s): back at %s s; planned %s s, predicted at its restart %s s",
                          j["job"], j["priority"], j["stage"], j["measured_back_s"], j["planned_back_s"],
                          j["predicted_back_s"])
        if result["status"] != "done":
            raise AirflowFailException(f"fleet recovery #{result['run_id']}: {result['outcome']}")
        return result
