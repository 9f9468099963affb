"""A streaming-query listener that only hears the micro-batch progress of named queries.

PySpark's ``StreamingQueryListener`` makes ``onQueryStarted``, ``onQueryProgress`` and
``onQueryTerminated`` abstract. Every ftops listener acts on progress alone (per-task metrics, the live
redundancy level, recovery units' progress logs), so this base implements the other two as no-ops once
and forwards the progress of the queries it was given to :meth:`ProgressListener.on_progress`. Spark's listener
bus delivers a query's last progress after the query has stopped, so a driver that stops a query and then
reads what its listeners wrote first waits for that progress (:meth:`ProgressListener.wait_heard`).

PySpark hands a Python listener each progress converted field by field over py4j: one round trip per field,
source, sink and state operator, and per observed metric a lookup of ``PythonSQLUtils`` that searches every
jar on the classpath, for every listener. ftops's listeners instead ask the JVM for the progress's JSON once
and build the same ``StreamingQueryProgress`` from it with PySpark's own ``fromJson`` (the conversion Spark
Connect uses): :class:`_JsonProgressBridge`. A driver of examples/sensor_alerts.py (local[1], 2-s trigger,
100 rows a batch, its per-task metrics listener) went from 1.40-1.47 to 1.04-1.07 CPU-seconds per micro-batch,
its Python process from 0.13-0.15 to 0.01 (two runs each of ``scripts/driver-cpu.sh``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable

from pyspark.sql.streaming import StreamingQueryListener
from pyspark.sql.streaming.listener import JStreamingQueryListener, QueryProgressEvent


class _JsonProgressBridge(JStreamingQueryListener):
    """PySpark's py4j bridge, but a progress crosses as one JSON string, not field by field."""

    def onQueryProgress(self, jevent) -> None:
        progress = json.loads(jevent.progress().json())
        self.pylistener.onQueryProgress(QueryProgressEvent.fromJson({"progress": progress}))


class ProgressListener(StreamingQueryListener):
    """Calls :meth:`on_progress` with the progress of each micro-batch of ``query_names``."""

    def __init__(self, query_names: Iterable[str]):
        super().__init__()
        self.query_names = frozenset(query_names)
        self._heard = threading.Condition()
        self._last_heard: int | None = None

    def on_progress(self, progress) -> None:
        raise NotImplementedError

    @property
    def _jlistener(self):
        """The JVM side PySpark registers (``spark.streams.addListener``), around :class:`_JsonProgressBridge`."""
        if not hasattr(self, "_jlistenerobj"):
            from pyspark import SparkContext

            self._jlistenerobj = SparkContext._jvm.PythonStreamingQueryListenerWrapper(_JsonProgressBridge(self))
        return self._jlistenerobj

    def onQueryProgress(self, event) -> None:
        if event.progress.name in self.query_names:
            self.on_progress(event.progress)
            with self._heard:
                self._last_heard = max(event.progress.batchId, self._last_heard or 0)
                self._heard.notify_all()

    def wait_heard(self, batch_id: int | None, timeout_s: float) -> bool:
        """Wait until a progress of batch ``batch_id`` or later has been handled (at once for None); False if
        ``timeout_s`` passed first."""
        with self._heard:
            return self._heard.wait_for(lambda: batch_id is None or (self._last_heard is not None
                                                                      and self._last_heard >= batch_id), timeout=timeout_s)

    def onQueryStarted(self, event) -> None:
        """Not needed: a query's first progress says all ftops listeners use."""

    def onQueryTerminated(self, event) -> None:
        """Not needed: the driver that stops a query records why."""
