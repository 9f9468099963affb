"""Profiling copies: isolated copies of the job on one fed input, launched, failed, recovered and measured."""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path

from pydantic import BaseModel

from ft_core.errors import FtopsError
from spark_jobs.profiling.measures import (
    STEADY_BATCHES,
    InputTimeline,
    catch_up_rate,
    checkpoint_costs_ms,
    first_steady,
    in_periods,
    kill_time,
    outlier_filtered_mean,
    read_batches,
    recovered_batch,
    steady_ingress,
    window_latencies_ms,
    with_lags,
    written_windows,
)
from spark_jobs.profiling.reports import BatchSample, CopyResult, FailureSample, OutputCheck
from spark_jobs.profiling.settings import ProfilingError, Progress, RunSettings
from spark_jobs.profiling.vector import CheckpointVector, pinned_settings
from spark_jobs.runtime.launch import kill_group
from spark_jobs.runtime.waiting import wait_for
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.feed import FeedMark, LiveFeed

POLL_S = 0.5


class _Aborted(Exception):
    """Another copy failed (or the user interrupted): stop quietly, the first error is reported."""


class _Shared:
    """What the copies of one run share: the feed, the abort flag, the live processes, UI slots."""

    def __init__(self, settings: RunSettings, workload: Workload, input_dir: Path, say: Progress):
        import queue

        self.settings, self.workload, self.say = settings, workload, say
        self.feed = LiveFeed(workload, input_dir, name="profile-feed")
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
            kill_group(proc)
            self.ended(proc)


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
        self.settings, self.workload = shared.settings, shared.workload
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
        self.loads: list[float] = []  # the machine's 1-minute load average at every poll

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
        argv = ["--pipeline", s.pipeline, "--role", "primary", "--input", self.shared.feed.input_dir, "--output", self.output,
                "--checkpoint", self.checkpoint, "--master", s.master, "--trigger-s", v.trigger_s,
                "--shuffle-partitions", v.shuffle_partitions, "--query-name", f"ftops-profile-{self.copy_id}",
                "--driver-memory", s.driver_memory]
        if v.min_deltas_for_snapshot is not None:
            argv += ["--min-deltas-for-snapshot", v.min_deltas_for_snapshot]
        if s.master.startswith("spark://"):
            argv += ["--total-executor-cores", 1]
        confs = [f"{k}={val}" for k, val in sorted(s.spark_conf.items())] + v.spark_confs()  # the vector's win
        confs.append("spark.ui.enabled=false" if s.ui_port_base is None else f"spark.ui.port={s.ui_port_base + self.slot}")
        if s.event_log:
            confs += ["spark.eventLog.enabled=true", "spark.eventLog.compress=false", f"spark.eventLog.dir={self.events}"]
        for conf in confs:
            argv += ["--conf", conf]
        for item in s.params:
            argv += ["--param", item]
        return argv

    def _launch(self) -> None:
        from spark_jobs.runtime.launch import launch_run, run_args

        if self.shared.abort.is_set():
            raise _Aborted
        self.events.mkdir(parents=True, exist_ok=True)
        self.proc, self.log = launch_run(run_args(self._argv()))
        self.shared.started(self.proc)

    def _batches(self, run: int | None = None) -> list[BatchSample]:
        batches = with_lags(read_batches(self.metrics, self.restarts), InputTimeline(self.shared.feed.marks()))
        return batches if run is None else [b for b in batches if b.run == run]

    def _steady_start(self, run: int) -> float | None:
        first = first_steady(self._batches(run), self.vector.trigger_s, self.workload.file_s)
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
                kill_group(self.proc)
                self.shared.ended(self.proc)
                kill = _Kill(t_kill=t_kill, overrunning=overrunning, baseline_lag_s=baseline, pinned_before=pinned)
                self.kills.append(kill)
                return kill

    def _recovered(self, kill: _Kill, run: int) -> float | None:
        batch = recovered_batch(self._batches(run), kill.baseline_lag_s, self.workload.file_s)
        return None if batch is None else batch.end

    def _stop(self) -> None:
        """Stop between micro-batches (SIGTERM to the Python driver), then the process group."""
        from spark_jobs.runtime.launch import stop_run

        stop_run(self.output, timeout_s=60.0)
        self.exit_code = self.proc.wait(timeout=30)
        self.shared.ended(self.proc)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            kill_group(self.proc)
        if self.proc is not None:
            self.shared.ended(self.proc)

    # waiting
    def _say(self, message: str) -> None:
        self.shared.say(f"{self.copy_id}: {message}")

    def _check_alive(self) -> None:
        self.loads.append(os.getloadavg()[0])
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
        def probe():
            self._check_alive()
            return done()

        def sleep(seconds: float) -> None:
            if self.shared.abort.wait(seconds):
                raise _Aborted

        return wait_for(probe, timeout_s=self.settings.timeout_s + extra_s, interval_s=POLL_S, sleep=sleep,
                        error=ProfilingError, what=f"{what} (copy {self.copy_id} failed while {self.stage}; logs in {self.dir})")

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
        timeline = InputTimeline(self.shared.feed.marks())
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
            final_exit_code=self.exit_code, started_at=started, finished_at=time.time(), output_dir=str(self.output),
            load_1m=statistics.fmean(self.loads) if self.loads else None)

    def _catch_up(self, batches: list[BatchSample], run: int, kill: _Kill) -> list[BatchSample]:
        """The batches of the restarted job up to and including the recovered one."""
        post = [b for b in batches if b.run == run]
        done = recovered_batch(post, kill.baseline_lag_s, self.workload.file_s)
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

    def __init__(self, settings: RunSettings, workload: Workload, say: Progress):
        self.settings, self.workload, self.say = settings, workload, say
        self.root = settings.work_dir.resolve()
        self.input_dir = self.root / "input"
        self.shared = _Shared(settings, workload, self.input_dir, say)
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
        from spark_jobs.runtime.reference import batch_reference

        self.say("running the batch reference over the final input")
        reference, _meta = batch_reference(self.workload, self.input_dir, self.root / "reference")
        return [r.model_copy(update={"output": output_check(Path(r.output_dir), reference, r.batches)}) for r in results]

    def feed_marks(self) -> list[FeedMark]:
        return self.shared.feed.marks()

    def teardown(self) -> None:
        """Stop the input and every process a copy still has (by process group)."""
        self.shared.abort.set()
        self.shared.feed.stop()
        self.shared.kill_all()



def output_check(output: Path, reference: list[dict], batches: list[BatchSample]) -> OutputCheck:
    """A copy's sink against the reference windows its last watermark closed (no window lost or
    written twice across the restarts)."""
    from spark_jobs.pipeline.sink import closed_rows, compare_output

    final = max((b.watermark_ms for b in batches if b.watermark_ms is not None), default=None)
    expected = closed_rows(reference, final) if final is not None else []
    cmp = compare_output(output, expected)
    return OutputCheck(equals_reference=cmp.equal, final_watermark_ms=final, windows=cmp.expected_windows,
                       lost_windows=len(cmp.lost_windows), duplicated_windows=len(cmp.duplicated_windows))


def run_copies(settings: RunSettings, workload: Workload, vectors: list[tuple[CheckpointVector, int]],
                say: Progress) -> tuple[list[CopyResult], list[FeedMark], float]:
    run = _Run(settings, workload, say)
    try:
        return run.execute(vectors), run.feed_marks(), run.started_at
    finally:
        run.teardown()


