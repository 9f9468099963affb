"""MomentTrigger: wait until a moment (epoch seconds), e.g. when replacement capacity is due after a
drill's failure, checking the drill's abort probes meanwhile. Fires ``{"status": "ok"}`` at the moment,
or ``{"status": "aborted", "probe": ..., "reason": ...}`` when a probe fires first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ftops_provider.triggers.abort_probes import abort_event


class MomentTrigger(BaseTrigger):
    def __init__(self, moment: float, *, poll_interval_s: float = 2.0, abort: dict | None = None):
        super().__init__()
        self.moment = moment
        self.poll_interval_s = poll_interval_s
        self.abort = abort

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.moment.MomentTrigger",
                {"moment": self.moment, "poll_interval_s": self.poll_interval_s, "abort": self.abort})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while time.time() < self.moment:
            aborted = await abort_event(self.abort)
            if aborted is not None:
                yield TriggerEvent(aborted)
                return
            await asyncio.sleep(max(0.0, min(self.poll_interval_s, self.moment - time.time())))
        yield TriggerEvent({"status": "ok"})
