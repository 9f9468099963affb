"""A streaming-query listener that only hears the micro-batch progress of named queries.

PySpark's ``StreamingQueryListener`` makes ``onQueryStarted``, ``onQueryProgress`` and
``onQueryTerminated`` abstract. Every ftops listener acts on progress alone (per-task metrics, the live
redundancy level, recovery units' progress logs), so this base implements the other two as no-ops once
and forwards the progress of the queries it was given to :meth:`ProgressListener.on_progress`. Spark's listener
bus delivers a query's last progress after the query has stopped, so a driver that stops a query and then
reads what its listeners wrote first waits for that progress (:meth:`ProgressListener.wait_heard`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from pyspark.sql.streaming import StreamingQueryListener


class ProgressListener(StreamingQueryListener):
    """Calls :meth:`on_progress` with the progress of each micro-batch of ``query_names``."""

    def __init__(self, query_names: Iterable[str]):
        super().__init__()
        self.query_names = frozenset(query_names)
        self._heard = threading.Condition()
        self._last_heard: int | None = None

    def on_progress(self, progress) -> None:
        raise NotImplementedError

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
