"""FleetLossTrigger: the fleet watch in Airflow's triggerer: every ``poll_interval_s``, look for jobs a lost failure
domain took down (:func:`spark_jobs.fleet_recovery.watch.find_losses`: the history store's fleet query, then the
candidates' masters). Fires ``{"status": "ok", "losses": [...]}`` (each a :class:`~spark_jobs.fleet_recovery.watch.Loss`
as a dict) once two polls in a row saw the same losses, or ``{"status": "timeout", ...}`` after ``timeout_s`` with
none (:class:`~.store_watch.StoreWatchTrigger`; a store or master that does not answer costs a poll, not the watch).

Why two polls: the jobs a domain took down are not all seen lost at the same poll (one ran a micro-batch a moment
before the failure and is not quiet yet), and a loss is recovered once, under a run named after it: firing at the
first sighting started a recovery of one job and left the other to a run that already existed (seen on real Spark).
"""

from __future__ import annotations

from typing import Any

from ftops_provider.triggers.store_watch import StoreWatchTrigger


class FleetLossTrigger(StoreWatchTrigger):
    watch = "fleet watch"
    nothing = "no job lost"

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._last_seen: list[tuple[str, list[str]]] | None = None  # the previous poll's losses (not serialized)

    def ask(self, store) -> dict[str, Any] | None:
        from spark_jobs.fleet_recovery.watch import find_losses

        losses = [loss.model_dump() for loss in find_losses(store)]
        seen = [(loss["master_ui"], loss["jobs"]) for loss in losses]
        settled, self._last_seen = bool(losses) and seen == self._last_seen, seen
        return {"losses": losses} if settled else None
