"""The driver's half of progress through the history store: one row per micro-batch of its query.

Why: the triggers that wait on a stream (tentative outputs arriving, a primary caught up) read its progress
from the history store (:mod:`ft_core.store.stream_progress`), so Airflow's triggerer needs no disk shared with
the drivers (issue 14, item 5). A driver whose environment has ``FTOPS_DATABASE_URL`` (the operators and the
local stack give it the store's URL) runs a :class:`StoreProgressListener` beside its query.

How: the listener hears each micro-batch of its query on Spark's listener bus (the idle reports Spark sends
between batches are not batches and are skipped) and only queues it; a writer thread writes the rows, so
neither the bus nor the query waits for the database. Before writing, the writer counts the file sources'
backlog once for the newest queued batch (from the checkpoint and the input folder:
:func:`spark_jobs.runtime.stream_lag.file_source_lag`, a listing of the input folder like the one Spark's file
source makes every trigger, and a read of the source log) and reads the input's watermark from each source's
newest files (:func:`spark_jobs.pipeline.input_files.input_watermark`); both are taken when the row is written, a
moment after the batch ended. Costs and failures:

- the backlog count grows with the input folder (O(files) per batch, as Spark's own listing does): a stream
  over a folder of millions of files should keep it small (archive processed files, ``cleanSource``);
- a store that does not answer (``OperationalError``: down, restarting, unreachable) costs the rows of that
  time, never the stream: the queue keeps the newest ``QUEUE_SIZE`` batches, a reconnect is tried at most every
  ``RETRY_S``, and the outage is logged once (the URL's password masked), its end once;
- a store that refuses the rows for good (not migrated to version 8, say) is logged once and written to no more;
- anything else that fails a batch's row (a callback's surprise) costs that batch's row, said once: the writer goes on.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ft_core.errors import ExternalError
from ft_core.store.connection import reason
from ft_core.store.stream_progress import BatchProgress, iso_epoch_s
from ft_core.store.url import ENV_VAR
from spark_jobs.runtime.progress_listener import ProgressListener

QUEUE_SIZE = 200
RETRY_S = 5.0  # seconds between two connection attempts while the store is away
STATEMENT_TIMEOUT_MS = 10_000  # a stalled server fails a write, it does not hang the writer
CONNECT_OPTIONS = {"options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}", "keepalives": 1, "keepalives_idle": 30,
                   "keepalives_interval": 10, "keepalives_count": 3}


def ran_a_batch(p) -> bool:
    """Whether a progress report is of a micro-batch that ran (Spark also reports idle triggers, about every
    10 s, with no ``addBatch`` duration: nothing was committed)."""
    return "addBatch" in (p.durationMs or {})


def batch_end(p) -> float:
    """When a ``StreamingQueryProgress``'s batch ended (epoch s), by Spark's clock: its start plus its duration
    (not when a listener heard it, which lags under load)."""
    return iso_epoch_s(p.timestamp) + (p.batchDuration or 0) / 1000


def batch_row(p, *, app_id: str, role: str | None, output_rows: int) -> dict:
    """The row of one ``StreamingQueryProgress`` (its backlog is counted later, by the writer)."""
    mark = iso_epoch_s((p.eventTime or {}).get("watermark"))
    return {"stream": p.name, "app_id": app_id, "batch_id": p.batchId, "role": role, "batch_end": batch_end(p),
            "batch_start": iso_epoch_s(p.timestamp), "watermark_ms": None if mark is None else round(mark * 1000),
            "input_rows": max(0, p.numInputRows or 0), "output_rows": output_rows}


class StoreProgressListener(ProgressListener):
    """Writes each micro-batch of ``query_name`` to the history store at ``url`` (see the module docstring), as
    ``stream`` (default: the query name). ``output_rows(batch_id)`` says how many rows the batch's sink wrote;
    ``checkpoint`` and ``input_dir`` give the file sources' backlog; ``watermark_arrival(watermark_ms)``, when
    the driver knows it, when the input carrying a watermark arrived (epoch s). Call :meth:`close` when the
    query has stopped."""

    def __init__(self, url: str, query_name: str, *, app_id: str, role: str | None, output_rows: Callable[[int], int],
                 checkpoint: Path | None = None, input_dir: Path | None = None, stream: str | None = None,
                 watermark_arrival: Callable[[int], float | None] | None = None,
                 input_watermark: Callable[[], int | None] | None = None, job: str | None = None):
        super().__init__([query_name])
        self.url, self.stream, self.app_id, self.role = url, stream or query_name, app_id, role
        self.job = job  # written with each row when the stream's name does not say whose query it is
        self.output_rows, self.checkpoint, self.input_dir = output_rows, checkpoint, input_dir
        self.watermark_arrival, self.input_watermark = watermark_arrival, input_watermark
        self._queue: queue.Queue[dict | None] = queue.Queue(maxsize=QUEUE_SIZE)
        self._closed = False
        self._writer = threading.Thread(target=self._drain, name=f"ftops-progress-{query_name}", daemon=True)
        self._writer.start()

    def on_progress(self, p) -> None:
        if self._closed or not ran_a_batch(p):
            return
        self._offer({**batch_row(p, app_id=self.app_id, role=self.role, output_rows=self.output_rows(p.batchId)),
                     "stream": self.stream, **({"job": self.job} if self.job else {})})

    def close(self, last_batch: int | None = None, timeout_s: float = 10.0) -> None:
        """Once the progress of ``last_batch`` (the query's last) has been heard, write what is queued and stop
        the writer, within ``timeout_s`` in all: the bus delivers a query's last progress after the query ends."""
        deadline = time.monotonic() + timeout_s
        self.wait_heard(last_batch, timeout_s)
        self._closed = True
        self._offer(None)
        self._writer.join(max(0.0, deadline - time.monotonic()))

    def _offer(self, item: dict | None) -> None:
        """Queue without blocking; a full queue (the store has been away a while) drops its oldest batch."""
        while True:
            try:
                self._queue.put_nowait(item)
                return
            except queue.Full:
                with contextlib.suppress(queue.Empty):
                    self._queue.get_nowait()

    def _drain(self) -> None:
        writer, said_failure = _RowWriter(self.url, self.stream), False
        while True:
            rows = [self._queue.get()]
            with contextlib.suppress(queue.Empty):
                while rows[-1] is not None:
                    rows.append(self._queue.get_nowait())
            done = rows[-1] is None
            try:
                self._write(writer, [r for r in rows if r is not None])
            except Exception as exc:  # noqa: BLE001 - a surprise in one batch's row must not end the run's progress
                if not said_failure:
                    _say(f"{self.stream}: progress rows of batches {[r['batch_id'] for r in rows if r]} not written "
                         f"({type(exc).__name__}: {exc}); later batches are written")
                said_failure = True
            if done:
                writer.close()
                return

    def _write(self, writer: _RowWriter, rows: list[dict]) -> None:
        batches = [self._arrival(r) for r in rows]
        if batches:  # the backlog once, for the newest batch
            batches[-1] = {**batches[-1], **self._backlog()}
            writer.write([p for p in map(writer.valid, batches) if p is not None])

    def _arrival(self, row: dict) -> dict:
        mark = row.get("watermark_ms")
        if self.watermark_arrival is None or not mark or mark <= 0:  # Spark reports the epoch before any data
            return row
        try:
            return {**row, "watermark_arrived": self.watermark_arrival(mark)}
        except (OSError, ValueError):  # an input file being written: this row goes without it
            return row

    def _backlog(self) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        if self.input_watermark is not None:
            with contextlib.suppress(OSError, ValueError):  # a file being written: this row goes without it
                out["input_watermark_ms"] = self.input_watermark()
        if self.checkpoint is None or self.input_dir is None:
            return out
        from spark_jobs.runtime.stream_lag import file_source_lag

        try:
            lag = file_source_lag(self.checkpoint, self.input_dir)
        except (OSError, ValueError):  # a checkpoint file being written: this row goes without a backlog
            return out
        return {**out, "input_files": lag.input_files, "lag_files": lag.lag_files}


class _RowWriter:
    """The writer thread's connection to the store: reconnects after an outage (at most every ``RETRY_S``),
    gives up for good when the store refuses the rows themselves."""

    def __init__(self, url: str, stream: str):
        self.url, self.stream = url, stream
        self.store, self.written = None, 0
        self.failing_since: float | None = None
        self.last_try = 0.0
        self.refused = self.said_invalid = False

    def valid(self, row: dict) -> BatchProgress | None:
        """The row as the store takes it; None (said once) for a report Spark filled unexpectedly."""
        from pydantic import ValidationError

        try:
            return BatchProgress(**row)
        except ValidationError as exc:
            if not self.said_invalid:
                _say(f"{self.stream}: a progress report skipped ({exc.errors()[0]['loc']}: {exc.errors()[0]['msg']})")
            self.said_invalid = True
            return None

    def write(self, rows: list[BatchProgress]) -> None:
        import psycopg2

        if self.refused or (self.failing_since is not None and time.monotonic() - self.last_try < RETRY_S):
            return
        self.last_try = time.monotonic()
        try:
            self.store = self.store or _open(self.url)
            for row in rows:
                self.store.record_batch(row)
            self.written += len(rows)
        except (psycopg2.OperationalError, psycopg2.InterfaceError, ExternalError) as exc:  # away: try again later
            if self.failing_since is None:
                _say(f"{self.stream}: progress not written to the history store ({reason(exc)}); the stream goes "
                     "on, and rows are written again once the store answers")
            self.failing_since = self.failing_since or time.monotonic()
            self.close()
            return
        except psycopg2.Error as exc:  # the store refuses the rows themselves: trying again would only repeat it
            _say(f"{self.stream}: the history store refuses progress rows ({reason(exc)}); none are written for this "
                 "run (is the store migrated? `ftops db upgrade`)")
            self.refused = True
            self.close()
            return
        if self.failing_since is not None:
            _say(f"{self.stream}: the history store answers again; progress is written again")
        self.failing_since = None

    def close(self) -> None:
        if self.store is not None:
            with contextlib.suppress(Exception):  # a connection that broke is closed already
                self.store.conn.close()
            self.store = None


def store_listener(spark, query_name: str, *, role: str, output_rows: Callable[[int], int], checkpoint: Path | None,
                   input_dir: Path | None, input_watermark: Callable[[], int | None] | None = None,
                   ) -> StoreProgressListener | None:
    """The listener for a driver whose environment names the history store (``FTOPS_DATABASE_URL``), added to
    ``spark``'s streams; None without it (the triggers then read the job's folders)."""
    url = os.environ.get(ENV_VAR)
    if not url:
        return None
    listener = StoreProgressListener(url, query_name, app_id=spark.sparkContext.applicationId, role=role,
                                     output_rows=output_rows, checkpoint=checkpoint, input_dir=input_dir,
                                     input_watermark=input_watermark)
    spark.streams.addListener(listener)
    return listener


def _open(url: str):
    from ft_core.store.connection import connect
    from ft_core.store.history import HistoryStore

    return HistoryStore(connect(url, **CONNECT_OPTIONS))


def _say(message: str) -> None:
    print(f"progress_store: {message}", file=sys.stderr, flush=True)
