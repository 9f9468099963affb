"""Deferrable waits: each operator resolves what it needs (URLs from connections, the "since" time,
the workers known now) in a quick ``execute``, runs its trigger in place for a short while (``short_wait_s``,
30 s by default: a wait that ends by then never defers), and otherwise defers on the trigger in
``ftops_provider.triggers`` and frees its worker slot. The trigger's event is the task's return value
(XCom); a timeout event fails the task with :class:`WaitTimeout` naming what was still missing.

Why not defer at once: in Airflow 3.3 a trigger that fires within seconds of its deferral can lose its
task. The trigger puts the task back in the queue before the scheduler has processed the exit of the
process that deferred it; the scheduler then takes that exit for a task that "changed state externally"
and marks it failed (apache/airflow#71580, #72716; seen here under load, with the deferring process
taking 5 s to exit). Holding the slot for the first 30 s keeps short waits away from that window.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator

from ft_core.input.quantities import PositiveSeconds
from ftops_provider.arguments import checked


class WaitTimeout(Exception):
    """A deferred wait reached its timeout; the message says what was still missing."""


class DrillAborted(Exception):
    """A drill's wait ended it (an abort probe, the halt, the lease lost); the DAG's finish undoes its faults and
    records why."""


SHORT_WAIT_S = 30.0  # how long a wait runs in its worker slot before it defers (see the module docstring)


def first_event(trigger, within_s: float) -> dict[str, Any] | None:
    """The payload of ``trigger``'s first event if it comes within ``within_s`` seconds (its first
    check found the condition met, an abort probe fired, or it timed out), else None: the wait is real.

    >>> import asyncio
    >>> from airflow.triggers.base import BaseTrigger, TriggerEvent
    >>> class Ready(BaseTrigger):
    ...     def serialize(self): return ("Ready", {})
    ...     async def run(self):
    ...         yield TriggerEvent({"status": "ok"})
    >>> class Never(Ready):
    ...     async def run(self):
    ...         await asyncio.sleep(60)
    ...         yield TriggerEvent({"status": "ok"})
    >>> first_event(Ready(), within_s=1), first_event(Never(), within_s=0.1)
    ({'status': 'ok'}, None)
    """
    async def first() -> dict[str, Any] | None:
        events = trigger.run()
        try:
            return (await asyncio.wait_for(anext(events), within_s)).payload
        except (asyncio.TimeoutError, StopAsyncIteration):
            return None
        finally:
            await events.aclose()

    return asyncio.run(first())


class _DeferredWait(BaseOperator):
    """Base of the deferred waits: ``timeout_s`` (templated) bounds the wait, the trigger polls every
    ``poll_interval_s``; subclasses build the trigger in :meth:`make_trigger`."""

    ui_color = "#e8f1fb"
    template_fields: tuple[str, ...] = ("timeout_s",)

    def __init__(self, *, timeout_s: float | str = 600.0, poll_interval_s: float = 2.0, short_wait_s: float = SHORT_WAIT_S,
                 **kwargs):
        super().__init__(**kwargs)
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s
        self.short_wait_s = short_wait_s

    def make_trigger(self, context: Any):  # pragma: no cover - every subclass defines it
        raise NotImplementedError(f"{type(self).__name__} must define make_trigger")

    def execute(self, context: Any) -> dict[str, Any] | None:
        self.timeout_s = checked(PositiveSeconds, self.timeout_s, "timeout_s")
        trigger = self.make_trigger(context)
        # Defer only a wait that is still on after short_wait_s: one that fires soon after its deferral can
        # be marked failed by Airflow 3.3 (the module docstring).
        now = first_event(trigger, within_s=self.in_place_s(trigger))
        if now is not None:
            self.log.info("%s: over within %.0f s, no deferral", self.task_id, self.short_wait_s)
            return self.execute_complete(context, now)
        self.log.info("deferring on %s (timeout %.0f s)", trigger.serialize()[0].rsplit(".", 1)[-1], self.timeout_s)
        # The trigger fires its own timeout event; the defer timeout is only a backstop.
        self.defer(trigger=trigger, method_name="execute_complete", timeout=timedelta(seconds=self.timeout_s + 120))

    def in_place_s(self, trigger) -> float:
        """How long this wait runs in its slot before it defers (``short_wait_s``; a wait that knows when it
        ends may choose better)."""
        return self.short_wait_s

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        if event and event.get("status") == "aborted":  # a drill's wait: a probe, the halt or the lease
            context["ti"].xcom_push(key="abort_reason", value=event["reason"])
            context["ti"].xcom_push(key="abort_probe", value=event.get("probe"))
            raise DrillAborted(f"{self.task_id}: abort probe fired: {event['reason']}")
        if not event or event.get("status") != "ok":
            missing = "; ".join((event or {}).get("missing", ["no event"]))
            context["ti"].xcom_push(key="missing", value=missing)  # what a run's last step reports (a drill's finish)
            raise WaitTimeout(f"{self.task_id}: gave up after {self.timeout_s:.0f} s: {missing}")
        self.log.info("%s: done: %s", self.task_id, event)
        return event


class SparkCapacitySensor(_DeferredWait):
    """Wait for capacity on a standalone master (connection ``ftops_spark_master``): alive workers, free
    cores, new workers (not alive when the task started), executors of an application."""

    template_fields = ("app_name", "min_alive_workers", "min_free_cores", "min_new_workers", "min_app_executors", "timeout_s")

    def __init__(self, *, spark_master_conn_id: str = "ftops_spark_master", min_alive_workers: int = 0,
                 min_free_cores: int = 0, min_new_workers: int = 0, app_name: str | None = None,
                 min_app_executors: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.spark_master_conn_id = spark_master_conn_id
        self.min_alive_workers = min_alive_workers
        self.min_free_cores = min_free_cores
        self.min_new_workers = min_new_workers
        self.app_name = app_name
        self.min_app_executors = min_app_executors

    def make_trigger(self, context: Any):
        from ftops_provider.hooks.spark_master import SparkMasterHook
        from ftops_provider.triggers.spark_capacity import SparkCapacityTrigger

        hook = SparkMasterHook(self.spark_master_conn_id)
        known = [w["id"] for w in hook.alive_workers()] if int(self.min_new_workers) else []
        return SparkCapacityTrigger(hook.ui_url(), min_alive_workers=int(self.min_alive_workers),
                                    min_free_cores=int(self.min_free_cores), min_new_workers=int(self.min_new_workers),
                                    known_worker_ids=known, app_name=self.app_name,
                                    min_app_executors=int(self.min_app_executors), timeout_s=self.timeout_s,
                                    poll_interval_s=self.poll_interval_s)


class SparkAppSensor(_DeferredWait):
    """Wait until the application named ``app_name`` is ``state`` (RUNNING, or ``absent``) on the master. With
    ``no_room_after_s``, an application that waits that long for cores other applications hold fails the task at
    once, naming them (no retry: it would wait the same way until someone stops one or adds a worker)."""

    template_fields = ("app_name", "timeout_s")

    def __init__(self, *, app_name: str, spark_master_conn_id: str = "ftops_spark_master", state: str = "RUNNING",
                 min_cores: int = 1, no_room_after_s: float | None = None, **kwargs):
        super().__init__(**kwargs)
        self.app_name = app_name
        self.spark_master_conn_id = spark_master_conn_id
        self.state = state
        self.min_cores = min_cores
        self.no_room_after_s = no_room_after_s

    def make_trigger(self, context: Any):
        from ftops_provider.hooks.spark_master import SparkMasterHook
        from ftops_provider.triggers.spark_app import SparkAppTrigger

        return SparkAppTrigger(SparkMasterHook(self.spark_master_conn_id).ui_url(), self.app_name, state=self.state,
                               min_cores=self.min_cores, timeout_s=self.timeout_s, poll_interval_s=self.poll_interval_s,
                               no_room_after_s=self.no_room_after_s)

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowFailException

        if event and event.get("status") == "no_room":
            raise AirflowFailException(f"{self.task_id}: {event['reason']}: stop one of them (a job's replica: "
                                       "`ftops job stop JOB`) or add a worker to that master")
        return super().execute_complete(context, event)


class DrillWaitSensor(_DeferredWait):
    """One wait of a chaos drill (``wait``: steady, tentative, capacity_due, executors, caught_up), its definition
    the drill engine's (:mod:`spark_jobs.drills.waits`), deferred on :class:`DrillWaitTrigger`. The drill's state
    comes from the XCom of ``state_task_id`` (the step before the wait); a wait that fires an abort probe, meets
    the halt or finds the lease lost ends the task with :class:`DrillAborted` and pushes why (``abort_probe``,
    ``abort_reason``) for the drill's finish."""

    def __init__(self, *, wait: str, state_task_id: str, ftops_db_conn_id: str = "ftops_db", **kwargs):
        super().__init__(**kwargs)
        self.wait, self.state_task_id, self.ftops_db_conn_id = wait, state_task_id, ftops_db_conn_id

    def make_trigger(self, context: Any):
        from airflow.sdk.exceptions import AirflowSkipException

        from ftops_provider.triggers.drill_wait import DrillWaitTrigger

        from ftops_provider.operators.fleet import pulled

        state = pulled(context["ti"], self.state_task_id)  # the same job's drill in the DAG's mapped task group
        if not state:
            raise AirflowSkipException(f"{self.state_task_id} handed on no drill: nothing to wait for")
        if self.wait == "tentative" and not state["ctx"]["replica_output"]:
            raise AirflowSkipException("no replica runs (the plan replicates nothing): no tentative output to wait for")
        return DrillWaitTrigger(state, self.wait, timeout_s=self.timeout_s, poll_interval_s=self.poll_interval_s,
                                ftops_db_conn_id=self.ftops_db_conn_id)

    def in_place_s(self, trigger) -> float:
        """Capacity due within ``short_wait_s`` + 30 s is waited for in place, so no deferral ends within seconds of
        its start (the race in the module docstring); a later one defers with 30 s or more left."""
        if self.wait != "capacity_due":
            return self.short_wait_s
        left = trigger.state["capacity_due"] - time.time()
        return left + 5.0 if left < self.short_wait_s + 30.0 else self.short_wait_s
