"""OrphanedFaultsTrigger: the safety net's watch in Airflow's triggerer: poll the fault journal every
``poll_interval_s`` for faults whose holder died (:meth:`ft_core.store.faults.FaultRecords.orphaned_faults`: open,
and their holder no longer holds the job's lease). Fires ``{"status": "ok", "orphaned": N}`` as soon as there is
one, or ``{"status": "timeout", ...}`` after ``timeout_s`` with none (the watch then ends and the next one starts).
A store that does not answer costs a poll, not the watch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

log = logging.getLogger(__name__)


class OrphanedFaultsTrigger(BaseTrigger):
    def __init__(self, *, timeout_s: float = 1800.0, poll_interval_s: float = 15.0, started_at: float | None = None,
                 ftops_db_conn_id: str = "ftops_db"):
        super().__init__()
        self.timeout_s, self.poll_interval_s, self.ftops_db_conn_id = timeout_s, poll_interval_s, ftops_db_conn_id
        self.started_at = time.time() if started_at is None else started_at

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.orphaned_faults.OrphanedFaultsTrigger", {
            "timeout_s": self.timeout_s, "poll_interval_s": self.poll_interval_s, "started_at": self.started_at,
            "ftops_db_conn_id": self.ftops_db_conn_id})

    def _orphaned(self) -> int | None:
        from ftops_provider.hooks.history import HistoryStoreHook

        try:
            store = HistoryStoreHook(self.ftops_db_conn_id).store()
        except Exception as exc:  # noqa: BLE001 -- the store away for a while: the next poll tries again
            log.warning("safety net: history store not reachable (%s)", exc)
            return None
        try:
            return len(store.orphaned_faults())
        except Exception as exc:  # noqa: BLE001 -- not migrated yet, or a restart mid-query
            log.warning("safety net: fault journal not readable (%s)", exc)
            return None
        finally:
            store.conn.close()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        while True:
            found = await asyncio.to_thread(self._orphaned)
            if found:
                yield TriggerEvent({"status": "ok", "orphaned": found})
                return
            if time.time() >= deadline:
                yield TriggerEvent({"status": "timeout", "missing": ["no orphaned fault"], "timeout_s": self.timeout_s})
                return
            await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))
