"""StoreWatchTrigger: a long watch in Airflow's triggerer that asks the history store (connection ``ftops_db``) one
question every ``poll_interval_s``, fires ``{"status": "ok", ...}`` with the answer as soon as there is one, or
``{"status": "timeout", ...}`` after ``timeout_s`` with none (the watch then ends and the DAG's next run starts one
again). A store that does not answer, or a question it cannot answer yet (not migrated, a restart mid-query), costs a
poll, not the watch. Subclasses say the question (:meth:`StoreWatchTrigger.ask`) and what the timeout missed.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

log = logging.getLogger(__name__)


class StoreWatchTrigger(BaseTrigger):
    watch = "store watch"  # the log's name for it
    nothing = "nothing found"  # what a timeout event says was missing

    def __init__(self, *, timeout_s: float = 1800.0, poll_interval_s: float = 15.0, started_at: float | None = None,
                 ftops_db_conn_id: str = "ftops_db"):
        super().__init__()
        self.timeout_s, self.poll_interval_s, self.ftops_db_conn_id = timeout_s, poll_interval_s, ftops_db_conn_id
        self.started_at = time.time() if started_at is None else started_at

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "timeout_s": self.timeout_s, "poll_interval_s": self.poll_interval_s, "started_at": self.started_at,
            "ftops_db_conn_id": self.ftops_db_conn_id})

    @abc.abstractmethod
    def ask(self, store) -> dict[str, Any] | None:
        """The answer to put in the event (None: nothing yet)."""

    def _poll(self) -> dict[str, Any] | None:
        from ftops_provider.hooks.history import HistoryStoreHook

        try:
            store = HistoryStoreHook(self.ftops_db_conn_id).store()
        except Exception as exc:  # noqa: BLE001 -- the store away for a while: the next poll tries again
            log.warning("%s: history store not reachable (%s)", self.watch, exc)
            return None
        try:
            return self.ask(store)
        except Exception as exc:  # noqa: BLE001 -- not migrated yet, a restart mid-query, a deployment unreadable
            log.warning("%s: poll failed (%s)", self.watch, exc)
            return None
        finally:
            store.conn.close()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        while True:
            found = await asyncio.to_thread(self._poll)
            if found:
                yield TriggerEvent({"status": "ok", **found})
                return
            if time.time() >= deadline:
                yield TriggerEvent({"status": "timeout", "missing": [self.nothing], "timeout_s": self.timeout_s})
                return
            await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))
