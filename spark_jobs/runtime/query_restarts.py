"""Start a failed streaming query again from its checkpoint, a bounded number of times.

Why: on Spark 4.3 one lost executor can fail the whole query. A stateful stage re-run after the loss
can write shuffle output whose order-independent checksum differs from the first attempt (the partial
buffers of ``collect_list`` depend on the order rows were fetched in); Spark then refuses to roll back a
result stage that has already finished some tasks and aborts the micro-batch ("A shuffle map stage with
indeterminate output was failed and retried"). Nothing is lost: the checkpoint holds the batch's
offsets and the state before it, and ftops's sinks write each batch idempotently, so the query started
again replays that batch exactly once. This is Flink's failure-rate restart strategy: at most
``max_restarts`` restarts within ``window_s`` seconds, ``delay_s`` apart; one more failure inside the
window ends the run with the last error.

Each restart is appended to ``restarts`` in the run's ``_run.json`` (when, and the error's first line),
so drills, the profiler and people see that the query recovered by itself.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from spark_jobs.runtime.atomic_json import write_json


@dataclass
class RestartPolicy:
    """Failure-rate restarts: ``allow()`` says whether one more restart fits in the window."""

    max_restarts: int = 3
    window_s: float = 600.0
    delay_s: float = 2.0
    _recent: deque = field(default_factory=deque, repr=False)

    def allow(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        while self._recent and now - self._recent[0] > self.window_s:
            self._recent.popleft()
        if len(self._recent) >= self.max_restarts:
            return False
        self._recent.append(now)
        return True


_CAUSE = re.compile(r"^([\w.]+(Error|Exception): |Job aborted due to stage failure: )")


def error_summary(error: object) -> str:
    """One line that says what failed: the innermost ``...Error: message`` of the error's text (a Python
    UDF's or a sink's), else Spark's stage failure, else the first line; never the query plan that
    follows ``=== Streaming Query ===``. Generic wrapper lines (ending in ':') are skipped."""
    text = str(error).split("=== Streaming Query ===")[0]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if _CAUSE.match(line) and not line.endswith(":")]
    return (causes[-1] if causes else lines[0] if lines else type(error).__name__)[:500]


def record_restart(output: Path, error: object) -> int:
    """Append the restart to ``<output>/_run.json``; returns how many restarts the run has had."""
    path = output / "_run.json"
    doc = json.loads(path.read_text())
    doc.setdefault("restarts", []).append({"at": time.time(), "error": error_summary(error)})
    write_json(path, doc)
    return len(doc["restarts"])
