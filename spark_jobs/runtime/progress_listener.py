"""A streaming-query listener that only hears the micro-batch progress of named queries.

PySpark's ``StreamingQueryListener`` makes ``onQueryStarted``, ``onQueryProgress`` and
``onQueryTerminated`` abstract. Every ftops listener acts on progress alone (per-task metrics, the live
redundancy level, recovery units' progress logs), so this base implements the other two as no-ops once
and forwards the progress of the queries it was given to :meth:`ProgressListener.on_progress`.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql.streaming import StreamingQueryListener


class ProgressListener(StreamingQueryListener):
    """Calls :meth:`on_progress` with the progress of each micro-batch of ``query_names``."""

    def __init__(self, query_names: Iterable[str]):
        super().__init__()
        self.query_names = frozenset(query_names)

    def on_progress(self, progress) -> None:
        raise NotImplementedError

    def onQueryProgress(self, event) -> None:
        if event.progress.name in self.query_names:
            self.on_progress(event.progress)

    def onQueryStarted(self, event) -> None:
        """Not needed: a query's first progress says all ftops listeners use."""

    def onQueryTerminated(self, event) -> None:
        """Not needed: the driver that stops a query records why."""
