"""OrphanedFaultsTrigger: the safety net's watch in Airflow's triggerer: poll the fault journal every
``poll_interval_s`` for faults whose holder died (:meth:`ft_core.store.faults.FaultRecords.orphaned_faults`: open,
and their holder no longer holds the job's lease). Fires ``{"status": "ok", "orphaned": N}`` as soon as there is
one, or ``{"status": "timeout", ...}`` after ``timeout_s`` with none (:class:`~.store_watch.StoreWatchTrigger`).
"""

from __future__ import annotations

from typing import Any

from ftops_provider.triggers.store_watch import StoreWatchTrigger


class OrphanedFaultsTrigger(StoreWatchTrigger):
    watch = "safety net"
    nothing = "no orphaned fault"

    def ask(self, store) -> dict[str, Any] | None:
        found = len(store.orphaned_faults())
        return {"orphaned": found} if found else None
