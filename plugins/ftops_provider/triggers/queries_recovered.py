"""QueriesRecoveredTrigger: wait until every query of a recovery-units deployment's last failure is available
again (relative latency below 1.2, ``spark_jobs.recovery_units.latency``). Fires
``{"status": "ok", "query_recovered_s": {...}, "source": ...}`` or ``{"status": "timeout", "missing": [...]}``.

Where the units' progress is read is chosen at every poll, as for the drill's waits
(:mod:`ftops_provider.triggers.stream_progress`): the history store, when every unit the answer needs has
written its batches there since shortly before the failure, with when each watermark's input arrived
(a units driver started with ``FTOPS_DATABASE_URL``); else the units' progress files and the input folder,
which only a triggerer sharing the deployment's disk can read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ftops_provider.triggers.stream_progress import StreamProgressReader, store_reader

NORMAL_S = 30.0  # the steady lag is measured over this many seconds before the failure


def _from_folders(units_dir: str) -> dict[str, float | None]:
    from spark_jobs.recovery_units.recovery import query_recovery

    return query_recovery(units_dir, normal_s=NORMAL_S)


def _from_store(reader: StreamProgressReader, watch: dict, streams: dict[str, str]) -> dict[str, float | None] | None:
    from spark_jobs.recovery_units.recovery import RecoveryWatch

    w = RecoveryWatch.model_validate(watch)
    marks = reader.lag_marks([streams[u] for u in w.units()], w.failure_time - NORMAL_S - 10)
    if marks is None:
        return None
    return w.recovered({u: marks[streams[u]] for u in w.units()}, normal_s=NORMAL_S)


class QueriesRecoveredTrigger(BaseTrigger):
    """``watch`` (``RecoveryWatch`` as a dict: the failure's time and each query's failed upstream units) and
    ``streams`` (unit -> its stream in the history store) let the store answer; without them, or without
    ``ftops_db_conn_id``, the folders of ``units_dir`` do."""

    def __init__(self, units_dir: str, *, timeout_s: float = 600.0, poll_interval_s: float = 3.0,
                 started_at: float | None = None, watch: dict | None = None, streams: dict[str, str] | None = None,
                 ftops_db_conn_id: str | None = None):
        super().__init__()
        self.units_dir = units_dir
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s
        self.started_at = time.time() if started_at is None else started_at
        self.watch, self.streams, self.ftops_db_conn_id = watch, streams, ftops_db_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.queries_recovered.QueriesRecoveredTrigger", {
            "units_dir": self.units_dir, "timeout_s": self.timeout_s, "poll_interval_s": self.poll_interval_s,
            "started_at": self.started_at, "watch": self.watch, "streams": self.streams,
            "ftops_db_conn_id": self.ftops_db_conn_id,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        recovered: dict[str, float | None] = {}
        use_store = bool(self.watch and self.streams and self.ftops_db_conn_id)
        with store_reader(self.ftops_db_conn_id or "", self.units_dir if use_store else None) as reader:
            while True:
                recovered, source = await asyncio.to_thread(self._poll, reader, recovered)
                if recovered and all(v is not None for v in recovered.values()):
                    yield TriggerEvent({"status": "ok", "query_recovered_s": recovered, "source": source})
                    return
                if time.time() >= deadline:
                    missing = [q for q, v in recovered.items() if v is None] or ["no query measured"]
                    store = f" (history store: {reader.last_problem})" if reader and reader.last_problem else ""
                    yield TriggerEvent({"status": "timeout", "timeout_s": self.timeout_s, "query_recovered_s": recovered,
                                        "missing": [f"queries not available again: {', '.join(missing)}{store}"]})
                    return
                await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))

    def _poll(self, reader: StreamProgressReader | None,
              last: dict[str, float | None]) -> tuple[dict[str, float | None], str]:
        """(per query its time back, the source that answered): the store when it has every unit's rows, else
        the folders; a folder being written keeps the last answer for this poll."""
        if reader is not None:
            found = _from_store(reader, self.watch, self.streams)
            if found is not None:
                return found, "history store"
        try:
            return _from_folders(self.units_dir), "folder"
        except (OSError, ValueError) as exc:  # a progress file being written, or no shared disk: try again
            self.log.info("recovery not readable from the folders yet: %s", exc)
            return last, "folder"
