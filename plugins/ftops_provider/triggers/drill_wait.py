"""DrillWaitTrigger: one wait of a chaos drill, polled in Airflow's triggerer.

The wait's definition is the drill engine's (:class:`spark_jobs.drills.waits.DrillWatch`: its condition, and
at every poll the halt, the job's lease, renewed, and the abort probes); this trigger only runs its polls in a
thread every ``poll_interval_s`` until it is over, against the history store of connection ``ftops_db_conn_id``.
Fires ``{"status": "ok", "seen": {...}}``, ``{"status": "aborted", "probe": ..., "reason": ...}`` or
``{"status": "timeout", "missing": [...]}``. A triggerer restart resumes the same deadline (``started_at`` is
serialized) with a new watch (a streak of polls starts again).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


class DrillWaitTrigger(BaseTrigger):
    def __init__(self, state: dict[str, Any], wait: str, *, timeout_s: float = 600.0, poll_interval_s: float = 2.0,
                 started_at: float | None = None, ftops_db_conn_id: str = "ftops_db"):
        super().__init__()
        self.state, self.wait = state, wait
        self.timeout_s, self.poll_interval_s = timeout_s, poll_interval_s
        self.started_at = time.time() if started_at is None else started_at
        self.ftops_db_conn_id = ftops_db_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.drill_wait.DrillWaitTrigger", {
            "state": self.state, "wait": self.wait, "timeout_s": self.timeout_s, "poll_interval_s": self.poll_interval_s,
            "started_at": self.started_at, "ftops_db_conn_id": self.ftops_db_conn_id})

    def watch(self):
        from ftops_provider.hooks.history import HistoryStoreHook
        from spark_jobs.drills.engine import DrillState
        from spark_jobs.drills.waits import DrillWatch, StoreView

        view = StoreView(lambda: HistoryStoreHook(self.ftops_db_conn_id).store())
        return DrillWatch(DrillState.model_validate(self.state), self.wait, view)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        watch = self.watch()
        deadline = self.started_at + self.timeout_s
        missing = None
        try:
            while True:
                result = await asyncio.to_thread(watch.poll)
                if result.status == "pending" and result.missing != missing:  # the task's log says what it waits for
                    missing = result.missing
                    self.log.info("%s: waiting: %s", self.wait, missing)
                if result.status != "pending":
                    yield TriggerEvent(result.model_dump(exclude_none=True))
                    return
                if time.time() >= deadline:
                    yield TriggerEvent({"status": "timeout", "timeout_s": self.timeout_s, "missing": [result.missing]})
                    return
                await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))
        finally:
            watch.view.close()
