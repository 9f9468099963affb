"""Streams' micro-batch progress in the history store: written by the drivers, read by the triggers.

Problem: the triggers that wait on a stream (a replica's first tentative output after a fault, a primary
back to its steady lag) run in Airflow's triggerer. Reading the job's folders (output files, checkpoint)
from there holds only when the triggerer shares a disk with the drivers (issue 14, item 5).

Algorithm: each driver ftops starts writes one row per micro-batch (migration 007; the listener in
``spark_jobs.runtime.progress_store``): when the batch ended, the watermark it used, rows in and out, and the
file sources' backlog and the input's watermark after it. A trigger then asks one question of the rows after a moment
(:meth:`StreamProgressRecords.progress_since`): how many batches ended since, the newest one's backlog, the
highest watermark, the first batch with output. The drivers of a staged recovery's units also write when the
input behind each watermark arrived (migration 008), and :meth:`StreamProgressRecords.lag_marks` gives a
query's event-time lag over time, from which staged recovery judges when it is back. A write is one upsert, O(1) (a batch replayed after a
restart rewrites its row); a question is one query over the index (stream, batch_end), O(rows since).
Each stream's newest batch, and the job an attached job's query belongs to, are kept in ``ftops_stream`` by the
store's triggers (migration 014): the jobs pages' states read it, and :meth:`StreamProgressRecords.job_batches` finds a
job's streams there.
Old rows are pruned by the store's retention (:mod:`ft_core.store.retention`), not by the writers.

    >>> p = BatchProgress(stream="ftops-topk-primary", app_id="app-1", batch_id=3, batch_end=1.7e9,
    ...                   input_rows=200, output_rows=12, input_files=40, lag_files=1)
    >>> StreamSince(batches=1, last_end=p.batch_end, lag_files=p.lag_files, input_files=p.input_files,
    ...             watermark_ms=None, first_output_end=p.batch_end).caught_up(max_lag_files=2)
    (True, '')
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from ft_core.store.base import StoreBase



def iso_epoch_s(iso: str | None) -> float | None:
    """Epoch seconds of a Spark progress report's ISO time (``2026-11-26T10:00:00.000Z``); None stays None.

    >>> iso_epoch_s("1970-01-01T00:00:01.500Z")
    1.5
    """
    if not iso:
        return None
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


class BatchProgress(BaseModel):
    """One micro-batch of one stream, as its driver reports it (times are epoch seconds)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    stream: str = Field(min_length=1)
    app_id: str
    batch_id: int = Field(ge=0)
    role: str | None = None
    batch_end: float
    batch_start: float | None = None  # when the batch started (Spark's progress timestamp; migration 018)
    watermark_ms: int | None = None
    input_rows: int = Field(default=0, ge=0)
    output_rows: int = Field(default=0, ge=0)
    input_files: int | None = Field(default=None, ge=0)
    lag_files: int | None = Field(default=None, ge=0)
    watermark_arrived: float | None = None  # when the input carrying the watermark arrived (migration 008)
    input_watermark_ms: int | None = None  # the input's watermark when the row was written (migration 008)
    job: str | None = None  # the registered job whose query this is, when the stream's name does not say (attached)


@dataclass(frozen=True)
class StreamSince:
    """What a stream's rows since a moment say: batches ended, the backlog of the newest one that has it counted
    (a writer catching up counts it for its newest row only), the highest watermark, the end of the first batch
    that wrote output (None: none)."""

    batches: int
    last_end: float | None
    lag_files: int | None
    input_files: int | None
    watermark_ms: int | None
    first_output_end: float | None
    input_watermark_ms: int | None = None

    def lag_s(self) -> float | None:
        """Event-time seconds the stream's output watermark trails its input's (newest counts; None: unknown)."""
        if self.watermark_ms is None or self.input_watermark_ms is None:
            return None
        return max(0.0, (self.input_watermark_ms - self.watermark_ms) / 1000)

    def caught_up(self, max_lag_files: int, watermark_ms: int | None = None) -> tuple[bool, str]:
        """Whether the stream is caught up (a batch ended since the moment, its backlog at most ``max_lag_files``
        input files, and, given ``watermark_ms``, a watermark that reached it), and what is missing otherwise:
        the definition of ``spark_jobs.drills.progress.caught_up_now``, read from the store."""
        reached = watermark_ms is None or (self.watermark_ms is not None and self.watermark_ms >= watermark_ms)
        lag = self.lag_files
        if self.batches and reached and lag is not None and lag <= max_lag_files and self.input_files:
            return True, ""
        return False, (f"{'?' if lag is None else lag} input files not processed (steady: {max_lag_files}), output "
                       f"watermark {'reached' if reached else 'not yet at'} {watermark_ms}"
                       + ("" if self.batches else " (no batch ended since)"))


class StreamProgressRecords(StoreBase):
    """Streams' micro-batch progress (``ftops_stream_progress``)."""

    def record_batch(self, progress: BatchProgress) -> None:
        p = progress
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """INSERT INTO ftops_stream_progress (stream, app_id, batch_id, role, batch_end, watermark_ms, input_rows,
                                                      output_rows, input_files, lag_files, watermark_arrived,
                                                      input_watermark_ms, job, batch_start)
                   VALUES (%s, %s, %s, %s, to_timestamp(%s), %s, %s, %s, %s, %s, to_timestamp(%s), %s, %s, to_timestamp(%s))
                   ON CONFLICT (stream, app_id, batch_id) DO UPDATE SET batch_end = EXCLUDED.batch_end,
                       batch_start = EXCLUDED.batch_start,
                       watermark_ms = EXCLUDED.watermark_ms, input_rows = EXCLUDED.input_rows,
                       output_rows = EXCLUDED.output_rows, input_files = EXCLUDED.input_files,
                       lag_files = EXCLUDED.lag_files, watermark_arrived = EXCLUDED.watermark_arrived,
                       input_watermark_ms = EXCLUDED.input_watermark_ms, job = EXCLUDED.job, recorded_at = now()""",
                (p.stream, p.app_id, p.batch_id, p.role, p.batch_end, p.watermark_ms, p.input_rows, p.output_rows,
                 p.input_files, p.lag_files, p.watermark_arrived, p.input_watermark_ms, p.job, p.batch_start))

    def progress_since(self, stream: str, after_ts: float) -> StreamSince:
        """The stream's batches that ended after ``after_ts`` (epoch seconds), summed up."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT count(*), extract(epoch FROM max(batch_end)), max(watermark_ms),
                          extract(epoch FROM min(batch_end) FILTER (WHERE output_rows > 0)),
                          (array_agg(lag_files ORDER BY batch_end DESC) FILTER (WHERE lag_files IS NOT NULL))[1],
                          (array_agg(input_files ORDER BY batch_end DESC) FILTER (WHERE input_files IS NOT NULL))[1],
                          (array_agg(input_watermark_ms ORDER BY batch_end DESC)
                               FILTER (WHERE input_watermark_ms IS NOT NULL))[1]
                   FROM ftops_stream_progress WHERE stream = %s AND batch_end > to_timestamp(%s)""",
                (stream, after_ts))
            count, last, mark, first_output, lag, inputs, input_mark = cur.fetchone()
        return StreamSince(batches=count, last_end=None if last is None else float(last), lag_files=lag,
                           input_files=inputs, watermark_ms=mark,
                           first_output_end=None if first_output is None else float(first_output),
                           input_watermark_ms=input_mark)

    def lag_marks(self, streams: list[str], after_ts: float) -> dict[str, list[tuple[float, float]]]:
        """Per stream, (batch end, arrival of its watermark's input) of the batches that ended after ``after_ts``
        with an arrival recorded, in time order: the event-time lag's sawtooth
        (``spark_jobs.recovery_units.latency``); a stream without such rows maps to an empty list."""
        out: dict[str, list[tuple[float, float]]] = {s: [] for s in streams}
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT stream, extract(epoch FROM batch_end), extract(epoch FROM watermark_arrived)
                   FROM ftops_stream_progress
                   WHERE stream = ANY(%s) AND batch_end > to_timestamp(%s) AND watermark_arrived IS NOT NULL
                   ORDER BY stream, batch_end""", (list(streams), after_ts))
            for stream, end, arrived in cur.fetchall():
                out[stream].append((float(end), float(arrived)))
        return out

    def batches_since(self, streams: list[str], after_ts: float) -> dict[str, list[dict]]:
        """Per stream, its batches that ended after ``after_ts``, in time order: ``batch_id``, ``batch_end`` (epoch s),
        ``input_rows`` and ``arrived`` (epoch s of its input's arrival, None when not recorded): what a drill of an
        attached job measures its lag, its peak and its throughput from."""
        out: dict[str, list[dict]] = {s: [] for s in streams}
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT stream, batch_id, extract(epoch FROM batch_end), input_rows, extract(epoch FROM watermark_arrived)
                   FROM ftops_stream_progress WHERE stream = ANY(%s) AND batch_end > to_timestamp(%s)
                   ORDER BY stream, batch_end""", (list(streams), after_ts))
            for stream, batch_id, end, rows, arrived in cur.fetchall():
                out[stream].append({"batch_id": batch_id, "batch_end": float(end), "input_rows": rows,
                                    "arrived": None if arrived is None else float(arrived)})
        return out

    def job_batches(self, job: str, after_ts: float, until_ts: float | None = None) -> dict[str, list[dict]]:
        """The job's own streams (its primary's; a job attached to unchanged code: its queries', migration 014) and
        their batches that ended after ``after_ts`` (and by ``until_ts``, if given), in time order: ``batch_end`` (epoch s), ``input_rows``,
        ``lag_s`` (its output watermark behind its input's, None when not recorded or before its first watermark: Spark
        reports the epoch until a window closes) and ``batch_start`` (None: written before migration 018): the console's
        live charts.
        A stream without a batch since maps to an empty list; a job that never wrote one has no stream."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT stream FROM ftops_stream WHERE stream = 'ftops-' || %s || '-primary' "
                        "OR (job = %s AND role = 'attached') ORDER BY stream", (job, job))
            out: dict[str, list[dict]] = {stream: [] for (stream,) in cur.fetchall()}
            cur.execute(
                """SELECT stream, extract(epoch FROM batch_end), input_rows,
                          CASE WHEN watermark_ms > 0 THEN (input_watermark_ms - watermark_ms) / 1000.0 END,
                          extract(epoch FROM batch_start)
                   FROM ftops_stream_progress WHERE stream = ANY(%s) AND batch_end > to_timestamp(%s)
                     AND (%s::float8 IS NULL OR batch_end <= to_timestamp(%s::float8))
                   ORDER BY stream, batch_end""", (list(out), after_ts, until_ts, until_ts))
            for stream, end, rows, lag, start in cur.fetchall():
                out[stream].append({"batch_end": float(end), "input_rows": rows,
                                    "lag_s": None if lag is None else float(lag),
                                    "batch_start": None if start is None else float(start)})
        return out
