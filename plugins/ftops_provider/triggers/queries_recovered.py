"""QueriesRecoveredTrigger: wait until every query of a recovery-units deployment's last failure is available
again (relative latency below 1.2, ``spark_jobs.recovery_units.latency``), polling the units' progress files.
Fires ``{"status": "ok", "query_recovered_s": {...}}`` or ``{"status": "timeout", "missing": [...]}``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


def _recovered(units_dir: str) -> dict[str, float | None]:
    from spark_jobs.recovery_units.recovery import failed_queries, query_recovery

    return query_recovery(units_dir, failed_queries(units_dir))


class QueriesRecoveredTrigger(BaseTrigger):
    def __init__(self, units_dir: str, *, timeout_s: float = 600.0, poll_interval_s: float = 3.0,
                 started_at: float | None = None):
        super().__init__()
        self.units_dir = units_dir
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s
        self.started_at = time.time() if started_at is None else started_at

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.queries_recovered.QueriesRecoveredTrigger", {
            "units_dir": self.units_dir, "timeout_s": self.timeout_s, "poll_interval_s": self.poll_interval_s,
            "started_at": self.started_at,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        recovered: dict[str, float | None] = {}
        while True:
            try:
                recovered = await asyncio.to_thread(_recovered, self.units_dir)
            except (OSError, ValueError) as exc:  # a progress file being written: try again
                self.log.info("recovery not readable yet: %s", exc)
            if recovered and all(v is not None for v in recovered.values()):
                yield TriggerEvent({"status": "ok", "query_recovered_s": recovered})
                return
            if time.time() >= deadline:
                missing = [q for q, v in recovered.items() if v is None] or ["no query measured"]
                yield TriggerEvent({"status": "timeout", "timeout_s": self.timeout_s, "query_recovered_s": recovered,
                                    "missing": [f"queries not available again: {', '.join(missing)}"]})
                return
            await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))
