"""``ftops bench redundancy``: speculative execution as redundancy against slowdowns, on Spark (thesis 002).

Problem (issue 7): under the thesis's slowdown model (exponential time between faults, Gaussian
magnitudes; Sec. 3.1) and a per-batch latency deadline, how many deadlines does a streaming job
miss without redundancy, with static redundancy levels and with the feedback controller
(Algorithm 2, Sec. 4.2), and at what CPU cost? Targets: at least 50 % fewer missed deadlines than
without redundancy; the controller meeting the bound with less redundancy cost than the smallest
static level that meets it.

Method (every scenario is a fresh run on one local standalone cluster of one-core workers, so that
a speculative copy has an executor to run on):

- one input, written in bulk and read one file per micro-batch (``maxFilesPerTrigger=1``): batch b
  processes the same records in every scenario, so durations compare across scenarios, and a slow
  batch does not change the next batch's work;
- ``fault-free``: no faults, no redundancy; the deadline is mu + 2 sigma of its batch durations
  (the thesis's P7 rule; here of the fault-free run, the latency the job has when nothing goes
  wrong), unless given;
- ``none``, ``static L``: faults, redundancy level L as Spark speculation
  (:func:`ft_core.redundancy.allocation.speculation_settings` via ``--redundancy-level``);
- ``controller``: faults, Algorithm 2 through :mod:`spark_jobs.redundancy.runtime` (p90 of a
  period's batches against the deadline as the bound; a level change resubmits the job from its
  checkpoint); ``controller live``: the same controller, a level change applied to the running job
  (:mod:`spark_jobs.redundancy.live`, no restart);
- faults: executor-local pauses (:mod:`spark_jobs.fault_injection`), one fault process per executor,
  the same seed in every scenario, from the end of the warm-up batches until the run stops;
- measured over the ``batches`` batches after the warm-up: missed deadlines, p50/p90/p99 duration
  (the controller's post-restart batches included: they are its cost); CPU from the event log
  (:mod:`spark_jobs.runtime.event_log`: every task attempt of those batches, speculative copies included);
- correctness: each scenario's output equals the pure-Python reference over the windows its
  watermark closed (speculation must not break exactly-once output).

A drill with the serving view (:func:`spark_jobs.drills.local.run_drill` with ``serve``) is appended.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ft_core.cli.progress import Progress
from ft_core.errors import ExternalError, FtopsError
from ft_core.redundancy.fault_profile import FaultProfile, parse_fault_profile
from spark_jobs.redundancy.runtime import percentile
from spark_jobs.runtime.event_log import TaskCosts, event_log_conf, task_costs

DEFAULT_PARAMS = ["rate=400", "window_s=4", "slide_s=2", "watermark_s=1", "p1=4", "n_pages=100"]
# For every scenario: split each one-second input file into one task per core (Spark never
# speculates a stage's only task, and a file scan of one small file is one task), and schedule
# tasks at once instead of waiting up to 3 s for a preferred executor (sub-second deadlines).
EXTRA_CONF = ["spark.sql.files.openCostInBytes=0", "spark.locality.wait=0s"]


class BenchError(ExternalError):
    """A benchmark scenario could not complete; the message says which and where to look."""


THESIS_PAUSED = 0.15 / 1.15  # the thesis's 150 ms pauses 1 s apart: an instance is paused 13 % of the time


class FaultModel(BaseModel):
    """Per executor: exponential time between pauses, truncated Gaussian magnitude (thesis Sec. 3.1)."""

    mean_gap_s: float = Field(default=10.0, gt=0)
    magnitude_ms: float = Field(default=1500.0, gt=0)
    stddev_ms: float = Field(default=375.0, ge=0)
    min_ms: float = Field(default=750.0, ge=0)
    max_ms: float = Field(default=3000.0, gt=0)

    @classmethod
    def scaled(cls, magnitude_ms: float, paused: float = THESIS_PAUSED) -> FaultModel:
        """The thesis's shape (sd = mean / 4, truncated to [mean / 2, 2 mean]) at ``magnitude_ms``,
        with the mean gap that keeps an executor paused the fraction ``paused`` of the time."""
        return cls(mean_gap_s=magnitude_ms / 1000 * (1 - paused) / paused, magnitude_ms=magnitude_ms,
                   stddev_ms=magnitude_ms / 4, min_ms=magnitude_ms / 2, max_ms=2 * magnitude_ms)


ControllerMode = Literal["resubmit", "live"]


class ControllerSetup(BaseModel):
    period_batches: int = Field(default=8, ge=2)
    step_pct: float = Field(default=25.0, gt=0)
    perf_margin: float = Field(default=0.2, ge=0, lt=1)
    warmup_batches: int = Field(default=2, ge=0)
    modes: list[ControllerMode] = Field(default_factory=lambda: ["resubmit", "live"], min_length=1,
                                        description="how a level change is applied: one scenario per mode")


def controller_scenario(mode: ControllerMode) -> str:
    return "controller" if mode == "resubmit" else f"controller {mode}"


class BenchRedundancyConfig(BaseModel):
    work_dir: Path
    pipeline: str = "topk"
    params: list[str] = Field(default_factory=lambda: list(DEFAULT_PARAMS))
    executors: int = Field(default=3, ge=2)
    shuffle_partitions: int = Field(default=3, ge=1)
    trigger_s: float = Field(default=0.2, gt=0)
    warmup_batches: int = Field(default=5, ge=3)
    batches: int = Field(default=40, ge=10)
    levels: list[float] = Field(default_factory=lambda: [0.25, 0.5, 1.0])
    controller: ControllerSetup | None = Field(default_factory=ControllerSetup)
    faults: FaultModel | None = Field(default=None, description="None: scaled to the machine after the fault-free run "
                                      "(mean pause = its median batch, executors paused 13 % of the time, as in the thesis)")
    pause_per_batch: float = Field(default=1.0, gt=0, description="with faults None: mean pause / median fault-free batch")
    deadline_ms: float | None = None
    seed: int = 1
    extra_conf: list[str] = Field(default_factory=lambda: list(EXTRA_CONF))
    shuffle_service: bool = Field(default=False, description="shuffle files served by Spark's external shuffle "
                                  "service (a worker's), not by the executor that wrote them")
    port_base: int = 7600
    timeout_s: float = 900.0
    drill: bool = True


class Latency(BaseModel):
    batches: int
    missed: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    stddev_ms: float


class ScenarioResult(BaseModel):
    name: str
    level: float | None
    faults: bool
    latency: Latency | None = None
    costs: TaskCosts | None = None
    restarts: int = 0
    levels_used: dict[str, int] = Field(default_factory=dict, description="controller: batches per applied level")
    output_ok: bool | None = None
    faults_applied: int = 0
    paused_s: float = 0.0
    durations_ms: list[float] = Field(default_factory=list, description="the measured batches' durations, in order")
    missed_causes: dict[str, int] = Field(default_factory=dict, description="missed batches by cause "
                                          "(spark_jobs.redundancy.misses.miss_causes)")
    error: str | None = None


class BenchResult(BaseModel):
    command: str
    config: BenchRedundancyConfig
    faults: FaultModel
    deadline_ms: float
    scenarios: list[ScenarioResult]
    drill: dict | None = None
    elapsed_s: float


def slowdown_profile(faults: FaultModel, executors: int) -> FaultProfile:
    """The thesis's timing faults, one process per executor (``executor[i]``)."""
    return parse_fault_profile({"name": "executor-pauses", "operators": {"executor": {
        "instances": list(range(executors)),
        "slowdown": {"every_s": {"mean": faults.mean_gap_s, "min": 0.0001, "max": 900},
                     "magnitude_ms": {"mean": faults.magnitude_ms, "stddev": faults.stddev_ms,
                                      "min": faults.min_ms, "max": faults.max_ms}}}}})


def latency(durations_ms: list[float], deadline_ms: float) -> Latency:
    return Latency(batches=len(durations_ms), missed=sum(d > deadline_ms for d in durations_ms),
                   p50_ms=percentile(durations_ms, 50), p90_ms=percentile(durations_ms, 90),
                   p99_ms=percentile(durations_ms, 99), mean_ms=statistics.fmean(durations_ms),
                   stddev_ms=statistics.pstdev(durations_ms))


def batch_spans(metrics: Path, first: int, last: int) -> dict[int, tuple[float, float]]:
    """(start epoch s, duration ms) per batch id in ``[first, last]``; a batch recorded twice (re-run after a
    restart) keeps its last record."""
    from ft_core.store.stream_progress import iso_epoch_s
    from spark_jobs.pipeline.metrics import read_metrics

    return {r["batch_id"]: (iso_epoch_s(r["timestamp"]) or 0.0, float(r["batch_duration_ms"]))
            for r in read_metrics(metrics) if first <= r["batch_id"] <= last}


def _in_order(spans: dict[int, tuple[float, float]]) -> list[float]:
    """The durations (ms) of :func:`batch_spans`, in batch order."""
    return [spans[b][1] for b in sorted(spans)]


def run_bench(config: BenchRedundancyConfig, progress: Progress, command: str) -> BenchResult:
    """Every scenario on one cluster, then the serving-view drill; always stops what it started."""
    from spark_jobs.cluster.standalone import cluster_down, cluster_up

    started = time.time()
    bench = _Bench(config, progress)
    bench.prepare_input()
    state_dir = config.work_dir / "spark"
    try:
        bench.state = cluster_up(_cluster_config(config, state_dir))
        _add_hosts(config, state_dir)
        scenarios = bench.run_scenarios()
    finally:
        cluster_down(state_dir)
    drill = _serving_drill(config, progress) if config.drill else None
    return BenchResult(command=command, config=config, faults=bench.faults, deadline_ms=bench.deadline_ms, scenarios=scenarios,
                       drill=drill, elapsed_s=time.time() - started)


def _add_hosts(config: BenchRedundancyConfig, state_dir: Path) -> None:
    """The other workers, each on its own loopback address: Spark runs a speculative copy only on
    another host than the original's (:mod:`spark_jobs.cluster.worker_hosts`)."""
    from spark_jobs.cluster.standalone import add_worker
    from spark_jobs.cluster.worker_hosts import loopback_host

    for i in range(1, config.executors):
        add_worker(state_dir, "rack-a", port_base=config.port_base + 100, ui_base=config.port_base + 200,
                   host=loopback_host(i))


def _cluster_config(config: BenchRedundancyConfig, state_dir: Path):
    from spark_jobs.cluster.standalone import ClusterConfig

    b = config.port_base
    return ClusterConfig(state_dir=state_dir, primary_domains=(("rack-a", 1),), standby_workers=0,
                         primary_port=b + 77, primary_ui=b + 90, standby_port=b + 78, standby_ui=b + 91,
                         worker_port_base=b + 100, worker_ui_base=b + 200, worker_timeout_s=10,
                         shuffle_service_port=shuffle_service_port(config))


def shuffle_service_port(config: BenchRedundancyConfig) -> int | None:
    return config.port_base + 37 if config.shuffle_service else None


class _Bench:
    """The scenarios of one benchmark run and the state they share (input, cluster, deadline)."""

    def __init__(self, config: BenchRedundancyConfig, progress: Progress):
        from spark_jobs.pipeline.loading import load_workload

        self.config, self.say = config, progress
        self.workload = load_workload(config.pipeline, config.params)
        self.reference: list[dict] = []
        self.input = config.work_dir / "input"
        self.last_batch = config.warmup_batches + config.batches - 1
        self.deadline_ms = config.deadline_ms or 0.0
        self.faults = config.faults
        self.state = None

    def prepare_input(self) -> None:
        from spark_jobs.pipeline import sample_input
        from spark_jobs.runtime.reference import batch_reference

        # one file per batch, plus slack for batches that read nothing and for the drain
        seconds = (self.last_batch + 20) * self.workload.file_s
        sample_input.write_seconds(self.workload, self.input, seconds)
        self.say("batch reference over the input every scenario reads")
        self.reference, _meta = batch_reference(self.workload, self.input, self.config.work_dir / "reference")

    def run_scenarios(self) -> list[ScenarioResult]:
        plan: list[tuple[str, float | None, bool, ControllerMode | None]] = [("fault-free", 0.0, False, None),
                                                                              ("none", 0.0, True, None)]
        plan += [(f"static {level:g}", level, True, None) for level in self.config.levels]
        if self.config.controller:
            plan += [(controller_scenario(mode), None, True, mode) for mode in self.config.controller.modes]
        results = []
        self.say.set_total(len(plan))
        for name, level, faults, controlled in plan:
            self.say.step(f"scenario {name}")
            result = self._scenario(name, level, faults, controlled)
            if name == "fault-free":
                self._calibrate(result)
            results.append(result)
        return results

    def _calibrate(self, result: ScenarioResult) -> None:
        """The deadline: mu + 2 sigma of the fault-free run's batch durations."""
        durations = self._durations(result.name) if result.error is None else []
        if len(durations) < 2:
            raise BenchError(f"the fault-free calibration run gave {len(durations)} batches, so there is no deadline"
                             + (f": {result.error}" if result.error else ""))
        if self.config.deadline_ms is None:
            self.deadline_ms = statistics.fmean(durations) + 2 * statistics.pstdev(durations)
            self.say(f"deadline: mu + 2 sigma of the fault-free batches = {self.deadline_ms:.0f} ms")
        result.latency = latency(durations, self.deadline_ms)
        if self.faults is None:  # the thesis's ratios at this machine's (and this load's) batch duration
            self.faults = FaultModel.scaled(self.config.pause_per_batch * statistics.median(durations))
            self.say(f"faults: pauses of {self.faults.magnitude_ms:.0f} ms every {self.faults.mean_gap_s:.1f} s per executor")

    def _spans(self, name: str) -> dict[int, tuple[float, float]]:
        return batch_spans(self._dir(name) / "output" / "_metrics" / "metrics.jsonl", self.config.warmup_batches,
                           self.last_batch)

    def _durations(self, name: str) -> list[float]:
        return _in_order(self._spans(name))

    def _dir(self, name: str) -> Path:
        return self.config.work_dir / name.replace(" ", "-")

    def _run_argv(self, name: str) -> list[str]:
        out = self._dir(name)
        argv = ["--pipeline", self.config.pipeline, "--role", "primary", "--input", self.input, "--output", out / "output",
                "--checkpoint", out / "checkpoint", "--master", self.state.master_url("primary"),
                "--trigger-s", self.config.trigger_s, "--max-files-per-trigger", 1,
                "--shuffle-partitions", self.config.shuffle_partitions, "--total-executor-cores", self.config.executors,
                "--state-dir", self.config.work_dir / "spark", "--conf", "spark.ui.enabled=false"]
        service = shuffle_service_port(self.config)
        shuffle = ["spark.shuffle.service.enabled=true", f"spark.shuffle.service.port={service}"] if service else []
        for item in [*event_log_conf(out / "events"), *self.config.extra_conf, *shuffle]:
            argv += ["--conf", item]
        for item in self.config.params:
            argv += ["--param", item]
        return [str(a) for a in argv]

    def _scenario(self, name: str, level: float | None, faults: bool, controlled: ControllerMode | None) -> ScenarioResult:
        from spark_jobs.runtime.launch import stop_run

        result = ScenarioResult(name=name, level=level, faults=faults)
        run = _ScenarioRun(self, name, level, controlled)
        try:
            run.start()
            run.wait_for_batch(self.config.warmup_batches - 1)
            injection = run.inject(slowdown_profile(self.faults, self.config.executors)) if faults else None
            run.wait_for_batch(self.last_batch)
            if injection is not None:
                report = injection.stop()
                result.faults_applied = report.applied.get("slowdown", 0)
                result.paused_s = sum(report.paused_s.values())
        except FtopsError as exc:
            result.error = str(exc)
            self.say(f"  {name} failed: {exc}")
        finally:
            run.stop_injection()
            stop_run(self._dir(name) / "output")
            run.kill_leftovers()
        if result.error is None:
            self._measure(result, run)
        return result

    def _measure(self, result: ScenarioResult, run: _ScenarioRun) -> None:
        from spark_jobs.redundancy.misses import miss_causes
        from spark_jobs.runtime.event_log import speculative_attempts

        spans = self._spans(result.name)
        durations = _in_order(spans)
        result.durations_ms = durations
        result.latency = latency(durations, self.deadline_ms) if self.deadline_ms else None
        events = self._dir(result.name) / "events"
        result.costs = task_costs(events, self.config.warmup_batches, self.last_batch)
        if self.deadline_ms:
            copies = Counter(a["batch"] for a in speculative_attempts(events) if a["batch"] is not None)
            result.missed_causes = miss_causes(spans, run.pauses(), dict(copies), self.deadline_ms)
        result.restarts = run.restarts()
        result.levels_used = run.levels_used(self.config.warmup_batches, self.last_batch)
        result.output_ok = self._output_ok(self._dir(result.name) / "output")
        p90 = "-" if result.latency is None else f"{result.latency.p90_ms:.0f}"
        self.say(f"  {result.name}: {len(durations)} batches, p90 {p90} ms, missed "
                 f"{'-' if result.latency is None else result.latency.missed}, restarts {result.restarts}")

    def _output_ok(self, output: Path) -> bool | None:
        """The run's windows equal the batch reference over the windows its watermark closed."""
        from spark_jobs.drills.progress import watermark_of
        from spark_jobs.pipeline.sink import closed_rows, compare_output, read_output

        # the last batch's progress may not have reached the metrics file when the run stopped:
        # its output then shows that the watermark went further
        mark = max([watermark_of(output) or 0, *(r["window_end"] for r in read_output(output))])
        return compare_output(output, closed_rows(self.reference, mark)).equal


class _ScenarioRun:
    """One scenario's job (and, for the controller, its resubmissions)."""

    def __init__(self, bench: _Bench, name: str, level: float | None, controlled: ControllerMode | None):
        self.bench, self.name, self.level, self.controlled = bench, name, level, controlled
        self.out = bench._dir(name)
        self.metrics = self.out / "output" / "_metrics" / "metrics.jsonl"
        self.state_file = self.out / "controller.json"
        self.procs: list[subprocess.Popen] = []
        self.injection = None
        self.deadline = None

    def start(self) -> None:
        from ft_core.redundancy.controller import ControllerParams
        from spark_jobs.redundancy import runtime as redundancy_runtime
        from spark_jobs.runtime.launch import launch_run, run_args

        self.out.mkdir(parents=True, exist_ok=True)
        self.deadline = time.monotonic() + self.bench.config.timeout_s
        argv = self.bench._run_argv(self.name)
        if self.controlled:
            setup = self.bench.config.controller
            params = ControllerParams(latency_bound_ms=self.bench.deadline_ms, step_min_pct=setup.step_pct,
                                      perf_margin=setup.perf_margin, max_redundancy_pct=100.0)
            proc, _ = redundancy_runtime.start(argv, params, self.state_file, live=self.controlled == "live")
        else:
            proc, _ = launch_run(run_args([*argv, "--redundancy-level", f"{self.level:g}"]))
        self.procs.append(proc)

    def inject(self, profile: FaultProfile):
        from spark_jobs.fault_injection import Injection

        self.injection = Injection(profile, duration_s=self.bench.config.timeout_s * 2, seed=self.bench.config.seed,
                                   output=self.out / "output").start()
        return self.injection

    def wait_for_batch(self, batch_id: int) -> None:
        """Poll the run's progress until ``batch_id`` is done; the controller steps meanwhile."""
        from spark_jobs.redundancy import runtime as redundancy_runtime
        from spark_jobs.runtime.waiting import wait_for
        from spark_jobs.pipeline.metrics import read_metrics

        def done() -> bool:
            if max((r["batch_id"] for r in read_metrics(self.metrics)), default=-1) >= batch_id:
                return True
            if self.procs[-1].poll() is not None:
                raise BenchError(f"scenario {self.name}: the job exited ({self.procs[-1].returncode}); "
                                 f"see {self.out / 'output' / '_logs'}")
            if self.controlled:
                setup = self.bench.config.controller
                record, proc = redundancy_runtime.step(self.state_file, min_batches=setup.period_batches,
                                                       warmup_batches=setup.warmup_batches)
                if proc is not None:
                    self.procs.append(proc)
                if record.action in ("resubmit", "apply"):
                    self.bench.say(f"  controller: p90 {record.metric_ms:.0f} ms -> level {record.level:g} "
                                   f"({'resubmitted' if proc is not None else 'applied to the running job'})")
            return False

        wait_for(done, timeout_s=max(0.0, self.deadline - time.monotonic()), interval_s=1.0, error=BenchError,
                 what=f"batch {batch_id} of scenario {self.name} (the scenario's {self.bench.config.timeout_s:.0f} s)")

    def pauses(self) -> list[tuple[float, float]]:
        """(start epoch s, ms) of each executor pause the injection applied (none without faults)."""
        report = self.injection.report if self.injection is not None else None
        if report is None:
            return []
        return [(report.started_at + f.applied_at_s, f.magnitude_ms) for f in report.faults
                if f.kind == "slowdown" and f.outcome == "applied" and f.magnitude_ms]

    def stop_injection(self) -> None:
        if self.injection is not None and self.injection.report is None:
            self.injection.stop()

    def kill_leftovers(self) -> None:
        from spark_jobs.runtime.launch import kill_group

        for proc in self.procs:
            if proc.poll() is None:
                kill_group(proc)

    def restarts(self) -> int:
        return len(self.procs) - 1

    def levels_used(self, first: int, last: int) -> dict[str, int]:
        """Controller: measured batches per applied level (the i-th application run had the i-th level)."""
        from spark_jobs.redundancy.runtime import load_state
        from spark_jobs.pipeline.metrics import application_run, read_metrics

        if not self.controlled:
            return {}
        if self.controlled == "live":
            return self._live_levels_used(first, last)
        launches = [h.level for h in load_state(self.state_file).history if h.action in ("started", "resubmit")]
        runs: list[str] = []
        counts: dict[str, int] = {}
        for rec in read_metrics(self.metrics):
            if application_run(rec) not in runs:
                runs.append(application_run(rec))
            if first <= rec["batch_id"] <= last:
                level = f"{launches[min(len(runs), len(launches)) - 1]:g}"
                counts[level] = counts.get(level, 0) + 1
        return counts

    def _live_levels_used(self, first: int, last: int) -> dict[str, int]:
        """Live: measured batches per level, from the changes the driver applied."""
        from spark_jobs.redundancy.live import applied_levels, level_of_batch

        changes = applied_levels(self.out / "output")
        counts: dict[str, int] = {}
        for batch in range(first, last + 1):
            level = level_of_batch(changes, batch)
            key = "-" if level is None else f"{level:g}"
            counts[key] = counts.get(key, 0) + 1
        return counts


def _serving_drill(config: BenchRedundancyConfig, progress: Progress) -> dict:
    """A drill with the serving view on (topk, half of the tasks replicated)."""
    from spark_jobs.drills.bench import DEFAULT_PARAMS as DRILL_PARAMS
    from spark_jobs.drills.documents import DrillConfig
    from spark_jobs.drills.local import run_drill, wait_for_ports
    from spark_jobs.pipeline.loading import load_workload

    params = DRILL_PARAMS["topk"]
    budget = len(load_workload("topk", params).task_ids()) // 2
    drill = DrillConfig(pipeline="topk", params=params, budget=budget, work_dir=config.work_dir / "serving-drill",
                        serve=True, port_base=config.port_base, timeout_s=config.timeout_s)
    progress(f"serving-view drill (topk, R={budget})")
    try:
        wait_for_ports(drill)
        return run_drill(drill, progress=lambda m: progress(f"  {m}")).model_dump(mode="json")
    except FtopsError as exc:
        return {"error": str(exc)}


def save(result: BenchResult, path: Path) -> None:
    path.write_text(json.dumps(result.model_dump(mode="json"), indent=1))
