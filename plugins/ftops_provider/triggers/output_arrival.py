"""OutputArrivalTrigger: wait until a sink folder (a file or table sink: one file per micro-batch)
receives new output: at least ``min_files`` non-empty files matching ``pattern`` modified after
``after_ts`` (epoch seconds), e.g. the first tentative outputs of a replica during a failure.
Fires ``{"status": "ok", "files": [...], "first_s": ...}`` or ``{"status": "timeout"}``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ftops_provider.triggers.abort_probes import abort_event
from spark_jobs.drills.progress import new_outputs


class OutputArrivalTrigger(BaseTrigger):
    def __init__(self, folder: str, *, after_ts: float, pattern: str = "batch-*.jsonl", min_files: int = 1,
                 timeout_s: float = 300.0, poll_interval_s: float = 1.0, started_at: float | None = None, abort: dict | None = None):
        super().__init__()
        self.folder = folder
        self.after_ts = after_ts
        self.pattern = pattern
        self.min_files = min_files
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s
        self.started_at = time.time() if started_at is None else started_at
        self.abort = abort  # a drill's abort probes (spark_jobs.drills.probes), checked every poll

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.output_arrival.OutputArrivalTrigger", {
            "folder": self.folder, "after_ts": self.after_ts, "pattern": self.pattern, "min_files": self.min_files,
            "timeout_s": self.timeout_s, "poll_interval_s": self.poll_interval_s, "started_at": self.started_at, "abort": self.abort,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        while True:
            found = await asyncio.to_thread(new_outputs, self.folder, self.pattern, self.after_ts)
            if len(found) >= self.min_files:
                yield TriggerEvent({"status": "ok", "files": [n for _, n in found],
                                    "first_s": round(found[0][0] - self.after_ts, 2)})
                return
            aborted = await abort_event(self.abort)
            if aborted is not None:
                yield TriggerEvent(aborted)
                return
            if time.time() >= deadline:
                yield TriggerEvent({"status": "timeout", "timeout_s": self.timeout_s, "files": [n for _, n in found],
                                    "missing": [f"{len(found)} of {self.min_files} new files matching {self.pattern} in {self.folder}"]})
                return
            await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))
