"""StreamCaughtUpTrigger: wait until a streaming query has caught up with its input (back to its steady lag).

Lag is :func:`ftops_provider.stream_lag.file_source_lag`: input files not yet processed in a committed
micro-batch, read from the query's checkpoint. Caught up = lag at most ``max_lag_files`` (the steady
lag measured before a failure; 0 for a query whose input has stopped) on ``stable_polls`` consecutive
polls, with a batch committed after ``after_ts`` (epoch seconds; so a query that has not restarted
since the failure does not count as caught up on its old commits). With ``output_dir`` and
``watermark_ms`` it also waits until a micro-batch ending after ``after_ts`` used an event-time watermark
of at least ``watermark_ms`` (the input's watermark when capacity came back): the drill's definition of
caught up, read from the query's own progress metrics. Fires ``{"status": "ok",
"caught_up_s": ...}`` or ``{"status": "timeout", "lag_files": n}``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ftops_provider.stream_lag import file_source_lag


class StreamCaughtUpTrigger(BaseTrigger):
    def __init__(self, checkpoint: str, input_dir: str, *, after_ts: float | None = None, stable_polls: int = 2,
                 max_lag_files: int = 0, output_dir: str | None = None, watermark_ms: int | None = None,
                 timeout_s: float = 600.0, poll_interval_s: float = 2.0, started_at: float | None = None):
        super().__init__()
        self.checkpoint = checkpoint
        self.input_dir = input_dir
        self.after_ts = after_ts
        self.stable_polls = stable_polls
        self.max_lag_files = max_lag_files
        self.output_dir, self.watermark_ms = output_dir, watermark_ms
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s
        self.started_at = time.time() if started_at is None else started_at

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.stream_caught_up.StreamCaughtUpTrigger", {
            "checkpoint": self.checkpoint, "input_dir": self.input_dir, "after_ts": self.after_ts,
            "stable_polls": self.stable_polls, "max_lag_files": self.max_lag_files, "output_dir": self.output_dir,
            "watermark_ms": self.watermark_ms, "timeout_s": self.timeout_s,
            "poll_interval_s": self.poll_interval_s,
            "started_at": self.started_at,
        })

    def _watermark_reached(self) -> bool:
        if self.watermark_ms is None or not self.output_dir:
            return True
        from spark_jobs.drills.progress import first_batch_reaching

        return first_batch_reaching(Path(self.output_dir), self.watermark_ms, self.after_ts or self.started_at) is not None

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        streak, lag = 0, None
        while True:
            try:
                lag = await asyncio.to_thread(file_source_lag, self.checkpoint, self.input_dir)
            except (OSError, ValueError) as exc:  # a checkpoint file being written: try again
                self.log.info("lag not readable yet: %s", exc)
                lag = None
            fresh = lag is not None and lag.last_commit_time is not None and \
                (self.after_ts is None or lag.last_commit_time >= self.after_ts)
            reached = await asyncio.to_thread(self._watermark_reached)
            streak = streak + 1 if (fresh and reached and lag.lag_files <= self.max_lag_files and lag.input_files > 0) else 0
            if streak >= self.stable_polls:
                yield TriggerEvent({"status": "ok", "caught_up_s": round(time.time() - (self.after_ts or self.started_at), 1),
                                    "last_committed_batch": lag.last_committed_batch, "input_files": lag.input_files})
                return
            if time.time() >= deadline:
                yield TriggerEvent({"status": "timeout", "timeout_s": self.timeout_s,
                                    "lag_files": None if lag is None else lag.lag_files,
                                    "last_committed_batch": None if lag is None else lag.last_committed_batch,
                                    "missing": [f"{'unknown' if lag is None else lag.lag_files} input files not processed, "
                                                f"output watermark {'reached' if reached else 'not yet at'} {self.watermark_ms}"
                                                + ("" if fresh else " (no batch committed since the wait began)")]})
                return
            await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))
