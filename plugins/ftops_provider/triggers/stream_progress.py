"""Where a trigger reads a stream's progress: the history store, else the job's folders.

A driver ftops starts with the store's URL writes one row per micro-batch (``spark_jobs.runtime.progress_store``),
so a trigger reads the stream's progress there and needs no disk shared with the driver. The choice is made
at every poll, from the rows since the moment the wait is about: when the stream has written rows since
then, they answer; when it has not (its driver has no ``FTOPS_DATABASE_URL``, or no batch has ended yet), or
the store does not answer, the folders are read, and a wait that times out names both. So a driver started
without the URL beside week-old rows of an earlier run is read from its folders, and a store that is away
for a while costs polls, not the wait.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from ft_core.store.stream_progress import StreamSince

log = logging.getLogger(__name__)


class StreamProgressReader:
    """One stream's rows in the history store of Airflow connection ``conn_id``, on one connection for the
    trigger's life (blocking calls: run them in a thread)."""

    def __init__(self, conn_id: str, stream: str):
        self.conn_id, self.stream = conn_id, stream
        self._store = None
        self.last_problem: str | None = None  # why the last poll had no answer from the store

    def since(self, after_ts: float) -> StreamSince | None:
        """The stream's batches after ``after_ts``; None when there are none or the store did not answer."""
        try:
            since = self._open().progress_since(self.stream, after_ts)
        except Exception as exc:  # noqa: BLE001 -- a database restart costs a poll, not the wait
            self.last_problem = f"history store not readable ({exc})"
            log.warning("%s; reading the folders this poll", self.last_problem)
            self.close()
            return None
        self.last_problem = None if since.batches else f"no micro-batch of {self.stream} in the history store since then"
        return since if since.batches else None

    def lag_marks(self, streams: list[str], after_ts: float) -> dict[str, list[tuple[float, float]]] | None:
        """Each of ``streams``' lag marks since ``after_ts`` (``HistoryStore.lag_marks``); None when one of them has
        none (its driver writes no arrivals) or the store did not answer."""
        try:
            marks = self._open().lag_marks(streams, after_ts)
        except Exception as exc:  # noqa: BLE001 -- a database restart costs a poll, not the wait
            self.last_problem = f"history store not readable ({exc})"
            log.warning("%s; reading the folders this poll", self.last_problem)
            self.close()
            return None
        silent = [s for s, rows in marks.items() if not rows]
        self.last_problem = f"no progress of {silent[0]} in the history store since then" if silent else None
        return None if silent else marks

    def close(self) -> None:
        if self._store is not None:
            with contextlib.suppress(Exception):  # a broken connection is closed already
                self._store.conn.close()
            self._store = None

    def _open(self):
        if self._store is None:
            from ftops_provider.hooks.history import HistoryStoreHook

            self._store = HistoryStoreHook(self.conn_id).store()
        return self._store


@contextlib.contextmanager
def store_reader(conn_id: str, stream: str | None) -> Iterator[StreamProgressReader | None]:
    """A reader for ``stream`` for the trigger's life, closed on every exit (None when no stream is named: the
    folders only). It connects at its first poll."""
    reader = StreamProgressReader(conn_id, stream) if stream else None
    try:
        yield reader
    finally:
        if reader is not None:
            reader.close()
