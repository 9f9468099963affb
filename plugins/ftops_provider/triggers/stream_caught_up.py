"""StreamCaughtUpTrigger: wait until a streaming query has caught up with its input (back to its steady lag).

Caught up is :func:`spark_jobs.drills.progress.caught_up_now` (lag back to ``max_lag_files``: for a drill,
the band around the steady lag measured before the failure, :func:`spark_jobs.drills.probes.caught_up_lag_files`;
a batch committed after ``after_ts``; with ``output_dir`` and
``watermark_ms``, the input's watermark reached) on ``stable_polls`` consecutive polls (from the store: polls
that each saw a new batch). Fires
``{"status": "ok", "caught_up_s": ...}``, ``{"status": "timeout", "missing": [...]}`` or, when a drill's
abort probe fires, ``{"status": "aborted", ...}``.

Given ``stream`` (the query's name), the same definition is read from the history store when the stream
has written rows there since ``after_ts`` (:meth:`ft_core.store.stream_progress.StreamSince.caught_up`: the
backlog its driver counted after its newest batch): no disk shared with the driver. Otherwise the checkpoint,
input and output folders are read, poll by poll (:mod:`ftops_provider.triggers.stream_progress`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ftops_provider.triggers.abort_probes import abort_event
from ftops_provider.triggers.stream_progress import store_reader


class StreamCaughtUpTrigger(BaseTrigger):
    def __init__(self, checkpoint: str, input_dir: str, *, after_ts: float | None = None, stable_polls: int = 2,
                 max_lag_files: int = 0, output_dir: str | None = None, watermark_ms: int | None = None,
                 timeout_s: float = 600.0, poll_interval_s: float = 2.0, started_at: float | None = None, abort: dict | None = None,
                 stream: str | None = None, ftops_db_conn_id: str = "ftops_db"):
        super().__init__()
        self.stream, self.ftops_db_conn_id = stream, ftops_db_conn_id
        self.checkpoint = checkpoint
        self.input_dir = input_dir
        self.after_ts = after_ts
        self.stable_polls = stable_polls
        self.max_lag_files = max_lag_files
        self.output_dir, self.watermark_ms = output_dir, watermark_ms
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s
        self.started_at = time.time() if started_at is None else started_at
        self.abort = abort  # a drill's abort probes (spark_jobs.drills.probes), checked every poll

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.stream_caught_up.StreamCaughtUpTrigger", {
            "checkpoint": self.checkpoint, "input_dir": self.input_dir, "after_ts": self.after_ts,
            "stable_polls": self.stable_polls, "max_lag_files": self.max_lag_files, "output_dir": self.output_dir,
            "watermark_ms": self.watermark_ms, "timeout_s": self.timeout_s,
            "poll_interval_s": self.poll_interval_s,
            "started_at": self.started_at, "abort": self.abort,
            "stream": self.stream, "ftops_db_conn_id": self.ftops_db_conn_id,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        with store_reader(self.ftops_db_conn_id, self.stream) as reader:
            async for event in self._wait(reader):
                yield event
                return

    async def _wait(self, reader) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        after = self.after_ts or self.started_at
        streak, missing, last_seen = 0, "not polled yet", None
        while True:
            ok, missing, seen, source = await asyncio.to_thread(self._caught_up, reader, after)
            streak = 0 if not ok else streak + (seen != last_seen)  # from the store: stable over new batches
            if ok and seen == last_seen:
                missing = "caught up; no new micro-batch since to confirm it"
            last_seen = seen
            if streak >= self.stable_polls:
                yield TriggerEvent({"status": "ok", "caught_up_s": round(time.time() - after, 1),
                                    "source": source})
                return
            aborted = await abort_event(self.abort, self.ftops_db_conn_id)
            if aborted is not None:
                yield TriggerEvent(aborted)
                return
            if time.time() >= deadline:
                yield TriggerEvent({"status": "timeout", "timeout_s": self.timeout_s, "missing": [missing]})
                return
            await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))

    def _caught_up(self, reader, after: float) -> tuple[bool, str, float | None, str]:
        """(caught up, what is missing, what was seen, where): from the store when the stream wrote rows since
        ``after`` (seen: the newest batch's end, so ``stable_polls`` counts new batches, not the same row twice),
        else from the folders (seen: the poll's time)."""
        # the folders' definition checks the watermark only with an output folder: the store's does the same
        watermark = self.watermark_ms if self.output_dir else None
        since = reader.since(after) if reader is not None else None
        if since is not None:
            return (*since.caught_up(self.max_lag_files, watermark), since.last_end, "history store")
        from spark_jobs.drills.progress import caught_up_now

        ok, missing = caught_up_now(self.checkpoint, self.input_dir, after_ts=after, max_lag_files=self.max_lag_files,
                                    output_dir=self.output_dir, watermark_ms=self.watermark_ms)
        if reader is not None and reader.last_problem:
            missing = f"{reader.last_problem}; from the folders: {missing}"
        return ok, missing, time.time(), "folder"
