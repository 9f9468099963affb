"""FleetLossTrigger: the fleet watch in Airflow's triggerer: every ``poll_interval_s``, look for jobs a lost failure
domain took down (:func:`spark_jobs.fleet_recovery.watch.find_losses`: the history store's fleet query, then the
candidates' masters). Fires ``{"status": "ok", "losses": [...]}`` (each a :class:`~spark_jobs.fleet_recovery.watch.Loss`
as a dict) as soon as there is one, or ``{"status": "timeout", ...}`` after ``timeout_s`` with none (the watch then
ends and the next one starts). A store or master that does not answer costs a poll, not the watch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

log = logging.getLogger(__name__)


class FleetLossTrigger(BaseTrigger):
    def __init__(self, *, timeout_s: float = 1800.0, poll_interval_s: float = 15.0, started_at: float | None = None,
                 ftops_db_conn_id: str = "ftops_db"):
        super().__init__()
        self.timeout_s, self.poll_interval_s, self.ftops_db_conn_id = timeout_s, poll_interval_s, ftops_db_conn_id
        self.started_at = time.time() if started_at is None else started_at

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.fleet_loss.FleetLossTrigger", {
            "timeout_s": self.timeout_s, "poll_interval_s": self.poll_interval_s, "started_at": self.started_at,
            "ftops_db_conn_id": self.ftops_db_conn_id})

    def _losses(self) -> list[dict[str, Any]]:
        from ftops_provider.hooks.history import HistoryStoreHook
        from spark_jobs.fleet_recovery.watch import find_losses

        try:
            store = HistoryStoreHook(self.ftops_db_conn_id).store()
        except Exception as exc:  # noqa: BLE001 -- the store away for a while: the next poll tries again
            log.warning("fleet watch: history store not reachable (%s)", exc)
            return []
        try:
            return [loss.model_dump() for loss in find_losses(store)]
        except Exception as exc:  # noqa: BLE001 -- not migrated yet, a restart mid-query, a deployment unreadable
            log.warning("fleet watch: poll failed (%s)", exc)
            return []
        finally:
            store.conn.close()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        while True:
            losses = await asyncio.to_thread(self._losses)
            if losses:
                yield TriggerEvent({"status": "ok", "losses": losses})
                return
            if time.time() >= deadline:
                yield TriggerEvent({"status": "timeout", "missing": ["no job lost"], "timeout_s": self.timeout_s})
                return
            await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))
