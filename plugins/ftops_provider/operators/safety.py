"""The safety net from Airflow: undo the faults whose holder died (:func:`spark_jobs.drills.reconcile.reconcile`).

:class:`ReconcileOperator` repairs once (the first step of every ``ftops_profile_and_plan`` run);
:class:`SafetyNetSensor` repairs, then watches the fault journal from the triggerer (deferred, no worker slot)
until a fault is orphaned or its watch ends, and repairs again: the watch of ``ftops_safety_net``, which runs
continuously, with experiment schedules off too (``FTOPS_SCHEDULES=manual``), because it is not an experiment.
A repair that failed fails the task, visibly (and notifies, in the DAG); the next run tries again.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from ftops_provider.hooks.history import HistoryStoreHook
from ftops_provider.sensors.waits import _DeferredWait


def repair(operator: BaseOperator, conn_id: str, context: Any) -> list[dict[str, Any]]:
    """Undo every orphaned fault in the store of ``conn_id`` (logged); fails the task when one could not be undone."""
    from airflow.sdk.log import mask_secret

    from spark_jobs.drills.reconcile import reconcile

    hook = HistoryStoreHook(conn_id)
    dsn = hook.dsn()
    mask_secret(dsn)
    store = hook.store()
    try:
        by = f"safety net {context['dag'].dag_id}/{context['run_id']} (pid {os.getpid()} on {socket.gethostname()})"
        repairs = reconcile(store, by=by, driver_env={"FTOPS_DATABASE_URL": dsn})
    finally:
        store.conn.close()
    for r in repairs:
        operator.log.warning("%s: %s %s (left by %s): %s", r.job, r.kind, r.target, r.holder or "-", r.outcome)
    if not repairs:
        operator.log.info("no orphaned fault: nothing to undo")
    failed = [r for r in repairs if not r.ok]
    if failed:
        raise AirflowFailException("; ".join(f"{r.job}: {r.kind} {r.target}: {r.outcome}" for r in failed))
    return [r.model_dump() for r in repairs]


class ReconcileOperator(BaseOperator):
    """Undo the faults whose holder died, once."""

    ui_color = "#e6f4ea"

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> list[dict[str, Any]]:
        return repair(self, self.ftops_db_conn_id, context)


class SafetyNetSensor(_DeferredWait):
    """Repair, then watch the fault journal (deferred) for up to ``timeout_s`` and repair again when a fault is
    orphaned; a watch that ends with nothing orphaned succeeds."""

    ui_color = "#e6f4ea"

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", poll_interval_s: float = 15.0, **kwargs: Any):
        super().__init__(poll_interval_s=poll_interval_s, **kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any] | None:
        repair(self, self.ftops_db_conn_id, context)
        return super().execute(context)

    def make_trigger(self, context: Any):
        from ftops_provider.triggers.orphaned_faults import OrphanedFaultsTrigger

        return OrphanedFaultsTrigger(timeout_s=self.timeout_s, poll_interval_s=self.poll_interval_s,
                                     ftops_db_conn_id=self.ftops_db_conn_id)

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        if event and event.get("status") == "ok":
            return {"repairs": repair(self, self.ftops_db_conn_id, context)}
        self.log.info("no fault was orphaned during the watch")
        return {"repairs": []}
