"""The fleet watch from Airflow (``ftops_fleet_watch``): wait, deferred, until a lost failure domain has taken jobs
down (:class:`~ftops_provider.triggers.fleet_loss.FleetLossTrigger`), then hand each master's loss to
``ftops_fleet_recovery`` (the DAG's ``recover`` task, one DAG run per loss).

:class:`FleetLossSensor` returns the fleet recovery confs, one per loss, with the run id that names the loss (a loss
seen again by the next watch finds its run there and is skipped, not started twice); a watch that ends with no loss
is skipped, and so is the run's ``recover``.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from ftops_provider.sensors.waits import _DeferredWait


class FleetLossSensor(_DeferredWait):
    """Watch the fleet for up to ``timeout_s`` (polls every ``poll_interval_s``); the losses found, as
    ``[{"trigger_run_id": ..., "conf": {...}}]`` for the DAG's mapped ``recover``."""

    ui_color = "#fdecea"

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", poll_interval_s: float = 15.0, **kwargs: Any):
        super().__init__(poll_interval_s=poll_interval_s, **kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def make_trigger(self, context: Any):
        from ftops_provider.triggers.fleet_loss import FleetLossTrigger

        return FleetLossTrigger(timeout_s=self.timeout_s, poll_interval_s=self.poll_interval_s,
                                ftops_db_conn_id=self.ftops_db_conn_id)

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        if not event or event.get("status") != "ok":
            raise AirflowSkipException("no job lost to a failure domain during the watch")
        from spark_jobs.fleet_recovery.watch import Loss

        out = []
        for loss in (Loss(**found) for found in event["losses"]):
            self.log.warning("failure domain lost on %s at %.0f (workers %s): jobs %s down; starting a fleet recovery",
                             loss.master_ui, loss.failed_at, ", ".join(loss.dead_workers), ", ".join(loss.jobs))
            out.append({"trigger_run_id": loss.run_id(), "conf": loss.conf()})
        return out
