"""The drill's abort probes as the triggers check them: at every poll of a drill's wait, the probes of
:class:`spark_jobs.drills.probes.Probes` (too long, a second domain lost, too far behind) run in a
thread; the first that fires ends the wait with ``{"status": "aborted", "probe": ..., "reason": ...}``."""

from __future__ import annotations

import asyncio
from typing import Any


async def abort_event(probes: dict[str, Any] | None) -> dict[str, str] | None:
    """The event that aborts the wait now, or None (also when the wait watches no probes)."""
    if not probes:
        return None
    from spark_jobs.drills.probes import Probes

    fired = await asyncio.to_thread(Probes.model_validate(probes).fired)
    return None if fired is None else {"status": "aborted", "probe": fired[0], "reason": fired[1]}
