"""Changing a running job's redundancy level without restarting it (thesis 002's controller on Spark).

Problem: the controller (Algorithm 2) changes the redundancy level while the job runs. Applied by
resubmission (stop between micro-batches, start again from the checkpoint) every change cost about
four missed deadlines on this machine (``docs/benchmarks/redundancy.md``), more than the controller
could save.

Method: Spark's ``TaskSetManager`` reads ``spark.speculation.quantile`` and ``.multiplier`` from the
driver's SparkConf (``SparkContext.conf``, one live object) whenever it creates a task set, that is
for every stage of every micro-batch; only the speculation thread and ``minTaskRuntime`` are fixed
when the application starts (``TaskSchedulerImpl``). So a run started with ``--live-redundancy``
has speculation on (:func:`ft_core.redundancy.allocation.speculation_settings` with ``live=True``), and
:class:`LiveRedundancyListener`, in the driver, applies the level written to
``<output>/_redundancy/level.json`` (:func:`write_level`) after each micro-batch: the task sets
created after that use it. Every change applied is appended to ``<output>/_redundancy/applied.jsonl``
as ``{"after_batch": id, "level": L, "at": unix_s}`` (``-1``: at start); listener events arrive
asynchronously, so a change may reach one batch later than ``after_batch + 1``.

``SparkContext.conf`` is Spark-internal (``private[spark]``, reached through py4j); this was read off
Spark 4.3's bytecode, and ``tests/spark/test_fault_injection.py`` checks on real Spark that a level
written while the job runs turns speculative copies on.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from ft_core.errors import InputError
from ft_core.redundancy.allocation import speculation_settings
from spark_jobs.runtime.atomic_json import write_json
from spark_jobs.runtime.progress_listener import ProgressListener
from spark_jobs.pipeline.metrics import read_metrics

LEVEL_FILE = Path("_redundancy") / "level.json"
APPLIED_FILE = Path("_redundancy") / "applied.jsonl"


def write_level(output: Path, level: float) -> None:
    """Ask the run writing to ``output`` to use ``level`` from its next micro-batches (atomic)."""
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 <= level <= 1:
        raise InputError(f"redundancy level: must be a replication fraction in [0, 1], got {level!r}")
    write_json(Path(output) / LEVEL_FILE, {"level": float(level), "written_at": time.time()})


def read_level(output: Path) -> float | None:
    """The level last written for the run (None: none written)."""
    path = Path(output) / LEVEL_FILE
    return float(json.loads(path.read_text())["level"]) if path.exists() else None


def applied_levels(output: Path) -> list[dict]:
    """The changes the run applied, oldest first (JSON lines, like the run's metrics file)."""
    return read_metrics(Path(output) / APPLIED_FILE)


def level_of_batch(changes: list[dict], batch_id: int) -> float | None:
    """The level a batch ran at: the last change applied after an earlier batch."""
    level = None
    for change in changes:
        if change["after_batch"] < batch_id:
            level = change["level"]
    return level


class LiveRedundancyListener(ProgressListener):
    """Applies the level file to the driver's SparkConf after every micro-batch of ``query_name``."""

    def __init__(self, spark, output: Path, query_name: str):
        super().__init__([query_name])
        self.output = Path(output)
        self._conf = spark.sparkContext._jsc.sc().conf()  # the SparkConf task sets are created from
        self._applied: float | None = None
        self._lock = threading.Lock()

    def apply(self, after_batch: int) -> None:
        level = read_level(self.output)
        with self._lock:
            if level is None or level == self._applied:
                return
            for key, value in speculation_settings(level, live=True).items():
                self._conf.set(key, value)
            self._applied = level
            path = self.output / APPLIED_FILE
            with path.open("a") as fh:
                fh.write(json.dumps({"after_batch": after_batch, "level": level, "at": time.time()}) + "\n")

    def on_progress(self, progress) -> None:
        self.apply(progress.batchId)
