"""The drill's abort probes as the triggers check them: at every poll of a drill's wait, the probes of
:class:`spark_jobs.drills.probes.Probes` (too long, a second domain lost, too far behind) run in a
thread; the first that fires ends the wait with ``{"status": "aborted", "probe": ..., "reason": ...}``.
A triggerer that does not see the job's folders bounds the primary's lag from the progress its driver wrote
to the history store (Airflow connection ``ftops_db_conn_id``)."""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Any

log = logging.getLogger(__name__)


def stored_lag_s(conn_id: str, stream: str | None, after_ts: float) -> float | None:
    """The stream's event-time lag from its newest rows since ``after_ts`` (None: no rows, or no store)."""
    if not stream:
        return None
    from ftops_provider.hooks.history import HistoryStoreHook

    try:
        store = HistoryStoreHook(conn_id).store()
    except Exception as exc:  # noqa: BLE001 -- an unreadable store leaves the probe unknown this poll
        log.warning("abort probe: history store not readable (%s)", exc)
        return None
    try:
        return store.progress_since(stream, after_ts).lag_s()
    finally:
        store.conn.close()


async def abort_event(probes: dict[str, Any] | None, conn_id: str = "ftops_db") -> dict[str, str] | None:
    """The event that aborts the wait now, or None (also when the wait watches no probes)."""
    if not probes:
        return None
    from spark_jobs.drills.probes import Probes

    p = Probes.model_validate(probes)
    # rows since shortly before capacity came back: a primary that stopped writing keeps its last known lag
    lag = partial(stored_lag_s, conn_id, p.primary_stream, (p.lag_after or p.t_fail) - 60)
    fired = await asyncio.to_thread(p.fired, lag)
    return None if fired is None else {"status": "aborted", "probe": fired[0], "reason": fired[1]}
