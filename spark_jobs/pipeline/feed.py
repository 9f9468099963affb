"""The live input of a run: the seeded generator in a thread, appending one file per source every
``file_s`` (divided by ``speedup``), recording when each file became available and the input
watermark it carries (Spark's rule, :class:`~spark_jobs.pipeline.sample_input.InputWatermark`).

Drills and profiling runs measure lags and catch-up against these marks, so they come from the
writer itself, not from polling the folder.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from pydantic import BaseModel

from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.sample_input import InputWatermark, run_generator


class FeedMark(BaseModel):
    """Input file ``index`` (of every source) became available at ``wall``; the input watermark then."""

    index: int
    wall: float
    watermark_ms: int | None


class LiveFeed:
    """Feed ``input_dir`` in real time from a thread; :attr:`error` holds what stopped it early."""

    def __init__(self, workload: Workload, input_dir: Path, speedup: float = 1.0, name: str = "feed"):
        self.workload, self.input_dir, self.speedup, self.name = workload, input_dir, speedup, name
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self._watermark = InputWatermark(workload)
        self._marks: list[FeedMark] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            run_generator(self.workload, self.input_dir, None, self.speedup, log=self._mark, stop=self.stop_event)
        except BaseException as exc:  # reported by the caller's next check
            self.error = exc

    def _mark(self, index: int) -> None:
        self._watermark.add(index)
        with self._lock:
            self._marks.append(FeedMark(index=index, wall=time.time(), watermark_ms=self._watermark.value_ms))

    def marks(self) -> list[FeedMark]:
        with self._lock:
            return list(self._marks)

    def watermark_at(self, wall: float) -> int | None:
        """The input watermark of the files written by wall time ``wall``."""
        values = [m.watermark_ms for m in self.marks() if m.wall <= wall and m.watermark_ms is not None]
        return values[-1] if values else None

    def stop(self) -> int | None:
        """Stop writing; returns the final input watermark."""
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        return self.watermark_at(time.time())
