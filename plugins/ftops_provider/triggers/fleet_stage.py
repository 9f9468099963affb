"""FleetStageTrigger: a fleet recovery's wait for a stage's capacity (:class:`SparkCapacityTrigger`'s conditions:
free cores for the stage's held jobs, an executor for each application it kept waiting) that keeps the run's leases
while it waits (every third of the run's lease TTL, from the triggerer), so a slow returning worker never lets a held job's
lease lapse and the safety net resubmit it out of the plan's order. The store is held as the drills' waits hold it
(:class:`spark_jobs.drills.waits.StoreView`): one that does not answer costs a renewal, not the wait.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from airflow.triggers.base import TriggerEvent

from ftops_provider.hooks.history import HistoryStoreHook
from ftops_provider.triggers.spark_capacity import SparkCapacityTrigger
from spark_jobs.drills.waits import StoreView


class FleetStageTrigger(SparkCapacityTrigger):
    def __init__(self, master_ui_url: str, *, run_id: int, holder: str, lease_ttl_s: float = 300.0,
                 ftops_db_conn_id: str = "ftops_db", **conditions: Any):  # 300: runs deferred before it was a Param
        super().__init__(master_ui_url, **conditions)
        self.run_id, self.holder, self.lease_ttl_s, self.ftops_db_conn_id = run_id, holder, lease_ttl_s, ftops_db_conn_id
        self._renewed = 0.0
        self._view = StoreView(lambda: HistoryStoreHook(ftops_db_conn_id).store())  # connects at its first renewal

    def serialize(self) -> tuple[str, dict[str, Any]]:
        _, kwargs = super().serialize()
        return ("ftops_provider.triggers.fleet_stage.FleetStageTrigger",
                {**kwargs, "run_id": self.run_id, "holder": self.holder, "lease_ttl_s": self.lease_ttl_s,
                 "ftops_db_conn_id": self.ftops_db_conn_id})

    async def _missing(self, client: httpx.AsyncClient, state: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        from spark_jobs.fleet_recovery.steps import renew_leases

        if time.time() - self._renewed >= self.lease_ttl_s / 3:
            renewed = await asyncio.to_thread(self._view.call, lambda st: renew_leases(st, self.run_id, self.holder) or 1)
            if renewed:
                self._renewed = time.time()
            else:  # the store is away: the next poll tries again
                self.log.warning("leases of fleet recovery #%s not renewed: %s", self.run_id, self._view.problem)
        return await super()._missing(client, state)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            async for event in super().run():
                yield event
        finally:
            self._view.close()
