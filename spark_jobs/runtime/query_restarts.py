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

Each restart is appended to ``restarts`` in the run's ``_run.json`` (when, and the error in one line), and
the failure that ends a run is kept as ``failed``, so drills, the profiler and people see that the query
recovered by itself, or why it did not.
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


# What says best why a query failed, best first: a Python exception (a UDF's, a sink's: the user's code),
# Spark's stage failure, then any JVM exception.
_CAUSES = (re.compile(r"^[A-Z]\w*(Error|Exception): "), re.compile(r"Job aborted due to stage failure: "),
           re.compile(r"^[\w.]+(Error|Exception): "))


def error_summary(error: object) -> str:
    """One line that says what failed: the innermost Python ``...Error: message`` of the error's text, else
    Spark's stage failure, else the innermost JVM exception, else the first line; never the query plan after
    ``=== Streaming Query ===``. Generic wrapper lines (ending in ':') are skipped.

    >>> error_summary("Job aborted due to stage failure: task lost\\nRuntimeError: boom\\njava.io.IOException: x")
    'RuntimeError: boom'
    """
    text = str(error).split("=== Streaming Query ===")[0]
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().endswith(":")]
    for cause in _CAUSES:
        found = [line for line in lines if cause.search(line)]
        if found:
            return found[-1][:500]
    return (lines[0] if lines else type(error).__name__)[:500]


def record_restart(output: Path, error: object) -> int:
    """Append the restart to ``<output>/_run.json``; returns how many restarts the run has had."""
    doc = _descriptor(output)
    doc.setdefault("restarts", []).append({"at": time.time(), "error": error_summary(error)})
    write_json(output / "_run.json", doc)
    return len(doc["restarts"])


def record_failure(output: Path, error: object, why: str) -> None:
    """The failure that ended the run (not started again, ``why``), in ``<output>/_run.json``."""
    doc = _descriptor(output)
    doc["failed"] = {"at": time.time(), "error": error_summary(error), "why": why}
    write_json(output / "_run.json", doc)


def failures_since(outputs: dict[str, Path | None], since: float) -> dict[str, list[dict]]:
    """Per stream (``{"primary": OUTPUT, ...}``), its query's failures since ``since`` (epoch s), oldest first:
    each restart (``{"at", "error"}``) and the failure that ended the run (``"final": True``). A stream without
    a readable descriptor has none."""
    found = {}
    for role, output in outputs.items():
        try:
            doc = _descriptor(Path(output)) if output else {}
        except (OSError, ValueError):  # not started, or being replaced by its driver
            doc = {}
        events = list(doc.get("restarts", [])) + ([{**doc["failed"], "final": True}] if doc.get("failed") else [])
        found[role] = [e for e in events if e.get("at", 0) >= since]
    return found


def _descriptor(output: Path) -> dict:
    return json.loads((output / "_run.json").read_text())
