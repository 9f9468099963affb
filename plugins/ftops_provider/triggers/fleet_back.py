"""FleetBackTrigger: wait until every job a fleet recovery restarted is back (caught up with its input), polled in
Airflow's triggerer against the history store (:func:`spark_jobs.fleet_recovery.steps.back_times`: the jobs'
drivers write their micro-batches there, so no disk is shared with them). Each job's time back is recorded as soon
as a poll sees it. Fires ``{"status": "ok", "back": {job: ...}}`` or ``{"status": "timeout", "missing": [...]}``;
a store that does not answer costs polls, not the wait. A triggerer restart resumes the same deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


class FleetBackTrigger(BaseTrigger):
    def __init__(self, run_id: int, *, holder: str, timeout_s: float = 900.0, poll_interval_s: float = 3.0,
                 started_at: float | None = None, ftops_db_conn_id: str = "ftops_db"):
        super().__init__()
        self.run_id, self.holder, self.timeout_s, self.poll_interval_s = run_id, holder, timeout_s, poll_interval_s
        self.started_at = time.time() if started_at is None else started_at
        self.ftops_db_conn_id = ftops_db_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.fleet_back.FleetBackTrigger", {
            "run_id": self.run_id, "holder": self.holder, "timeout_s": self.timeout_s, "poll_interval_s": self.poll_interval_s,
            "started_at": self.started_at, "ftops_db_conn_id": self.ftops_db_conn_id})

    def _poll(self, store) -> tuple[dict[str, Any], list[str]]:
        from spark_jobs.fleet_recovery.back import back_times
        from spark_jobs.fleet_recovery.steps import renew_leases

        renew_leases(store, self.run_id, self.holder)
        back, missing = back_times(store, self.run_id)
        for job, b in back.items():
            store.fleet_back(self.run_id, job, b["back_at"], b["restart_delay_s"])
        return back, missing

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from ftops_provider.hooks.history import HistoryStoreHook
        from spark_jobs.drills.waits import StoreView

        view = StoreView(lambda: HistoryStoreHook(self.ftops_db_conn_id).store())  # one connection, reopened if lost
        deadline = self.started_at + self.timeout_s
        said = None
        try:
            while True:
                answer = await asyncio.to_thread(view.call, self._poll)
                back, missing = answer if answer is not None else ({}, [view.problem])
                if not missing:
                    yield TriggerEvent({"status": "ok", "back": back})
                    return
                if missing != said:
                    said = missing
                    self.log.info("waiting: %s", "; ".join(missing))
                if time.time() >= deadline:
                    yield TriggerEvent({"status": "timeout", "timeout_s": self.timeout_s, "missing": missing,
                                        "back": back})
                    return
                await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))
        finally:
            view.close()
