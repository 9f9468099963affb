"""What ftops attaches to every SparkSession of an application it did not write (issue 34, item 2): the
application's progress in the history store, a record of its streaming queries, and the watcher that lets a
drill fail a domain through the driver itself. Installed by :mod:`spark_jobs.attach.launcher` before the
application runs; the application never notices.

Per SparkContext (once, however many sessions the application builds):

- ``<control>/_run.json``: the application's id, its driver's UI and pid (what ``executor_faults`` and the
  cluster seam read to find its executors);
- an :class:`~spark_jobs.runtime.executor_faults.ExecutorFaultWatcher` on ``<control>``: the engine-native domain
  faults of a drill (the driver kills its own executors on the domain's hosts, asks for them back after);
- :class:`AttachedListener`: for every streaming query, whatever its name, one row per micro-batch in the history
  store (when ``FTOPS_DATABASE_URL`` is set: :mod:`spark_jobs.runtime.progress_store`, stream
  :func:`attached_stream`), with the batch's newest event time recorded as the arrival of its input (the input's
  own timestamps stand in for arrival: a drill's lag is the batch's end less its newest event time), and
  ``<control>/_queries.jsonl``: each query's start (id, run id, name, checkpoint folder) and end (the exception,
  if it failed).

    # install(job="clicks", control=Path("/jobs/clicks/control"))  # before the application's first getOrCreate
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from ft_core.store.stream_progress import iso_epoch_s
from ft_core.store.url import ENV_VAR
from spark_jobs.runtime.atomic_json import write_json
from spark_jobs.runtime.progress_listener import ProgressListener
from spark_jobs.runtime.progress_store import StoreProgressListener, batch_row, ran_a_batch

QUERIES_FILE = "_queries.jsonl"


def attached_stream(job: str, name: str | None, query_id: str) -> str:
    """The history store's stream of one query of an attached job: its name if it has one, else its id (stable
    across restarts: it is kept in the query's checkpoint).

    >>> attached_stream("clicks", "per-region", "3f1c"), attached_stream("clicks", None, "3f1c2a7b-aaaa")
    ('ftops-clicks-per-region', 'ftops-clicks-q3f1c2a7b')
    """
    return f"ftops-{job}-{name}" if name else f"ftops-{job}-q{query_id.replace('-', '')[:8]}"


class _QueryProgress(StoreProgressListener):
    """One query's rows (the store writer of ftops's own streams), for a query ftops did not write: rows out as
    the sink reports them, the batch's newest event time as its input's arrival."""

    def on_progress(self, p) -> None:
        if self._closed or not ran_a_batch(p):
            return
        newest = iso_epoch_s((p.eventTime or {}).get("max"))
        rows_out = getattr(p.sink, "numOutputRows", -1) if p.sink is not None else -1
        row = batch_row(p, app_id=self.app_id, role="attached", output_rows=max(0, rows_out or 0))
        self._offer({**row, "stream": self.stream, "job": self.job, **({"watermark_arrived": newest} if newest else {})})


class AttachedListener(ProgressListener):
    """Every query of the session: its progress rows (with the store's URL) and its starts and ends."""

    def __init__(self, spark, job: str, control: Path):
        super().__init__([])
        self.spark, self.job, self.control = spark, job, Path(control)
        self.url = os.environ.get(ENV_VAR)
        self._writers: dict[str, _QueryProgress] = {}
        self._lock = threading.Lock()

    def onQueryProgress(self, event) -> None:
        p = event.progress
        with self._lock:
            writer = self._writers.get(p.id)
            if writer is None and self.url:
                writer = self._writers[p.id] = _QueryProgress(
                    self.url, p.name or "", app_id=self.spark.sparkContext.applicationId, role="attached",
                    output_rows=lambda _b: 0, stream=attached_stream(self.job, p.name, p.id), job=self.job)
        if writer is not None:
            writer.on_progress(p)

    def onQueryStarted(self, event) -> None:
        self._record({"event": "started", "id": str(event.id), "run_id": str(event.runId), "name": event.name,
                      "stream": attached_stream(self.job, event.name, str(event.id)),
                      "checkpoint": self._checkpoint(str(event.id))})

    def onQueryTerminated(self, event) -> None:
        self._record({"event": "terminated", "id": str(event.id), "run_id": str(event.runId),
                      "exception": event.exception})

    def _checkpoint(self, query_id: str) -> str | None:
        """The query's resolved checkpoint folder (Spark's own, as it writes there: a local path for ``file:``, the
        URI otherwise), None when not reachable."""
        from urllib.parse import unquote, urlparse

        try:
            query = self.spark.streams.get(query_id)
            root = str(query._jsq.streamingQuery().resolvedCheckpointRoot()) if query is not None else None
        except Exception:  # noqa: BLE001 -- a query that ended meanwhile: its start is still recorded
            return None
        where = urlparse(root or "")
        return unquote(where.path) if where.scheme == "file" else root

    def _record(self, entry: dict) -> None:
        self.control.mkdir(parents=True, exist_ok=True)
        with self._lock, (self.control / QUERIES_FILE).open("a") as fh:
            fh.write(json.dumps({**entry, "at": time.time()}) + "\n")


_attached: set[str] = set()


def attach(spark, job: str, control: Path) -> None:
    """Attach ftops to ``spark``'s application once (see the module docstring)."""
    from spark_jobs.runtime.executor_faults import ExecutorFaultWatcher

    sc = spark.sparkContext
    if sc.applicationId in _attached:
        return
    _attached.add(sc.applicationId)
    control = Path(control)
    control.mkdir(parents=True, exist_ok=True)
    write_json(control / "_run.json", {"job": job, "app_id": sc.applicationId, "ui": sc.uiWebUrl, "pid": os.getpid(),
                                       "master": sc.master, "started_at": time.time()})
    spark.streams.addListener(AttachedListener(spark, job, control))
    ExecutorFaultWatcher(spark, control).start()


def install(job: str, control: Path) -> None:
    """Wrap ``SparkSession.Builder.getOrCreate`` so every session the application builds gets :func:`attach`."""
    from pyspark.sql import SparkSession

    original = SparkSession.Builder.getOrCreate
    if getattr(original, "_ftops_attached", False):
        return

    def get_or_create(builder):
        session = original(builder)
        attach(session, job, control)
        return session

    get_or_create._ftops_attached = True
    SparkSession.Builder.getOrCreate = get_or_create


def queries(control: Path) -> list[dict]:
    """The query events the application recorded, oldest first."""
    path = Path(control) / QUERIES_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
