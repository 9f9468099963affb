"""Checkpoint-interval profiling runs on real Spark: the profiling step of Chiron (paper 004, Sec. IV-A).

Problem: Chiron chooses a checkpoint interval from profiling runs: isolated copies of the job, one per
candidate interval, all reading the same stream, each measured for average and maximum ingress,
average end-to-end latency, recovery after injected failures and warm-up (Sec. IV-A; three failures
per run, Sec. V-A). :mod:`ft_core.checkpoint_tuning` plans from the resulting profiles document
(:mod:`ft_core.checkpoint_profiles`); this module produces it on Spark Structured Streaming and
validates a recommendation against a measured run.

**The checkpoint configuration is a vector** (:class:`CheckpointVector`). Spark has no single
checkpoint interval: offsets, commits and state deltas are written every micro-batch, so the
*trigger interval* is Chiron's CI and the profiled dimension; state snapshots every
``minDeltasForSnapshot`` deltas, the state-store provider and RocksDB changelog checkpointing change
what each commit and each restore costs, and are held fixed for one profiling run (they are recorded
in the document's description and the raw file). A checkpoint *pins* three settings in its offset log
(``offsets/<n>``, field ``conf``): ``spark.sql.shuffle.partitions``, the state-store provider and the
multiple-watermark policy. A job restarted from the same checkpoint keeps the pinned values whatever it
is started with, so a plan that changes one of them needs a new checkpoint lineage (in OSS Spark: a new
checkpoint folder and a replay of the input); :func:`lineage_check` says which, and can read the
pinned values from a running job's checkpoint (:func:`pinned_settings`). The trigger interval and
``minDeltasForSnapshot`` are not pinned: a restart on the same checkpoint applies them.

**Method.** One seeded input folder (:mod:`spark_jobs.workloads.generator`) is fed in real time by a
thread that records when each file became available and the input watermark it carries (Spark's rule,
:class:`~spark_jobs.workloads.generator.InputWatermark`). Every (interval, repetition) is a *copy*:
``spark_jobs.run_workload`` through ``spark-submit`` (:func:`spark_jobs.workload_cli.launch_run`, own
process group) with its own output, checkpoint, metrics and event-log folders; ``parallel`` copies
run at once, the rest are queued (Chiron runs them side by side; on a small machine they compete for
cores, which the report states). Each copy:

1. runs until it is *steady*: three consecutive micro-batches (after its cold first one) whose lag
   (below) is within ``2 max(TI, d) + 2 d + file_s`` (TI the trigger interval, d the median batch
   duration): the closed output is then at most two triggers and two batches behind the input;
2. for each of ``failures`` failures: runs ``duration_s / (failures + 1)`` seconds of steady
   operation (at least three micro-batches), then **SIGKILLs the driver's process group near the end
   of a checkpoint interval** (Khaos): Spark's ``ProcessingTimeExecutor`` starts batches at wall-clock
   multiples of the interval, so the kill falls ``margin`` (10% of TI, 0.2-1 s) before the next
   trigger after the last committed batch, when everything read since that batch's start (about one
   TI of input) is uncommitted; a job whose batches overrun TI runs them back to back, and the kill
   falls ``margin`` before the running batch is expected to commit. After ``detection_timeout_s``
   (T, a setting: the supervisor's detection and restart delay) the same command is relaunched on
   the same checkpoint, and the copy must recover (below);
3. after a last steady period it is stopped between micro-batches, and its whole output is compared
   with the workload's Python reference over the final input (windows its last watermark closed):
   no window lost or duplicated across the restarts.

**Definitions** (wall-clock seconds; batches from the job's own progress events, written by
:class:`~spark_jobs.workloads.metrics.TaskMetricsListener`: start, duration, rows, watermark):

- *lag* of a batch: its end minus the time the input that lets its watermark close a window was
  available (the first input file after which the input watermark reached the batch's watermark):
  how far behind the input the job's closed output is, the event-time form of Khaos' consumer lag.
- *average ingress* ``I_avg``: rows processed in the steady periods over their length.
- *maximum ingress* ``I_max``: the highest processing rate (rows / batch duration) among the catch-up
  batches after the restarts, the backlog after a failure being Spark's form of the paper's load test
  (a micro-batch's fixed cost makes larger batches faster, so this is the rate at the backlog the
  failures create, not an unbounded peak).
- *latency* of a window (windows excluded as Chiron does): the time the output file holding the
  window was written minus the time the input that closed it (event time ``window_end +
  watermark_s``) was available. The window's own length and the watermark delay are not latency;
  what remains is waiting for the trigger, the batch that reads the input, and the batch whose
  watermark emits the window. Only windows closed and written inside one steady period count;
  the average drops samples above the 99.9th percentile first (the paper's outlier filter).
- *recovery time* (TRT, what Chiron's heuristic predicts): from the kill until the lag is back at the
  pre-failure steady level (the largest lag of that steady period plus one input file, ``file_s``)
  for two micro-batches in a row; the end of the first of them. With a constant input rate, a lag
  back at its steady level means throughput is back at the input rate, so this is Khaos' "throughput
  and lag back to steady state".
- *restore time* ``R``: from the relaunch until the first micro-batch of the restarted job starts
  (JVM, Spark session, query restart from the offset and commit logs). The document's
  ``recovery_time_s`` is R (Chiron's R_avg), averaged over the copy's failures.
- *warm-up time* ``W``: how much longer the first micro-batch after the restart took than its rows
  need at ``I_max`` (state loaded from the checkpoint, code generation, class loading): the time the
  ingress ramp from 0 to full speed costs.
- *detection time* ``T``: the ``detection_timeout_s`` setting (kill to relaunch).
- *checkpoint cost* (optional ``checkpoint_duration_ms``): per steady batch, ``durationMs.walCommit +
  durationMs.commitOffsets + sum(stateOperators.commitTimeMs)`` from the progress events in the
  copy's Spark event log; the median.

Outputs: the profiles document (one ``repetitions`` entry per copy; the mean over its failures of
R and W, as the format's R_avg) and, next to it, ``<name>.raw.json`` with every sample (feed marks,
batches, per-failure timings, latency samples, output checks). :func:`validate_profiles` plans with
:func:`ft_core.checkpoint_tuning.plan_checkpoint`, runs the recommended interval with failures, and
compares predicted with measured latency and recovery time (relative errors ``|p - m| / m``).
Everything a run starts is stopped whatever happens; a failure raises :class:`ProfilingError` naming
the copy and the step.
"""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import subprocess
import threading
import time
from bisect import bisect_left
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from datetime import datetime
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ft_core.checkpoint_profiles import ProfilesDocument, load_profiles, parse_profiles
from ft_core.checkpoint_tuning import (
    DEFAULT_CASE,
    DEFAULT_VARIANT,
    CheckpointPlan,
    fit_quadratic,
    plan_checkpoint,
    recovery_points,
)
from ft_core.checkpoint_profiles import summarise
from ft_core.errors import ExternalError, FtopsError, InputError
from ft_core.recovery_time import VARIANTS, Case, Variant
from spark_jobs.workloads.spec import WorkloadSpec, make_spec

Progress = Callable[[str], None]

WORKLOADS = ("topk", "incidents")
DEFAULT_MASTER = "local[1]"
RECOVERY_TARGET = 0.2  # issue 5: predicted recovery within 20% of the measured one
STATE_STORE_PROVIDERS = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
# The settings a checkpoint pins in its offset log: a restart keeps the checkpoint's values.
PINNED_SETTINGS = {
    "shuffle_partitions": "spark.sql.shuffle.partitions",
    "state_store": "spark.sql.streaming.stateStore.providerClass",
    "multiple_watermark_policy": "spark.sql.streaming.multipleWatermarkPolicy",
}
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
STEADY_BATCHES = 3
CONFIRM_BATCHES = 2
POLL_S = 0.5


class ProfilingError(ExternalError):
    """A profiling run could not complete a step; the message names the copy, the step and the logs."""


# --- the checkpoint vector and checkpoint lineages ------------------------------------------------

class CheckpointVector(BaseModel):
    """Spark's checkpoint configuration: the trigger interval first, then what changes commit and
    restore costs, and the settings a checkpoint pins (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trigger_s: float = Field(gt=0, description="micro-batch trigger (processingTime) = checkpoint interval")
    min_deltas_for_snapshot: int | None = Field(default=None, ge=1, description="state snapshot every N deltas "
                                                "(None: Spark's default, 10)")
    shuffle_partitions: int = Field(default=2, ge=1, description="pinned by the checkpoint")
    state_store: Literal["hdfs", "rocksdb"] = Field(default="hdfs", description="pinned by the checkpoint")
    changelog_checkpointing: bool = Field(default=False, description="RocksDB changelog checkpointing")
    multiple_watermark_policy: Literal["min", "max"] = Field(default="min", description="pinned by the checkpoint")

    @model_validator(mode="after")
    def _changelog_needs_rocksdb(self):
        if self.changelog_checkpointing and self.state_store != "rocksdb":
            raise ValueError("changelog checkpointing needs the rocksdb state store")
        return self

    def pinned(self) -> dict[str, str]:
        """The values this vector gives the settings a checkpoint pins, by Spark conf key."""
        return {PINNED_SETTINGS["shuffle_partitions"]: str(self.shuffle_partitions),
                PINNED_SETTINGS["state_store"]: STATE_STORE_PROVIDERS[self.state_store],
                PINNED_SETTINGS["multiple_watermark_policy"]: self.multiple_watermark_policy}

    def spark_confs(self) -> list[str]:
        """``key=value`` Spark confs beyond what ``run_workload`` takes as options."""
        confs = [f"{PINNED_SETTINGS['state_store']}={STATE_STORE_PROVIDERS[self.state_store]}",
                 f"{PINNED_SETTINGS['multiple_watermark_policy']}={self.multiple_watermark_policy}"]
        if self.state_store == "rocksdb":
            confs.append(f"{CHANGELOG_CONF}={str(self.changelog_checkpointing).lower()}")
        return confs

    def describe(self) -> str:
        snapshot = self.min_deltas_for_snapshot or "Spark's default (10)"
        changelog = ", changelog checkpointing" if self.changelog_checkpointing else ""
        return (f"minDeltasForSnapshot {snapshot}, {self.state_store} state store{changelog}, "
                f"{self.shuffle_partitions} shuffle partitions, multiple-watermark policy {self.multiple_watermark_policy}")


class SettingChange(BaseModel):
    setting: str
    current: str | None
    proposed: str


class LineageCheck(BaseModel):
    """Whether a checkpoint vector can be applied by restarting on an existing checkpoint."""

    needs_new_lineage: bool
    changes: list[SettingChange] = Field(description="pinned settings the plan changes")
    applied_on_restart: list[str] = Field(description="settings a restart on the same checkpoint applies")
    message: str


def pinned_settings(checkpoint: Path) -> dict[str, str]:
    """The pinned settings recorded in a checkpoint's latest offset-log entry (``offsets/<n>``, line 2)."""
    folder = Path(checkpoint) / "offsets"
    entries = sorted((p for p in folder.glob("[0-9]*") if p.name.isdigit()), key=lambda p: int(p.name)) \
        if folder.is_dir() else []
    if not entries:
        raise InputError(f"checkpoint {str(checkpoint)!r}: no offset log (offsets/<n>); is it a streaming checkpoint?")
    lines = entries[-1].read_text().splitlines()
    try:
        conf = json.loads(lines[1]).get("conf", {})
    except (IndexError, json.JSONDecodeError):
        raise InputError(f"checkpoint {str(checkpoint)!r}: {entries[-1].name} is not an offset-log entry") from None
    return {key: conf[key] for key in PINNED_SETTINGS.values() if key in conf}


def lineage_check(proposed: CheckpointVector, current: dict[str, str]) -> LineageCheck:
    """Compare a vector with the pinned settings of a lineage (a checkpoint's, or another vector's
    :meth:`CheckpointVector.pinned`)."""
    changes = [SettingChange(setting=key, current=current.get(key), proposed=value)
               for key, value in proposed.pinned().items() if current.get(key) != value]
    restart = ["trigger interval", "spark.sql.streaming.stateStore.minDeltasForSnapshot"]
    if changes:
        names = ", ".join(f"{c.setting} {c.current} -> {c.proposed}" for c in changes)
        message = (f"needs a new checkpoint lineage: {names} is pinned by the checkpoint (a restart keeps the old "
                   "value); start the job on a new checkpoint folder and replay its input")
    else:
        message = "restart on the existing checkpoint: the trigger interval and minDeltasForSnapshot apply on restart"
    return LineageCheck(needs_new_lineage=bool(changes), changes=changes, applied_on_restart=restart, message=message)


# --- configuration --------------------------------------------------------------------------------

def default_parallel() -> int:
    """Copies at once: one per core (a ``local[1]`` copy keeps one core busy), at most one per 1.5 GB
    of available memory (driver JVM and Python worker)."""
    cores = os.cpu_count() or 1
    try:
        meminfo = Path("/proc/meminfo").read_text()
        kb = int(next(line.split()[1] for line in meminfo.splitlines() if line.startswith("MemAvailable:")))
        by_memory = int(kb / (1.5 * 1024 * 1024))
    except (OSError, StopIteration, ValueError):
        by_memory = cores
    return max(1, min(cores, by_memory))


class RunSettings(BaseModel):
    """How copies run and fail (shared by profiling and validation)."""

    model_config = ConfigDict(extra="forbid")

    workload: str
    params: list[str] = Field(default_factory=list, description="workload parameters key=value")
    failures: int = Field(default=3, ge=1, description="failures injected per copy")
    duration_s: float = Field(gt=0, description="seconds of steady operation per copy, split around the failures")
    repetitions: int = Field(default=1, ge=1, description="copies per interval")
    parallel: int = Field(default_factory=default_parallel, ge=1, description="copies at once")
    work_dir: Path
    master: str = DEFAULT_MASTER
    detection_timeout_s: float = Field(default=5.0, ge=0, description="T: kill to relaunch")
    min_deltas_for_snapshot: int | None = Field(default=None, ge=1)
    shuffle_partitions: int = Field(default=2, ge=1)
    state_store: Literal["hdfs", "rocksdb"] = "hdfs"
    changelog_checkpointing: bool = False
    event_log: bool = Field(default=True, description="Spark event logs (checkpoint cost per batch)")
    ui_port_base: int | None = Field(default=None, ge=1024, le=65000, description="copy i's Spark UI on BASE+i "
                                     "(None: no UI)")
    driver_memory: str = "512m"
    mtbf_s: float | None = Field(default=None, gt=0, description="recorded in the document (Young/Daly baselines)")
    timeout_s: float = Field(default=600.0, gt=0, description="deadline of each wait")

    def vector(self, trigger_s: float) -> CheckpointVector:
        return CheckpointVector(trigger_s=trigger_s, min_deltas_for_snapshot=self.min_deltas_for_snapshot,
                                shuffle_partitions=self.shuffle_partitions, state_store=self.state_store,
                                changelog_checkpointing=self.changelog_checkpointing)


class ProfileConfig(RunSettings):
    intervals_s: list[float] = Field(description="candidate trigger intervals, seconds")
    out: Path | None = Field(default=None, description="profiles document (default <work_dir>/profiles.json)")

    @property
    def out_path(self) -> Path:
        return (self.out or self.work_dir / "profiles.json").resolve()


class ValidateConfig(RunSettings):
    profiles: Path
    max_recovery_s: float = Field(gt=0)
    case: Case = DEFAULT_CASE
    variant: Variant = DEFAULT_VARIANT
    against_checkpoint: Path | None = Field(default=None, description="a running job's checkpoint: may the "
                                            "recommended vector restart on it?")


def raw_path(profiles: Path) -> Path:
    """The raw samples file next to a profiles document: ``profiles.json`` -> ``profiles.raw.json``."""
    return profiles.with_name(f"{profiles.stem}.raw.json")


def check_intervals(intervals_s: list[float]) -> list[float]:
    """At least one interval, each positive and a whole number of milliseconds (Spark's trigger
    unit), no two equal; returned sorted."""
    if not intervals_s:
        raise InputError("--intervals: at least 1 interval is needed")
    seen: set[int] = set()
    for value in intervals_s:
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"--intervals: every interval must be a positive number of seconds, got {value:g}")
        ms = round(value * 1000)
        if ms < 1 or abs(ms - value * 1000) > 1e-6:
            raise InputError(f"--intervals: {value:g} s is not a whole number of milliseconds (Spark triggers are in ms)")
        if ms in seen:
            raise InputError(f"--intervals: {value:g} s is listed twice")
        seen.add(ms)
    return sorted(intervals_s)


def _check_settings(settings: RunSettings) -> WorkloadSpec:
    """Validate what a run needs before anything starts (InputError names the option)."""
    from spark_jobs.cluster import HOST

    if settings.workload not in WORKLOADS:
        raise InputError(f"--workload: unknown workload {settings.workload!r}; expected one of {', '.join(WORKLOADS)}")
    spec = make_spec(settings.workload, settings.params)
    if not (settings.master.startswith("local") or settings.master.startswith("spark://")):
        raise InputError(f"--master: expected local[N] or spark://HOST:PORT, got {settings.master!r}")
    work = settings.work_dir.resolve()
    if work.exists() and (not work.is_dir() or any(work.iterdir())):
        raise InputError(f"--work-dir: {work} is not an empty folder; a profiling run needs a fresh one")
    if settings.ui_port_base is not None:
        _check_ports_free(HOST, range(settings.ui_port_base, settings.ui_port_base + settings.parallel))
    try:
        settings.vector(1.0)
    except ValidationError as exc:
        raise InputError(f"--changelog: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    return spec


def _check_ports_free(host: str, ports: range) -> None:
    import socket

    for port in ports:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                raise InputError(f"--ui-port-base: port {port} on {host} is in use; choose another base") from None


# --- the samples and reports ----------------------------------------------------------------------

class FeedMark(BaseModel):
    """Input file ``index`` (of every source) became available at ``wall``; the input watermark then."""

    index: int
    wall: float
    watermark_ms: int | None


class BatchSample(BaseModel):
    """One completed micro-batch of a copy (``run`` 0 is the first launch, ``run`` i the restart after
    failure i)."""

    run: int
    batch_id: int
    start: float
    end: float
    rows: int
    watermark_ms: int | None
    lag_s: float | None = None

    @property
    def duration_s(self) -> float:
        return self.end - self.start


class FailureSample(BaseModel):
    """One injected failure of a copy, with the times that define T, R, W and the recovery time."""

    index: int
    t_kill: float
    killed_after_batch: int
    since_last_trigger_s: float = Field(description="kill time minus the start of the last committed batch (~E)")
    overrunning: bool = Field(description="batches ran back to back (duration >= trigger interval)")
    t_restart: float
    detection_s: float
    resumed_batch_id: int
    restore_s: float
    first_batch_s: float
    first_batch_rows: int
    warmup_s: float
    catch_up_batches: int
    catch_up_rate: float
    baseline_lag_s: float
    recovered_at: float
    recovery_time_s: float
    lineage_unchanged: bool


class OutputCheck(BaseModel):
    equals_reference: bool
    final_watermark_ms: int | None
    windows: int
    lost_windows: int
    duplicated_windows: int


class CopyResult(BaseModel):
    """Everything measured on one copy (the raw samples) and its per-copy figures."""

    copy_id: str
    repetition: int
    vector: CheckpointVector
    avg_ingress_rate: float
    max_ingress_rate: float
    avg_latency_ms: float
    latency_windows: int
    restore_s: float
    warmup_s: float
    detection_s: float
    recovery_time_s: float = Field(description="mean measured TRT over the failures")
    checkpoint_duration_ms: float | None
    steady_periods: list[tuple[float, float]]
    failures: list[FailureSample]
    latency_samples_ms: list[float]
    batches: list[BatchSample]
    output: OutputCheck | None = None
    final_exit_code: int | None
    started_at: float
    finished_at: float
    output_dir: str


class IntervalRow(BaseModel):
    """The per-interval summary a CLI prints (means over the interval's copies)."""

    checkpoint_interval_ms: float
    copies: int
    avg_ingress_rate: float
    max_ingress_rate: float
    utilisation: float
    avg_latency_ms: float
    restore_s: float
    warmup_s: float
    measured_recovery_s: float
    checkpoint_duration_ms: float | None
    outputs_equal_reference: bool
    lost_windows: int
    duplicated_windows: int


class ProfileRaw(BaseModel):
    """The raw file written next to the profiles document."""

    kind: Literal["profile", "validate"]
    settings: dict
    vector: CheckpointVector
    params: dict
    started_at: float
    finished_at: float
    feed: list[FeedMark]
    copies: list[CopyResult]


class ProfileReport(BaseModel):
    """What ``ftops profile checkpoint --json`` prints."""

    workload: str
    profiles: str
    raw: str
    vector: CheckpointVector
    intervals: list[IntervalRow]
    warnings: list[str]
    elapsed_s: float


class VariantError(BaseModel):
    predicted_recovery_s: float | None
    recovery_error: float | None


class ValidationReport(BaseModel):
    """What ``ftops profile validate --json`` prints: Chiron's prediction against a measured run."""

    workload: str
    profiles: str
    raw: str
    plan: CheckpointPlan
    validated_interval_ms: float
    predicted_latency_ms: float
    predicted_recovery_s: float
    measured_latency_ms: float
    measured_recovery_s: float
    measured_recovery_per_failure_s: list[float]
    latency_error: float
    recovery_error: float
    recovery_error_per_failure: list[float]
    recovery_target: float
    target_met: bool
    by_variant: dict[str, VariantError]
    lineage: LineageCheck
    copies: list[IntervalRow]
    outputs_equal_reference: bool
    lost_windows: int
    duplicated_windows: int
    elapsed_s: float


# --- measures: pure functions of the samples ------------------------------------------------------

def _epoch(iso: str | None) -> float | None:
    if not iso:
        return None
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def read_batches(metrics: Path, restarts: list[float]) -> list[BatchSample]:
    """The completed micro-batches in a copy's metrics file; ``run`` is the number of relaunches
    (``restarts``, wall times) before the batch started. A zero watermark (none yet) is None."""
    from spark_jobs.workloads.metrics import read_metrics

    out = []
    for rec in read_metrics(metrics):
        start = _epoch(rec.get("timestamp"))
        if start is None:
            continue
        mark = _epoch(rec.get("watermark"))
        out.append(BatchSample(run=sum(1 for t in restarts if t <= start), batch_id=int(rec["batch_id"]), start=start,
                               end=start + (rec.get("batch_duration_ms") or 0) / 1000.0,
                               rows=int(rec.get("num_input_rows") or 0),
                               watermark_ms=round(mark * 1000) if mark else None))
    return sorted(out, key=lambda b: b.end)


class InputTimeline:
    """When the input watermark first reached each value (from the feed's marks)."""

    def __init__(self, marks: list[FeedMark]):
        known = [m for m in sorted(marks, key=lambda m: m.index) if m.watermark_ms is not None]
        self._marks = [m.watermark_ms for m in known]
        self._walls = [m.wall for m in known]

    def available_at(self, watermark_ms: int) -> float | None:
        """The wall time of the first input file after which the input watermark was >= ``watermark_ms``."""
        i = bisect_left(self._marks, watermark_ms)
        return self._walls[i] if i < len(self._walls) else None


def with_lags(batches: list[BatchSample], timeline: InputTimeline) -> list[BatchSample]:
    """Each batch with its lag: end minus when the input reached the batch's watermark."""
    out = []
    for b in batches:
        avail = timeline.available_at(b.watermark_ms) if b.watermark_ms is not None else None
        out.append(b.model_copy(update={"lag_s": None if avail is None else b.end - avail}))
    return out


def steady_lag_bound_s(trigger_s: float, durations: list[float], file_s: float) -> float:
    """The largest lag of a job in steady operation: input waits up to one trigger period (or one
    batch when batches overrun it), is read by one batch, and its watermark emits the window in the
    next: ``2 max(TI, d) + 2 d``, plus one input file's granularity."""
    d = statistics.median(durations) if durations else 0.0
    return 2 * max(trigger_s, d) + 2 * d + file_s


def first_steady(batches: list[BatchSample], trigger_s: float, file_s: float) -> BatchSample | None:
    """The first batch (after the run's cold first one) starting ``STEADY_BATCHES`` consecutive batches
    whose lags are within :func:`steady_lag_bound_s`."""
    for i in range(1, len(batches) - STEADY_BATCHES + 1):
        window = batches[i:i + STEADY_BATCHES]
        bound = steady_lag_bound_s(trigger_s, [b.duration_s for b in window], file_s)
        if all(b.lag_s is not None and b.lag_s <= bound for b in window):
            return window[0]
    return None


def recovered_batch(after_restart: list[BatchSample], baseline_s: float, tolerance_s: float) -> BatchSample | None:
    """The first batch after a restart starting ``CONFIRM_BATCHES`` consecutive batches whose lag is
    back within the pre-failure steady level (``baseline_s + tolerance_s``)."""
    limit = baseline_s + tolerance_s
    for i in range(len(after_restart) - CONFIRM_BATCHES + 1):
        window = after_restart[i:i + CONFIRM_BATCHES]
        if all(b.lag_s is not None and b.lag_s <= limit for b in window):
            return window[0]
    return None


def kill_margin_s(trigger_s: float) -> float:
    """How long before the next checkpoint a failure is injected: 10% of the interval, 0.2-1 s."""
    return min(1.0, max(0.2, 0.1 * trigger_s))


def kill_time(last: BatchSample, trigger_s: float, typical_batch_s: float) -> tuple[float, bool]:
    """(when to kill, whether batches overrun the interval) after the last committed batch ``last``.

    Spark's ProcessingTimeExecutor starts the next batch at the next wall-clock multiple of the
    interval after the last trigger's start (at once when the batch overran): kill ``margin`` before
    it. When batches overrun, the next one starts at ``last.end`` and commits about one typical
    duration later: kill ``margin`` before that commit."""
    interval_ms = round(trigger_s * 1000)
    next_trigger = (int(last.start * 1000) // interval_ms + 1) * interval_ms / 1000.0
    margin = kill_margin_s(trigger_s)
    if next_trigger > last.end:
        return next_trigger - margin, False
    return last.end + typical_batch_s - margin, True


def in_periods(t: float, periods: list[tuple[float, float]]) -> int | None:
    """The index of the steady period ``(start, end]`` containing ``t``."""
    for i, (a, b) in enumerate(periods):
        if a < t <= b:
            return i
    return None


def steady_ingress(batches: list[BatchSample], periods: list[tuple[float, float]]) -> float:
    """Rows per second processed in the steady periods (batches ending inside, over the time from
    the period's start to the last of them)."""
    rows, span = 0, 0.0
    for a, b in periods:
        inside = [x for x in batches if a < x.end <= b]
        if inside:
            rows += sum(x.rows for x in inside)
            span += inside[-1].end - a
    return rows / span if span > 0 else 0.0


def written_windows(output: Path) -> list[tuple[int, float]]:
    """(window end ms, when its output file was written) for every window in a copy's sink."""
    first: dict[tuple[int, int], float] = {}
    for path in sorted(Path(output).glob("batch-*.jsonl")):
        mtime = path.stat().st_mtime
        with path.open() as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    key = (int(row["window_start"]), int(row["window_end"]))
                    first[key] = min(mtime, first.get(key, mtime))
    return [(end, t) for (_, end), t in sorted(first.items())]


def window_latencies_ms(windows: list[tuple[int, float]], timeline: InputTimeline,
                        periods: list[tuple[float, float]]) -> list[float]:
    """Latency of each window closed and written inside one steady period: written minus when the
    input that closed it (input watermark >= window end) was available."""
    out = []
    for end_ms, written in windows:
        avail = timeline.available_at(end_ms)
        if avail is None:
            continue
        period = in_periods(written, periods)
        if period is not None and periods[period][0] <= avail <= written:
            out.append((written - avail) * 1000.0)
    return out


def outlier_filtered_mean(samples: list[float], quantile: float = 99.9) -> float:
    """The mean after dropping samples above the ``quantile``-th percentile (the paper averages
    "over the 0.999 percentile in order to filter outliers")."""
    if not samples:
        raise ValueError("no samples")
    cut = float(np.percentile(samples, quantile))
    return float(np.mean([s for s in samples if s <= cut]))


def catch_up_rate(batches: list[BatchSample]) -> float:
    """The highest processing rate (rows per second of batch duration) among ``batches``."""
    rates = [b.rows / b.duration_s for b in batches if b.duration_s > 0 and b.rows > 0]
    return max(rates, default=0.0)


def checkpoint_costs_ms(event_dir: Path) -> dict[int, float]:
    """Per batch id, the commit work of its micro-batch from the progress events in Spark event
    logs: ``walCommit + commitOffsets + sum(stateOperators.commitTimeMs)`` (the last run's value for
    a replayed batch). Lines of a log cut short by a kill are skipped."""
    costs: dict[int, tuple[float, float]] = {}
    logs = [p for p in sorted(Path(event_dir).rglob("*")) if p.is_file() and not p.name.startswith((".", "appstatus"))]
    for path in logs:
        with path.open(errors="replace") as fh:
            for line in fh:
                if "QueryProgressEvent" not in line:
                    continue
                try:
                    progress = json.loads(line)["progress"]
                except (json.JSONDecodeError, KeyError):
                    continue
                durations = progress.get("durationMs") or {}
                state = sum(op.get("commitTimeMs") or 0 for op in progress.get("stateOperators") or [])
                stamp = _epoch(progress.get("timestamp")) or 0.0
                cost = float(durations.get("walCommit", 0) + durations.get("commitOffsets", 0) + state)
                batch = int(progress["batchId"])
                if batch not in costs or costs[batch][0] <= stamp:
                    costs[batch] = (stamp, cost)
    return {batch: cost for batch, (_, cost) in costs.items()}


# --- the input feed -------------------------------------------------------------------------------

class _Feed:
    """The seeded generator in a thread, appending one file per source every ``file_s``; records when
    each file became available and the input watermark it carries."""

    def __init__(self, spec: WorkloadSpec, input_dir: Path):
        from spark_jobs.workloads.generator import InputWatermark

        self.spec, self.input_dir = spec, input_dir
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self._watermark = InputWatermark(spec)
        self._marks: list[FeedMark] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="profile-feed", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        from spark_jobs.workloads.generator import run_generator

        try:
            run_generator(self.spec, self.input_dir, None, 1.0, log=self._mark, stop=self.stop_event)
        except BaseException as exc:  # reported by every copy's next wait
            self.error = exc

    def _mark(self, index: int) -> None:
        self._watermark.add(index)
        with self._lock:
            self._marks.append(FeedMark(index=index, wall=time.time(), watermark_ms=self._watermark.value_ms))

    def marks(self) -> list[FeedMark]:
        with self._lock:
            return list(self._marks)

    def timeline(self) -> InputTimeline:
        return InputTimeline(self.marks())

    def stop(self) -> None:
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=30)


# --- one copy -------------------------------------------------------------------------------------

class _Aborted(Exception):
    """Another copy failed (or the user interrupted): stop quietly, the first error is reported."""


class _Shared:
    """What the copies of one run share: the feed, the abort flag, the live processes, UI slots."""

    def __init__(self, settings: RunSettings, spec: WorkloadSpec, input_dir: Path, say: Progress):
        import queue

        self.settings, self.spec, self.say = settings, spec, say
        self.feed = _Feed(spec, input_dir)
        self.abort = threading.Event()
        self.slots: queue.Queue[int] = queue.Queue()
        for slot in range(settings.parallel):
            self.slots.put(slot)
        self._procs: set[subprocess.Popen] = set()
        self._lock = threading.Lock()

    def started(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs.add(proc)

    def ended(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            _kill_group(proc)
            self.ended(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a copy's process group (spark-submit leads it: JVM and Python driver)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


class _Kill(BaseModel):
    """What the copy recorded when it injected a failure (the measures are computed at the end)."""

    t_kill: float
    overrunning: bool
    baseline_lag_s: float
    pinned_before: dict[str, str]
    t_restart: float | None = None
    pinned_after: dict[str, str] | None = None


class _Copy:
    """One isolated copy of the job at one checkpoint vector: launch, steady, failures, stop."""

    def __init__(self, shared: _Shared, vector: CheckpointVector, repetition: int, root: Path):
        self.shared, self.vector, self.repetition = shared, vector, repetition
        self.settings, self.spec = shared.settings, shared.spec
        self.copy_id = f"ci-{round(vector.trigger_s * 1000)}ms-r{repetition}"
        self.dir = root / self.copy_id
        self.output, self.checkpoint, self.events = self.dir / "output", self.dir / "checkpoint", self.dir / "events"
        self.metrics = self.output / "_metrics" / "metrics.jsonl"
        self.proc: subprocess.Popen | None = None
        self.log: Path | None = None
        self.slot: int | None = None
        self.restarts: list[float] = []
        self.kills: list[_Kill] = []
        self.periods: list[tuple[float, float]] = []
        self.stage = "queued"
        self.exit_code: int | None = None

    # the steps
    def run(self) -> CopyResult:
        self.slot = self.shared.slots.get()
        try:
            return self._run()
        except (_Aborted, ProfilingError):
            raise
        except FtopsError as exc:
            raise ProfilingError(f"copy {self.copy_id} failed while {self.stage}: {exc}; logs in {self.dir}") from exc
        except Exception as exc:  # an unexpected failure still says where it happened
            raise ProfilingError(f"copy {self.copy_id} failed while {self.stage}: {type(exc).__name__}: {exc}; "
                                 f"logs in {self.dir}") from exc
        finally:
            self._kill()
            self.shared.slots.put(self.slot)

    def _run(self) -> CopyResult:
        started = time.time()
        gap = self.settings.duration_s / (self.settings.failures + 1)
        self._launch()
        self.stage = "waiting for steady operation"
        period_start = self._wait(lambda: self._steady_start(0), "steady operation")
        self._say(f"steady {period_start - started:.1f} s after launch")
        for n in range(1, self.settings.failures + 1):
            self.stage = f"running steadily before failure {n}"
            self._steady_gap(period_start, gap, run=n - 1)
            self.stage = f"injecting failure {n}"
            kill = self._inject(period_start, run=n - 1)
            self.periods.append((period_start, kill.t_kill))
            self.stage = f"restarting after failure {n}"
            self._sleep_until(kill.t_kill + self.settings.detection_timeout_s)
            kill.t_restart = time.time()
            self.restarts.append(kill.t_restart)
            self._launch()
            self.stage = f"recovering from failure {n}"
            period_start = self._wait(lambda: self._recovered(kill, n), f"recovery from failure {n}")
            kill.pinned_after = pinned_settings(self.checkpoint)
            self._say(f"failure {n}: recovered {period_start - kill.t_kill:.1f} s after the kill")
        self.stage = "running steadily after the last failure"
        self._steady_gap(period_start, gap, run=self.settings.failures)
        self.periods.append((period_start, time.time()))
        self.stage = "stopping"
        self._stop()
        self.stage = "measuring"
        return self._measure(started)

    def _argv(self) -> list:
        s, v = self.settings, self.vector
        argv = [s.workload, "--role", "primary", "--input", self.shared.feed.input_dir, "--output", self.output,
                "--checkpoint", self.checkpoint, "--master", s.master, "--trigger-s", v.trigger_s,
                "--shuffle-partitions", v.shuffle_partitions, "--query-name", f"ftops-profile-{self.copy_id}",
                "--driver-memory", s.driver_memory]
        if v.min_deltas_for_snapshot is not None:
            argv += ["--min-deltas-for-snapshot", v.min_deltas_for_snapshot]
        if s.master.startswith("spark://"):
            argv += ["--total-executor-cores", 1]
        confs = v.spark_confs()
        confs.append("spark.ui.enabled=false" if s.ui_port_base is None else f"spark.ui.port={s.ui_port_base + self.slot}")
        if s.event_log:
            confs += ["spark.eventLog.enabled=true", "spark.eventLog.compress=false", f"spark.eventLog.dir={self.events}"]
        for conf in confs:
            argv += ["--conf", conf]
        for item in s.params:
            argv += ["--param", item]
        return argv

    def _launch(self) -> None:
        from spark_jobs.workload_cli import launch_run, run_args

        if self.shared.abort.is_set():
            raise _Aborted
        self.events.mkdir(parents=True, exist_ok=True)
        self.proc, self.log = launch_run(run_args(self._argv()))
        self.shared.started(self.proc)

    def _batches(self, run: int | None = None) -> list[BatchSample]:
        batches = with_lags(read_batches(self.metrics, self.restarts), self.shared.feed.timeline())
        return batches if run is None else [b for b in batches if b.run == run]

    def _steady_start(self, run: int) -> float | None:
        first = first_steady(self._batches(run), self.vector.trigger_s, self.spec.file_s)
        return None if first is None else first.end

    def _steady_gap(self, period_start: float, gap_s: float, run: int) -> None:
        """At least ``gap_s`` of steady operation and ``STEADY_BATCHES`` batches after ``period_start``."""
        def done() -> bool | None:
            enough = len([b for b in self._batches(run) if b.end > period_start]) >= STEADY_BATCHES
            return True if enough and time.time() >= period_start + gap_s else None

        self._wait(done, "steady micro-batches", extra_s=gap_s)

    def _inject(self, period_start: float, run: int) -> _Kill:
        """SIGKILL the driver's process group near the end of a checkpoint interval (see kill_time),
        planned from the last committed batch and re-planned if another batch commits meanwhile."""
        steady = [b for b in self._batches(run) if b.end > period_start]
        baseline = max((b.lag_s for b in steady if b.lag_s is not None), default=0.0)
        pinned = pinned_settings(self.checkpoint)
        while True:
            batches = self._batches(run)
            last = batches[-1]
            typical = statistics.median(b.duration_s for b in batches[-STEADY_BATCHES:])
            at, overrunning = kill_time(last, self.vector.trigger_s, typical)
            if at <= time.time() + 0.05:  # too late for this interval: plan from the next batch
                self._wait(lambda: True if self._batches(run)[-1].batch_id > last.batch_id else None, "the next micro-batch")
                continue
            if self._sleep_until(at, unless=lambda: self._batches(run)[-1].batch_id > last.batch_id):
                self._check_alive()
                t_kill = time.time()
                _kill_group(self.proc)
                self.shared.ended(self.proc)
                kill = _Kill(t_kill=t_kill, overrunning=overrunning, baseline_lag_s=baseline, pinned_before=pinned)
                self.kills.append(kill)
                return kill

    def _recovered(self, kill: _Kill, run: int) -> float | None:
        batch = recovered_batch(self._batches(run), kill.baseline_lag_s, self.spec.file_s)
        return None if batch is None else batch.end

    def _stop(self) -> None:
        """Stop between micro-batches (SIGTERM to the Python driver), then the process group."""
        from spark_jobs.workload_cli import stop_run

        stop_run(self.output, timeout_s=60.0)
        self.exit_code = self.proc.wait(timeout=30)
        self.shared.ended(self.proc)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _kill_group(self.proc)
        if self.proc is not None:
            self.shared.ended(self.proc)

    # waiting
    def _say(self, message: str) -> None:
        self.shared.say(f"{self.copy_id}: {message}")

    def _check_alive(self) -> None:
        if self.shared.abort.is_set():
            raise _Aborted
        if self.shared.feed.error is not None:
            raise ProfilingError(f"copy {self.copy_id} failed while {self.stage}: the input generator failed: "
                                 f"{self.shared.feed.error}")
        code = self.proc.poll() if self.proc is not None else None
        if code is not None:
            tail = " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-3:]) if self.log else ""
            raise ProfilingError(f"copy {self.copy_id} failed while {self.stage}: the driver exited ({code}); "
                                 f"see {self.log}: {tail}")

    def _wait(self, done: Callable[[], object], what: str, extra_s: float = 0.0):
        """Poll ``done`` until it returns something other than None; the driver must stay alive."""
        deadline = time.monotonic() + self.settings.timeout_s + extra_s
        while True:
            self._check_alive()
            value = done()
            if value is not None:
                return value
            if time.monotonic() > deadline:
                raise ProfilingError(f"copy {self.copy_id} failed while {self.stage}: timed out waiting for {what} "
                                     f"after {self.settings.timeout_s + extra_s:.0f} s; logs in {self.dir}")
            if self.shared.abort.wait(POLL_S):
                raise _Aborted

    def _sleep_until(self, wall: float, unless: Callable[[], bool] | None = None) -> bool:
        """Sleep until ``wall``; False as soon as ``unless()`` holds (checked every poll)."""
        while (delay := wall - time.time()) > 0:
            if self.shared.abort.wait(min(delay, POLL_S) if unless else delay):
                raise _Aborted
            if unless is not None and unless():
                return False
        return True

    # measuring
    def _measure(self, started: float) -> CopyResult:
        timeline = self.shared.feed.timeline()
        batches = with_lags(read_batches(self.metrics, self.restarts), timeline)
        catch_ups = [self._catch_up(batches, n, kill) for n, kill in enumerate(self.kills, start=1)]
        i_max = max(catch_up_rate(c) for c in catch_ups)
        if i_max <= 0:
            raise ProfilingError(f"copy {self.copy_id}: no catch-up batch after a restart processed any rows")
        failures = [self._failure(n, kill, [b for b in batches if b.run == n - 1 and b.end <= kill.t_kill], c, i_max)
                    for n, (kill, c) in enumerate(zip(self.kills, catch_ups), start=1)]
        latencies = window_latencies_ms(written_windows(self.output), timeline, self.periods)
        if not latencies:
            raise ProfilingError(f"copy {self.copy_id}: no window was closed and written within a steady period; "
                                 "use a longer --duration or shorter windows (window_s)")
        steady_ids = {b.batch_id for b in batches if in_periods(b.end, self.periods) is not None}
        costs = checkpoint_costs_ms(self.events) if self.settings.event_log else {}
        steady_costs = [c for batch, c in costs.items() if batch in steady_ids]
        return CopyResult(
            copy_id=self.copy_id, repetition=self.repetition, vector=self.vector,
            avg_ingress_rate=steady_ingress(batches, self.periods), max_ingress_rate=i_max,
            avg_latency_ms=outlier_filtered_mean(latencies), latency_windows=len(latencies),
            restore_s=statistics.fmean(f.restore_s for f in failures),
            warmup_s=statistics.fmean(f.warmup_s for f in failures),
            detection_s=statistics.fmean(f.detection_s for f in failures),
            recovery_time_s=statistics.fmean(f.recovery_time_s for f in failures),
            checkpoint_duration_ms=statistics.median(steady_costs) if steady_costs else None,
            steady_periods=self.periods, failures=failures, latency_samples_ms=latencies, batches=batches,
            final_exit_code=self.exit_code, started_at=started, finished_at=time.time(), output_dir=str(self.output))

    def _catch_up(self, batches: list[BatchSample], run: int, kill: _Kill) -> list[BatchSample]:
        """The batches of the restarted job up to and including the recovered one."""
        post = [b for b in batches if b.run == run]
        done = recovered_batch(post, kill.baseline_lag_s, self.spec.file_s)
        if done is None:
            raise ProfilingError(f"copy {self.copy_id}: failure {run} never recovered in the recorded batches")
        return [b for b in post if b.end <= done.end]

    def _failure(self, n: int, kill: _Kill, before: list[BatchSample], catch_up: list[BatchSample],
                 i_max: float) -> FailureSample:
        """``before``: the batches committed before the kill; ``catch_up``: after the restart, up to recovery."""
        first, done, last = catch_up[0], catch_up[-1], before[-1]
        return FailureSample(
            index=n, t_kill=kill.t_kill, killed_after_batch=last.batch_id,
            since_last_trigger_s=kill.t_kill - last.start, overrunning=kill.overrunning,
            t_restart=kill.t_restart, detection_s=kill.t_restart - kill.t_kill, resumed_batch_id=first.batch_id,
            restore_s=first.start - kill.t_restart, first_batch_s=first.duration_s, first_batch_rows=first.rows,
            warmup_s=max(0.0, first.duration_s - first.rows / i_max), catch_up_batches=len(catch_up),
            catch_up_rate=catch_up_rate(catch_up), baseline_lag_s=kill.baseline_lag_s,
            recovered_at=done.end, recovery_time_s=done.end - kill.t_kill,
            lineage_unchanged=kill.pinned_after == kill.pinned_before)


# --- running copies -------------------------------------------------------------------------------

class _Run:
    """Copies of one workload over one fed input folder, ``parallel`` at a time; always torn down."""

    def __init__(self, settings: RunSettings, spec: WorkloadSpec, say: Progress):
        self.settings, self.spec, self.say = settings, spec, say
        self.root = settings.work_dir.resolve()
        self.input_dir = self.root / "input"
        self.shared = _Shared(settings, spec, self.input_dir, say)
        self.started_at = time.time()

    def execute(self, vectors: list[tuple[CheckpointVector, int]]) -> list[CopyResult]:
        """Run a copy per (vector, repetition); the first failure aborts the others and is raised."""
        self.input_dir.mkdir(parents=True, exist_ok=True)
        self.shared.feed.start()
        copies = [_Copy(self.shared, vector, rep, self.root / "copies") for vector, rep in vectors]
        self.say(f"{len(copies)} copies, {min(self.settings.parallel, len(copies))} at a time, input in {self.input_dir}")
        with ThreadPoolExecutor(max_workers=self.settings.parallel, thread_name_prefix="profile-copy") as pool:
            futures: list[Future] = [pool.submit(copy.run) for copy in copies]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
                errors = [f.exception() for f in futures if f.done() and f.exception() is not None]
                if errors:
                    raise next((e for e in errors if not isinstance(e, _Aborted)), errors[0])
            except BaseException:
                self.shared.abort.set()
                self.shared.kill_all()
                raise
        self.shared.feed.stop()
        results = [f.result() for f in futures]
        self.say("input stopped; checking every copy's output against the workload's Python reference")
        return self._check_outputs(results)

    def _check_outputs(self, results: list[CopyResult]) -> list[CopyResult]:
        reference = reference_rows(self.spec, self.input_dir)
        return [r.model_copy(update={"output": output_check(Path(r.output_dir), reference, r.batches)}) for r in results]

    def feed_marks(self) -> list[FeedMark]:
        return self.shared.feed.marks()

    def teardown(self) -> None:
        """Stop the input and every process a copy still has (by process group)."""
        self.shared.abort.set()
        self.shared.feed.stop()
        self.shared.kill_all()


def reference_rows(spec: WorkloadSpec, input_dir: Path) -> list[dict]:
    """The workload's Python reference over every record of the input folder (every window)."""
    from spark_jobs.workloads.generator import read_records

    if spec.workload == "topk":
        from spark_jobs.workloads import topk

        return topk.python_reference(spec, read_records(spec, input_dir, "requests"))
    from spark_jobs.workloads import incidents

    return incidents.python_reference(spec, read_records(spec, input_dir, "locations"),
                                      read_records(spec, input_dir, "incidents"))


def output_check(output: Path, reference: list[dict], batches: list[BatchSample]) -> OutputCheck:
    """A copy's sink against the reference windows its last watermark closed (no window lost or
    written twice across the restarts)."""
    from spark_jobs.workloads.sink import closed_rows, compare_output

    final = max((b.watermark_ms for b in batches if b.watermark_ms is not None), default=None)
    expected = closed_rows(reference, final) if final is not None else []
    cmp = compare_output(output, expected)
    return OutputCheck(equals_reference=cmp.equal, final_watermark_ms=final, windows=cmp.expected_windows,
                       lost_windows=len(cmp.lost_windows), duplicated_windows=len(cmp.duplicated_windows))


def _run_copies(settings: RunSettings, spec: WorkloadSpec, vectors: list[tuple[CheckpointVector, int]],
                say: Progress) -> tuple[list[CopyResult], list[FeedMark], float]:
    run = _Run(settings, spec, say)
    try:
        return run.execute(vectors), run.feed_marks(), run.started_at
    finally:
        run.teardown()


# --- the profiles document ------------------------------------------------------------------------

def repetition_entry(copy: CopyResult) -> dict:
    """One ``repetitions`` entry of the profiles document: a copy, R and W averaged over its failures."""
    entry = {"run_id": copy.copy_id, "avg_ingress_rate": copy.avg_ingress_rate, "max_ingress_rate": copy.max_ingress_rate,
             "avg_latency_ms": copy.avg_latency_ms, "recovery_time_s": copy.restore_s,
             "warmup_time_s": copy.warmup_s, "detection_timeout_s": copy.detection_s}
    if copy.checkpoint_duration_ms is not None:
        entry["checkpoint_duration_ms"] = copy.checkpoint_duration_ms
    return entry


def profiles_document(settings: RunSettings, spec: WorkloadSpec, copies: list[CopyResult]) -> dict:
    """The profiles document of :mod:`ft_core.checkpoint_profiles` (validated before it is returned)."""
    by_interval: dict[float, list[dict]] = {}
    for copy in sorted(copies, key=lambda c: (c.vector.trigger_s, c.repetition)):
        by_interval.setdefault(round(copy.vector.trigger_s * 1000, 3), []).append(repetition_entry(copy))
    params = ", ".join(f"{k}={v}" for k, v in spec.params().items())
    doc = {
        "job": f"{spec.workload}",
        "description": (f"ftops profile checkpoint on Spark: workload {spec.workload} ({params}); checkpoint vector: "
                        f"trigger interval profiled, {copies[0].vector.describe()}; {settings.failures} driver kill(s) "
                        f"per copy near the end of a checkpoint interval; master {settings.master}, "
                        f"{settings.parallel} copies at once on {os.cpu_count()} cores"),
        "detection_timeout_s": settings.detection_timeout_s,
        "profiles": [{"checkpoint_interval_ms": ms, "repetitions": reps} for ms, reps in sorted(by_interval.items())],
    }
    if settings.mtbf_s is not None:
        doc["mtbf_s"] = settings.mtbf_s
    parse_profiles(doc, min_intervals=1)
    return doc


def interval_rows(copies: list[CopyResult]) -> list[IntervalRow]:
    """Per interval, the means over its copies (the document keeps each copy)."""
    groups: dict[float, list[CopyResult]] = {}
    for copy in copies:
        groups.setdefault(copy.vector.trigger_s, []).append(copy)
    rows = []
    for trigger, group in sorted(groups.items()):
        mean = lambda attr: statistics.fmean(getattr(c, attr) for c in group)  # noqa: E731 - local shorthand
        costs = [c.checkpoint_duration_ms for c in group if c.checkpoint_duration_ms is not None]
        outputs = [c.output for c in group if c.output is not None]
        rows.append(IntervalRow(
            checkpoint_interval_ms=round(trigger * 1000, 3), copies=len(group), avg_ingress_rate=mean("avg_ingress_rate"),
            max_ingress_rate=mean("max_ingress_rate"), utilisation=mean("avg_ingress_rate") / mean("max_ingress_rate"),
            avg_latency_ms=mean("avg_latency_ms"), restore_s=mean("restore_s"), warmup_s=mean("warmup_s"),
            measured_recovery_s=mean("recovery_time_s"), checkpoint_duration_ms=statistics.fmean(costs) if costs else None,
            outputs_equal_reference=len(outputs) == len(group) and all(o.equals_reference for o in outputs),
            lost_windows=sum(o.lost_windows for o in outputs), duplicated_windows=sum(o.duplicated_windows for o in outputs)))
    return rows


def _warnings(settings: RunSettings, rows: list[IntervalRow], copies: list[CopyResult]) -> list[str]:
    out = []
    if len(rows) < 3:
        out.append(f"{len(rows)} interval(s) profiled: `ftops plan checkpoint` needs at least 3")
    cores = os.cpu_count() or 1
    if min(settings.parallel, len(copies)) > 1:
        out.append(f"{min(settings.parallel, len(copies))} copies ran at once on {cores} cores and competed for them "
                   "(Chiron profiles on separate machines); compare intervals, not absolute numbers")
    out += [f"interval {r.checkpoint_interval_ms:g} ms: utilisation {r.utilisation:.2f} >= 1, the planner rejects it"
            for r in rows if r.utilisation >= 1]
    out += [f"copy {c.copy_id}: output differs from the reference ({c.output.lost_windows} lost, "
            f"{c.output.duplicated_windows} duplicated windows)" for c in copies if c.output and not c.output.equals_reference]
    out += [f"copy {c.copy_id}: failure {f.index} restarted with different pinned settings" for c in copies
            for f in c.failures if not f.lineage_unchanged]
    return out


def _write_json(path: Path, doc: BaseModel | dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = doc.model_dump_json(indent=2) if isinstance(doc, BaseModel) else json.dumps(doc, indent=2)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text + "\n")
    tmp.replace(path)


def prepare_profiling(config: ProfileConfig) -> tuple[WorkloadSpec, list[float]]:
    """Everything checked before a process starts (InputError names the option)."""
    intervals = check_intervals(config.intervals_s)
    spec = _check_settings(config)
    out = config.out_path
    if not out.parent.is_dir() and out.parent != config.work_dir.resolve():
        raise InputError(f"--out: folder {str(out.parent)!r} does not exist")
    return spec, intervals


def run_profiling(config: ProfileConfig, progress: Progress | None = None) -> ProfileReport:
    """``ftops profile checkpoint``: profile every interval, write the profiles document and its raw file."""
    say = progress or (lambda _msg: None)
    spec, intervals = prepare_profiling(config)
    vectors = [(config.vector(ci), rep) for ci in intervals for rep in range(1, config.repetitions + 1)]
    copies, feed, started = _run_copies(config, spec, vectors, say)
    doc = profiles_document(config, spec, copies)
    out = config.out_path
    _write_json(out, doc)
    raw = ProfileRaw(kind="profile", settings=json.loads(config.model_dump_json()), vector=config.vector(intervals[0]),
                     params=spec.params(), started_at=started, finished_at=time.time(), feed=feed, copies=copies)
    _write_json(raw_path(out), raw)
    rows = interval_rows(copies)
    return ProfileReport(workload=spec.workload, profiles=str(out), raw=str(raw_path(out)), vector=config.vector(intervals[0]),
                         intervals=rows, warnings=_warnings(config, rows, copies), elapsed_s=time.time() - started)


# --- validation -----------------------------------------------------------------------------------

def relative_error(predicted: float, measured: float) -> float:
    """``|predicted - measured| / measured``: the error relative to what was measured."""
    return abs(predicted - measured) / measured if measured else math.inf


def recovery_model_at(doc: ProfilesDocument, interval_s: float, case: Case, variant: Variant) -> float:
    """Chiron's recovery model ``A`` (fitted to the TRT heuristic at the profiled intervals) at ``interval_s``."""
    rows = summarise(doc)
    model = fit_quadratic([r.checkpoint_interval_ms / 1000.0 for r in rows], recovery_points(rows, case, variant))
    return float(model.predict(interval_s))


def _profiled_raw(profiles: Path) -> ProfileRaw | None:
    path = raw_path(profiles)
    return ProfileRaw.model_validate_json(path.read_text()) if path.exists() else None


def _inherit_profiled(config: ValidateConfig) -> ValidateConfig:
    """Validate what was profiled: the raw file's workload parameters when none are given; a
    different workload, parameters or fixed part of the vector is an InputError."""
    raw = _profiled_raw(config.profiles)
    if raw is None:
        return config
    if raw.settings.get("workload") != config.workload:
        raise InputError(f"--workload: the profiles were measured on {raw.settings.get('workload')!r}, not {config.workload!r}")
    if not config.params:
        config = config.model_copy(update={"params": list(raw.settings.get("params", []))})
    if make_spec(config.workload, config.params).params() != raw.params:
        raise InputError("--param: the workload parameters differ from the profiled ones "
                         f"({', '.join(f'{k}={v}' for k, v in raw.params.items())})")
    ours = config.vector(raw.vector.trigger_s)
    if ours != raw.vector:
        raise InputError(f"the checkpoint vector differs from the profiled one ({raw.vector.describe()}); "
                         "validate with the same --shuffle-partitions, --state-store, --changelog and --min-deltas-for-snapshot")
    return config


def prepare_validation(config: ValidateConfig) -> tuple[ValidateConfig, WorkloadSpec, ProfilesDocument, CheckpointPlan]:
    """Check the inputs and plan (InputError, or InfeasibleError when no interval meets the bound)."""
    if not config.profiles.is_file():
        raise InputError(f"--profiles: file {str(config.profiles)!r} does not exist")
    if config.against_checkpoint is not None and not config.against_checkpoint.is_dir():
        raise InputError(f"--against-checkpoint: folder {str(config.against_checkpoint)!r} does not exist")
    doc = load_profiles(config.profiles)
    config = _inherit_profiled(config)
    spec = _check_settings(config)
    plan = plan_checkpoint(doc, config.max_recovery_s, case=config.case, variant=config.variant, mtbf_s=config.mtbf_s)
    return config, spec, doc, plan


def validate_profiles(config: ValidateConfig, progress: Progress | None = None) -> ValidationReport:
    """``ftops profile validate``: plan from the profiles, run the recommended interval with failures,
    compare predicted with measured latency and recovery time."""
    say = progress or (lambda _msg: None)
    config, spec, doc, plan = prepare_validation(config)
    trigger_s = round(plan.checkpoint_interval_ms) / 1000.0
    vector = config.vector(trigger_s)
    current = pinned_settings(config.against_checkpoint) if config.against_checkpoint else vector.pinned()
    lineage = lineage_check(vector, current)
    say(f"recommended interval {trigger_s:g} s (predicted latency {plan.predicted_latency_ms:.0f} ms, recovery "
        f"{plan.predicted_recovery_s:.1f} s); running it with {config.failures} failure(s)")
    copies, feed, started = _run_copies(config, spec, [(vector, rep) for rep in range(1, config.repetitions + 1)], say)
    raw = ProfileRaw(kind="validate", settings=json.loads(config.model_dump_json()), vector=vector, params=spec.params(),
                     started_at=started, finished_at=time.time(), feed=feed, copies=copies)
    raw_file = config.work_dir.resolve() / "validation.raw.json"
    _write_json(raw_file, raw)
    return _validation_report(config, doc, plan, trigger_s, copies, lineage, raw_file, started)


def _validation_report(config: ValidateConfig, doc: ProfilesDocument, plan: CheckpointPlan, trigger_s: float,
                       copies: list[CopyResult], lineage: LineageCheck, raw_file: Path, started: float) -> ValidationReport:
    measured = [f.recovery_time_s for c in copies for f in c.failures]
    latency = statistics.fmean(c.avg_latency_ms for c in copies)
    recovery = statistics.fmean(measured)
    by_variant = {}
    for variant in VARIANTS:
        predicted = recovery_model_at(doc, trigger_s, config.case, variant)
        by_variant[variant] = VariantError(predicted_recovery_s=predicted, recovery_error=relative_error(predicted, recovery))
    outputs = [c.output for c in copies if c.output is not None]
    error = relative_error(plan.predicted_recovery_s, recovery)
    return ValidationReport(
        workload=config.workload, profiles=str(config.profiles), raw=str(raw_file), plan=plan,
        validated_interval_ms=trigger_s * 1000, predicted_latency_ms=plan.predicted_latency_ms,
        predicted_recovery_s=plan.predicted_recovery_s, measured_latency_ms=latency, measured_recovery_s=recovery,
        measured_recovery_per_failure_s=measured, latency_error=relative_error(plan.predicted_latency_ms, latency),
        recovery_error=error, recovery_error_per_failure=[relative_error(plan.predicted_recovery_s, m) for m in measured],
        recovery_target=RECOVERY_TARGET, target_met=error <= RECOVERY_TARGET, by_variant=by_variant, lineage=lineage,
        copies=interval_rows(copies), outputs_equal_reference=all(o.equals_reference for o in outputs) and len(outputs) == len(copies),
        lost_windows=sum(o.lost_windows for o in outputs), duplicated_windows=sum(o.duplicated_windows for o in outputs),
        elapsed_s=time.time() - started)


# --- the benchmark --------------------------------------------------------------------------------

BENCH_MIN_INTERVALS = 5


class BenchConfig(RunSettings):
    """``ftops bench checkpoint``: profile, recommend, validate."""

    intervals_s: list[float]
    max_recovery_s: float | None = Field(default=None, gt=0, description="C_TRT (None: the median of the "
                                         "recovery model's values at the profiled intervals)")
    case: Case = DEFAULT_CASE
    variant: Variant = DEFAULT_VARIANT


class InSampleRow(BaseModel):
    """One profiled interval: measured values, the heuristic and the fitted models there."""

    checkpoint_interval_ms: float
    avg_ingress_rate: float
    max_ingress_rate: float
    utilisation: float
    avg_latency_ms: float
    model_latency_ms: float
    restore_s: float
    warmup_s: float
    measured_recovery_s: float
    heuristic_recovery_s: float
    model_recovery_s: float
    checkpoint_duration_ms: float | None
    outputs_equal_reference: bool


class GapAnalysis(BaseModel):
    """Where the validation's measured recovery time goes, and what the heuristic says with the
    validation run's own inputs (so the heuristic's form is separated from the profiling noise)."""

    detection_s: float
    restore_s: float
    first_batch_s: float
    rest_s: float = Field(description="after the first batch: catch-up batches and the trigger wait until the lag is back")
    warmup_s: float
    utilisation: float
    reprocess_s: float
    heuristic_with_measured_inputs_s: dict[str, float]


class BenchResult(BaseModel):
    command: str
    machine: str
    config: dict
    bound_s: float
    bound_source: str
    profile: ProfileReport
    rows: list[InSampleRow]
    r2_latency: float
    r2_recovery_by_case: dict[str, float]
    r2_model_vs_measured_recovery: float
    validation: ValidationReport
    gap: GapAnalysis
    elapsed_s: float


def default_bound_s(doc: ProfilesDocument, case: Case, variant: Variant) -> float:
    """A bound in the middle of what the profiled intervals achieve: the median of the recovery
    model's values at the profiled intervals (so the constraint decides rather than holds
    everywhere, and at least one profiled interval meets it)."""
    rows = summarise(doc)
    x = [r.checkpoint_interval_ms / 1000.0 for r in rows]
    model = fit_quadratic(x, recovery_points(rows, case, variant))
    return float(statistics.median(float(model.predict(v)) for v in x))


def run_bench(config: BenchConfig, command: str, progress: Progress | None = None) -> BenchResult:
    """Profile at least five intervals, plan with Chiron's optimiser, validate the recommendation."""
    say = progress or (lambda _msg: None)
    if len(check_intervals(config.intervals_s)) < BENCH_MIN_INTERVALS:
        raise InputError(f"--intervals: the benchmark profiles at least {BENCH_MIN_INTERVALS} intervals, got "
                         f"{len(config.intervals_s)}")
    started = time.time()
    work = config.work_dir.resolve()
    run = {k: v for k, v in config.model_dump().items() if k in RunSettings.model_fields}
    profile_config = ProfileConfig(**{**run, "work_dir": work / "profile"}, intervals_s=config.intervals_s,
                                   out=work / "profile" / "profiles.json")
    _check_settings(config)
    say(f"profiling {len(config.intervals_s)} intervals")
    profile = run_profiling(profile_config, lambda m: say(f"profile: {m}"))
    doc = load_profiles(profile.profiles)
    bound = config.max_recovery_s or default_bound_s(doc, config.case, config.variant)
    source = "--max-recovery-s" if config.max_recovery_s else f"median of A({config.case}, {config.variant}) at the profiled intervals"
    validate_config = ValidateConfig(**{**run, "work_dir": work / "validate"}, profiles=Path(profile.profiles),
                                     max_recovery_s=bound, case=config.case, variant=config.variant)
    say(f"validating with C_TRT = {bound:.1f} s ({source})")
    validation = validate_profiles(validate_config, lambda m: say(f"validate: {m}"))
    raw = ProfileRaw.model_validate_json(Path(profile.raw).read_text())
    rows = _in_sample_rows(doc, raw.copies, validation.plan, config.case, config.variant)
    return BenchResult(
        command=command, machine=f"{os.cpu_count()} cores, Spark {_spark_version()}, master {config.master}, "
        f"{min(config.parallel, len(config.intervals_s))} copies at once", config=json.loads(config.model_dump_json()),
        bound_s=bound, bound_source=source, profile=profile, rows=rows, r2_latency=validation.plan.r2["latency"],
        r2_recovery_by_case=validation.plan.recovery_r2_by_case,
        r2_model_vs_measured_recovery=_r2([r.measured_recovery_s for r in rows], [r.model_recovery_s for r in rows]),
        validation=validation, gap=_gap(work / "validate" / "validation.raw.json", config), elapsed_s=time.time() - started)


def _spark_version() -> str:
    import pyspark

    return pyspark.__version__


def _r2(observed: list[float], fitted: list[float]) -> float:
    from ft_core.checkpoint_tuning import r_squared

    return r_squared(observed, fitted)


def _in_sample_rows(doc: ProfilesDocument, copies: list[CopyResult], plan: CheckpointPlan, case: Case,
                    variant: Variant) -> list[InSampleRow]:
    summaries = summarise(doc)
    heuristic = recovery_points(summaries, case, variant)
    rows = {r.checkpoint_interval_ms: r for r in interval_rows(copies)}
    out = []
    for summary, trt in zip(summaries, heuristic):
        row, x = rows[summary.checkpoint_interval_ms], summary.checkpoint_interval_ms / 1000.0
        out.append(InSampleRow(
            checkpoint_interval_ms=summary.checkpoint_interval_ms, avg_ingress_rate=summary.avg_ingress_rate,
            max_ingress_rate=summary.max_ingress_rate, utilisation=summary.utilisation,
            avg_latency_ms=summary.avg_latency_ms, model_latency_ms=float(plan.latency_model.predict(x)),
            restore_s=summary.recovery_time_s, warmup_s=summary.warmup_time_s,
            measured_recovery_s=row.measured_recovery_s, heuristic_recovery_s=trt,
            model_recovery_s=float(plan.recovery_model.predict(x)), checkpoint_duration_ms=summary.checkpoint_duration_ms,
            outputs_equal_reference=row.outputs_equal_reference))
    return out


def _gap(raw_file: Path, config: BenchConfig) -> GapAnalysis:
    from ft_core.recovery_time import reprocess_time, total_recovery_time

    raw = ProfileRaw.model_validate_json(raw_file.read_text())
    failures = [f for c in raw.copies for f in c.failures]
    mean = lambda attr: statistics.fmean(getattr(f, attr) for f in failures)  # noqa: E731 - local shorthand
    t, r, w, first = mean("detection_s"), mean("restore_s"), mean("warmup_s"), mean("first_batch_s")
    u = statistics.fmean(c.avg_ingress_rate / c.max_ingress_rate for c in raw.copies)
    e = reprocess_time(raw.vector.trigger_s, config.case)
    heuristic = {v: total_recovery_time(e, t, r, w, u, variant=v, unit="s") for v in VARIANTS}
    return GapAnalysis(detection_s=t, restore_s=r, first_batch_s=first, rest_s=mean("recovery_time_s") - t - r - first,
                       warmup_s=w, utilisation=u, reprocess_s=e, heuristic_with_measured_inputs_s=heuristic)


def render_bench(result: BenchResult) -> str:
    """The benchmark's markdown (docs/benchmarks/checkpoint.md)."""
    v, p, g = result.validation, result.validation.plan, result.gap
    cfg = result.config
    lines = [
        "# Checkpoint-interval profiling on Spark (paper 004, Chiron)", "",
        f"Produced by `{result.command}` ({result.machine}; {result.elapsed_s / 60:.0f} min). "
        "Definitions of every measure: the docstring of `spark_jobs/profiling.py`.", "",
        f"- Workload `{cfg['workload']}`: " + ", ".join(f"{k}={val}" for k, val in _bench_params(result).items()) + ".",
        f"- Checkpoint vector: the trigger interval is profiled; {result.profile.vector.describe()} are fixed.",
        f"- Per copy: {cfg['duration_s']:g} s of steady operation around {cfg['failures']} failure(s): SIGKILL of the "
        "driver's process group near the end of a checkpoint interval, relaunch on the same checkpoint after "
        f"T = {cfg['detection_timeout_s']:g} s (`detection_timeout_s`).", "",
        "## Profiled intervals", "",
        f"Medians per interval (one copy each unless stated); TRT heuristic and A(CI) with case `{p.case}`, "
        f"variant `{p.variant}`.", "",
        "| interval s | I_avg rows/s | I_max rows/s | U | latency ms | P(CI) ms | R s | W s | TRT measured s "
        "| TRT heuristic s | A(CI) s | checkpoint cost ms | output = reference |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result.rows:
        cost = "-" if r.checkpoint_duration_ms is None else f"{r.checkpoint_duration_ms:.0f}"
        lines.append(f"| {r.checkpoint_interval_ms / 1000:g} | {r.avg_ingress_rate:.1f} | {r.max_ingress_rate:.1f} | "
                     f"{r.utilisation:.3f} | {r.avg_latency_ms:.0f} | {r.model_latency_ms:.0f} | {r.restore_s:.1f} | "
                     f"{r.warmup_s:.1f} | {r.measured_recovery_s:.1f} | {r.heuristic_recovery_s:.1f} | "
                     f"{r.model_recovery_s:.1f} | {cost} | {'yes' if r.outputs_equal_reference else 'NO'} |")
    lines += [
        "", "## Models", "",
        f"- R^2 of the latency model P: {result.r2_latency:.3f}.",
        "- R^2 of the recovery models A (fitted to the heuristic): "
        + ", ".join(f"{c} {val:.3f}" for c, val in result.r2_recovery_by_case.items()) + ".",
        f"- R^2 of A({p.case}) against the *measured* recovery times at the profiled intervals: "
        f"{result.r2_model_vs_measured_recovery:.3f}.", "",
        "## Recommendation", "",
        f"C_TRT = {result.bound_s:.1f} s ({result.bound_source}). Chiron's optimiser picks **{p.checkpoint_interval_ms / 1000:.3f} s** "
        f"(predicted latency {p.predicted_latency_ms:.0f} ms, predicted recovery {p.predicted_recovery_s:.1f} s; feasible "
        + ", ".join(f"{a / 1000:.2f}-{b / 1000:.2f} s" for a, b in p.feasible_ranges_ms) + "). "
        f"Applying it: {v.lineage.message}.", "",
        *(f"- warning: {w}" for w in p.warnings + result.profile.warnings), "",
        "## Validation", "",
        f"The recommended interval ({v.validated_interval_ms / 1000:g} s), a new copy with {cfg['failures']} failure(s):", "",
        "| | predicted | measured | relative error |", "|---|---|---|---|",
        f"| latency ms | {v.predicted_latency_ms:.0f} | {v.measured_latency_ms:.0f} | {v.latency_error:.1%} |",
        f"| recovery time s | {v.predicted_recovery_s:.1f} | {v.measured_recovery_s:.1f} | {v.recovery_error:.1%} |",
        "", "Per failure: " + ", ".join(f"{m:.1f} s ({e:.0%})" for m, e in
                                        zip(v.measured_recovery_per_failure_s, v.recovery_error_per_failure)) + ".",
        "", "The recovery model of each heuristic variant at the validated interval:", "",
        "| variant | predicted recovery s | relative error |", "|---|---|---|",
        *(f"| {name} | {e.predicted_recovery_s:.1f} | {e.recovery_error:.1%} |" for name, e in v.by_variant.items()),
        "", f"Outputs: {'every copy equals the reference' if v.outputs_equal_reference and all(r.outputs_equal_reference for r in result.rows) else 'NOT all equal to the reference'}; "
        f"{v.lost_windows} lost and {v.duplicated_windows} duplicated windows in the validation.", "",
        "## Target", "",
        f"Chiron's predicted recovery time within {v.recovery_target:.0%} of the measured one on validation: "
        f"**{'met' if v.target_met else 'not met'}** (error {v.recovery_error:.1%}).", "",
        f"Where the measured recovery time goes (validation, mean over failures): T {g.detection_s:.1f} s + R "
        f"{g.restore_s:.1f} s + first batch after the restart {g.first_batch_s:.1f} s (of which W {g.warmup_s:.1f} s) "
        f"+ {g.rest_s:.1f} s of catch-up batches and trigger waits until the lag is back = {v.measured_recovery_s:.1f} s. "
        f"With the validation run's own T, R, W and U = {g.utilisation:.3f} (E = {g.reprocess_s:.1f} s, case {p.case}) "
        "the heuristic gives " + ", ".join(f"{name} {val:.1f} s ({relative_error(val, v.measured_recovery_s):.0%})"
                                            for name, val in g.heuristic_with_measured_inputs_s.items())
        + f"; the profiled models give {v.predicted_recovery_s:.1f} s.", "",
    ]
    return "\n".join(lines)


def _bench_params(result: BenchResult) -> dict:
    raw = ProfileRaw.model_validate_json(Path(result.profile.raw).read_text())
    return raw.params
