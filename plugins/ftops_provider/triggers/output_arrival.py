"""OutputArrivalTrigger: wait until a stream writes new output after ``after_ts`` (epoch seconds), e.g. the
first tentative outputs of a replica during a failure.

Given ``stream`` (its query name), new output is a micro-batch of the stream that ended after ``after_ts``
having written rows, read from the history store when the stream has written rows there since
``after_ts`` (:mod:`ftops_provider.triggers.stream_progress`): no disk shared with the driver. Otherwise the
sink folder (a file or table sink: one file per micro-batch) is read: at least ``min_files`` non-empty files
matching ``pattern`` modified after ``after_ts``. Fires ``{"status": "ok", "files": [...], "first_s": ...,
"source": "history store" | "folder"}`` or ``{"status": "timeout"}``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ftops_provider.triggers.abort_probes import abort_event
from ftops_provider.triggers.stream_progress import store_reader
from spark_jobs.drills.progress import new_outputs


class OutputArrivalTrigger(BaseTrigger):
    def __init__(self, folder: str, *, after_ts: float, pattern: str = "batch-*.jsonl", min_files: int = 1,
                 timeout_s: float = 300.0, poll_interval_s: float = 1.0, started_at: float | None = None, abort: dict | None = None,
                 stream: str | None = None, ftops_db_conn_id: str = "ftops_db"):
        super().__init__()
        self.folder = folder
        self.stream, self.ftops_db_conn_id = stream, ftops_db_conn_id
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
            "stream": self.stream, "ftops_db_conn_id": self.ftops_db_conn_id,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        with store_reader(self.ftops_db_conn_id, self.stream) as reader:
            async for event in self._wait(reader):
                yield event
                return

    async def _wait(self, reader) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        while True:
            found, source = await asyncio.to_thread(self._arrived, reader)
            if len(found) >= (self.min_files if source == "folder" else 1):
                yield TriggerEvent({"status": "ok", "files": [n for _, n in found], "first_s": round(found[0][0] - self.after_ts, 2),
                                    "source": source})
                return
            aborted = await abort_event(self.abort, self.ftops_db_conn_id)
            if aborted is not None:
                yield TriggerEvent(aborted)
                return
            if time.time() >= deadline:
                missing = f"{len(found)} of {self.min_files} new files matching {self.pattern} in {self.folder}" \
                    if source == "folder" else f"no micro-batch of {self.stream} with output since {self.after_ts:.0f}"
                if source == "folder" and reader is not None and reader.last_problem:
                    missing = f"{reader.last_problem}; {missing}"
                yield TriggerEvent({"status": "timeout", "timeout_s": self.timeout_s, "files": [n for _, n in found],
                                    "missing": [missing]})
                return
            await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))

    def _arrived(self, reader) -> tuple[list[tuple[float, str]], str]:
        """(time, name) of the new outputs so far, and where they were read: from the store the first batch with
        output, when the stream wrote rows since ``after_ts``; else the files (``min_files`` counts files)."""
        since = reader.since(self.after_ts) if reader is not None else None
        if since is None:
            return new_outputs(self.folder, self.pattern, self.after_ts), "folder"
        first = since.first_output_end
        return ([] if first is None else [(first, f"{self.stream}: first micro-batch with output")]), "history store"
