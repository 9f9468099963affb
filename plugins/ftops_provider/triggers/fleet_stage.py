"""FleetStageTrigger: a fleet recovery's wait for a stage's capacity (:class:`SparkCapacityTrigger`'s conditions:
free cores for the stage's held jobs, an executor for each application it kept waiting) that keeps the run's leases
while it waits (every third of their TTL, from the triggerer), so a slow returning worker never lets a held job's
lease lapse and the safety net resubmit it out of the plan's order. A store that does not answer costs a renewal,
not the wait.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from ftops_provider.triggers.spark_capacity import SparkCapacityTrigger


class FleetStageTrigger(SparkCapacityTrigger):
    def __init__(self, master_ui_url: str, *, run_id: int, holder: str, ftops_db_conn_id: str = "ftops_db",
                 **conditions: Any):
        super().__init__(master_ui_url, **conditions)
        self.run_id, self.holder, self.ftops_db_conn_id = run_id, holder, ftops_db_conn_id
        self._renewed = 0.0

    def serialize(self) -> tuple[str, dict[str, Any]]:
        _, kwargs = super().serialize()
        return ("ftops_provider.triggers.fleet_stage.FleetStageTrigger",
                {**kwargs, "run_id": self.run_id, "holder": self.holder, "ftops_db_conn_id": self.ftops_db_conn_id})

    async def _missing(self, client: httpx.AsyncClient, state: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        from spark_jobs.fleet_recovery.steps import LEASE_TTL_S

        if time.time() - self._renewed >= LEASE_TTL_S / 3:
            await asyncio.to_thread(self._renew)
        return await super()._missing(client, state)

    def _renew(self) -> None:
        from ftops_provider.hooks.history import HistoryStoreHook
        from spark_jobs.fleet_recovery.steps import renew_leases

        try:
            store = HistoryStoreHook(self.ftops_db_conn_id).store()
        except Exception as exc:  # noqa: BLE001 -- a database restart costs a renewal, not the wait
            self.log.warning("leases of fleet recovery #%s not renewed: %s", self.run_id, exc)
            return
        try:
            renew_leases(store, self.run_id, self.holder)
            self._renewed = time.time()
        except Exception as exc:  # noqa: BLE001 -- as above; a lease someone else holds shows at the next step
            self.log.warning("leases of fleet recovery #%s not renewed: %s", self.run_id, exc)
        finally:
            try:
                store.conn.close()
            except Exception:  # noqa: BLE001 -- a broken connection is closed already
                pass
