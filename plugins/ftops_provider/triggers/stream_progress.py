"""Where a trigger reads a stream's progress: the history store, or the job's folders as the fallback.

A driver ftops starts with the store's URL writes one row per micro-batch (``spark_jobs.runtime.progress_store``),
so a trigger reads the stream's progress there and needs no disk shared with the driver. A stream that has
never written a row (a driver started without ``FTOPS_DATABASE_URL``, or by an ftops before the store kept
progress) is read from its folders as before, and the trigger says so in its log. The reader keeps one
connection for the trigger's life; a poll that cannot reach the store is a poll that saw nothing (the next
one reconnects), not a failed wait.
"""

from __future__ import annotations

import logging

from ft_core.store.stream_progress import StreamSince

log = logging.getLogger(__name__)


class StreamProgressReader:
    """One stream's rows in the history store of Airflow connection ``conn_id`` (blocking calls: run them in a thread)."""

    def __init__(self, conn_id: str, stream: str):
        self.conn_id, self.stream = conn_id, stream
        self._store = None

    def reports(self) -> bool:
        """Whether the stream writes progress to the store (False, logged, when the store cannot say)."""
        try:
            return self._open().reports_progress(self.stream)
        except Exception as exc:  # noqa: BLE001 -- an unreachable store: the folders are the way left
            log.warning("cannot read %s's progress from the history store (%s): reading its folders", self.stream, exc)
            self.close()
            return False

    def since(self, after_ts: float) -> StreamSince | None:
        """The stream's batches after ``after_ts``; None when the store did not answer this time."""
        try:
            return self._open().progress_since(self.stream, after_ts)
        except Exception as exc:  # noqa: BLE001 -- a database restart costs a poll, not the wait
            log.warning("history store not readable (%s); trying again at the next poll", exc)
            self.close()
            return None

    def close(self) -> None:
        if self._store is not None:
            try:
                self._store.conn.close()
            except Exception:  # noqa: BLE001 -- a broken connection is closed already
                pass
            self._store = None

    def _open(self):
        if self._store is None:
            from ftops_provider.hooks.history import HistoryStoreHook

            self._store = HistoryStoreHook(self.conn_id).store()
        return self._store


def store_reader(conn_id: str, stream: str | None) -> StreamProgressReader | None:
    """A reader when ``stream`` is named and writes progress to the store; None: read the folders."""
    if not stream:
        return None
    reader = StreamProgressReader(conn_id, stream)
    if reader.reports():
        log.info("reading %s's progress from the history store", stream)
        return reader
    log.info("%s has written no progress to the history store (its driver has no FTOPS_DATABASE_URL): reading its "
             "folders, which this triggerer must share with the driver", stream)
    reader.close()
    return None
