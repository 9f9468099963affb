"""The driver's half of progress through the history store: one row per micro-batch of its query.

Why: the triggers that wait on a stream (tentative outputs arriving, a primary caught up) read its progress
from the history store (:mod:`ft_core.store.stream_progress`), so Airflow's triggerer needs no disk shared with
the drivers (issue 14, item 5). A driver whose environment has ``FTOPS_DATABASE_URL`` (the operators and the
local stack give it the store's URL) runs a :class:`StoreProgressListener` beside its query.

How: the listener hears each micro-batch of its query on Spark's listener bus and only queues it; a writer
thread counts the file sources' backlog (from the checkpoint and the input folder, which the driver lists
anyway: :func:`spark_jobs.runtime.stream_lag.file_source_lag`) and writes the row, so neither the bus nor the
query ever waits for the database. A store that does not answer costs the rows of that time, never the
stream: the queue keeps the newest ``QUEUE_SIZE`` batches (the triggers read the newest rows), and the outage
is logged once, with the URL's password masked.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ft_core.store.stream_progress import BatchProgress, iso_epoch_s
from ft_core.store.url import ENV_VAR
from spark_jobs.runtime.progress_listener import ProgressListener

QUEUE_SIZE = 200
PRUNE_EVERY = 500  # batches between two prunes of the stream's old rows


def batch_row(p, *, app_id: str, role: str | None, output_rows: int) -> dict:
    """The row of one ``StreamingQueryProgress`` (its backlog is counted later, by the writer)."""
    start, mark = iso_epoch_s(p.timestamp), iso_epoch_s((p.eventTime or {}).get("watermark"))
    return {"stream": p.name, "app_id": app_id, "batch_id": p.batchId, "role": role,
            "batch_end": start + (p.batchDuration or 0) / 1000, "watermark_ms": None if mark is None else round(mark * 1000),
            "input_rows": max(0, p.numInputRows or 0), "output_rows": output_rows}


class StoreProgressListener(ProgressListener):
    """Writes each micro-batch of ``query_name`` to the history store at ``url`` (see the module docstring).
    ``output_rows(batch_id)`` says how many rows the batch's sink wrote; ``checkpoint`` and ``input_dir`` give
    the file sources' backlog. Call :meth:`close` when the query has stopped."""

    def __init__(self, url: str, query_name: str, *, app_id: str, role: str | None, output_rows: Callable[[int], int],
                 checkpoint: Path | None = None, input_dir: Path | None = None):
        super().__init__([query_name])
        self.url, self.stream, self.app_id, self.role = url, query_name, app_id, role
        self.output_rows, self.checkpoint, self.input_dir = output_rows, checkpoint, input_dir
        self._queue: queue.Queue[dict | None] = queue.Queue(maxsize=QUEUE_SIZE)
        self._heard = threading.Condition()
        self._last_heard: int | None = None
        self._writer = threading.Thread(target=self._drain, name=f"ftops-progress-{query_name}", daemon=True)
        self._writer.start()

    def on_progress(self, p) -> None:
        row = batch_row(p, app_id=self.app_id, role=self.role, output_rows=self.output_rows(p.batchId))
        while True:
            try:
                self._queue.put_nowait(row)
                break
            except queue.Full:  # the store has been away for a while: keep the newest batches
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    pass
        with self._heard:
            self._last_heard = p.batchId
            self._heard.notify_all()

    def close(self, last_batch: int | None = None, timeout_s: float = 10.0) -> None:
        """Once the progress of ``last_batch`` (the query's last) has been heard, write what is queued and stop
        the writer, within ``timeout_s`` in all: the bus delivers a query's last progress after the query ends."""
        deadline = time.monotonic() + timeout_s
        with self._heard:
            self._heard.wait_for(lambda: last_batch is None or (self._last_heard or -1) >= last_batch, timeout=timeout_s)
        self._queue.put(None)
        self._writer.join(max(0.0, deadline - time.monotonic()))

    def _drain(self) -> None:
        store, failing, written = None, False, 0
        while (row := self._queue.get()) is not None:
            try:
                store = store or _open(self.url)
                store.record_batch(BatchProgress(**row, **self._backlog()))
                written += 1
                if written % PRUNE_EVERY == 1:
                    store.prune_progress(self.stream)
                if failing:
                    _say(f"{self.stream}: the history store answers again; progress is written again")
                failing = False
            except Exception as exc:  # noqa: BLE001 -- any store failure must cost rows, not the stream
                if not failing:
                    _say(f"{self.stream}: progress not written to the history store ({_reason(exc)}); the stream goes "
                         "on, and rows are written again once the store answers")
                failing, store = True, _close(store)
        _close(store)

    def _backlog(self) -> dict[str, int | None]:
        if self.checkpoint is None or self.input_dir is None:
            return {"input_files": None, "lag_files": None}
        from spark_jobs.runtime.stream_lag import file_source_lag

        try:
            lag = file_source_lag(self.checkpoint, self.input_dir)
        except (OSError, ValueError):  # a checkpoint file being written: this row goes without a backlog
            return {"input_files": None, "lag_files": None}
        return {"input_files": lag.input_files, "lag_files": lag.lag_files}


def store_listener(spark, query_name: str, *, role: str, output_rows: Callable[[int], int], checkpoint: Path | None,
                   input_dir: Path | None) -> StoreProgressListener | None:
    """The listener for a driver whose environment names the history store (``FTOPS_DATABASE_URL``), added to
    ``spark``'s streams; None without it (the triggers then read the job's folders)."""
    url = os.environ.get(ENV_VAR)
    if not url:
        return None
    listener = StoreProgressListener(url, query_name, app_id=spark.sparkContext.applicationId, role=role,
                                     output_rows=output_rows, checkpoint=checkpoint, input_dir=input_dir)
    spark.streams.addListener(listener)
    return listener


def _open(url: str):
    from ft_core.store.connection import connect
    from ft_core.store.history import HistoryStore

    return HistoryStore(connect(url))


def _close(store) -> None:
    if store is not None:
        try:
            store.conn.close()
        except Exception:  # noqa: BLE001 -- a connection that broke is closed already
            pass


def _reason(exc: Exception) -> str:
    from ft_core.store.connection import redact

    text = str(exc).strip().splitlines()
    return redact(text[0]) if text else type(exc).__name__


def _say(message: str) -> None:
    print(f"progress_store: {message}", file=sys.stderr, flush=True)
