"""Chaos drills: a correlated failure under a running streaming job, measured as its users see it.

Problem (issue 4, paper 000 Section VI): show on a real Spark standalone cluster that partial active
replication keeps *tentative outputs* flowing while the primary is down, that their measured accuracy
matches the planner's predicted output fidelity (Fig. 12), and that the primary recovers from its
checkpoint without losing or duplicating a window.

One drill (:func:`run_drill`), every step polling real state with generous deadlines:

1. validate (the pipeline's parameters, the plan's tasks, the outage against the pipeline's windows:
   :mod:`spark_jobs.drills.design`, the ports, the engine's settings) before anything starts or is written; the
   plan is ``--plan`` or computed by the planner for ``budget``; its OF (and IC) are recomputed from the
   pipeline's own topology document. A refusal (InputError) before the jobs start leaves the work dir as it
   was: removed when the drill created it, emptied again when it was given empty;
2. start a private cluster (``spark_jobs.cluster.standalone``): the primary pool's workers all in the failure
   domain ``fail_domain``, the standby pool for the replica; and a history store of the drill's own, where the
   pipeline is registered as a job deployed on that cluster, with the plan as its replication plan
   (:mod:`spark_jobs.drills.private_job`);
3. feed the pipeline's seeded sample input in real time; submit the primary (whole pipeline, checkpointing) to the
   primary pool and the replica (only the replicated MC-trees) to the standby pool, as ``ftops job start`` and a
   plan run submit them; an empty plan starts no replica (R = 0: no tentative output);
4. wait until both jobs have started up: the primary has closed ``steady_windows`` windows and each watermark is
   within ``steady_lag_s`` plus three of its recent micro-batch durations of the input's (a job's watermark
   trails the input by up to three batches: the one that read the data, the one that reports it, and the wait
   for the next; on a loaded machine a batch takes seconds);
5. **the drill, by the drill engine** (:func:`spark_jobs.drills.job_drill.drill_job`, the steps of ``ftops drill
   job`` and the ``ftops_chaos_drill`` DAG): under the job's lease, the steady-state hypothesis, the fault
   journaled then applied through the cluster seam (``host-down`` SIGKILLs every worker of ``fail_domain`` with
   its executors, on a namespace network its hosts down whole; ``partition`` cuts the domain's hosts off the
   network, ``network="namespaces"`` only; with ``kill_driver`` the primary driver dies too), the capacity
   given back in that domain after ``new_capacity_after_s``, a dead driver resubmitted from its checkpoint, the
   catch-up, the measures against a batch reference, the steady state and the failure domains after, and the
   finish that undoes whatever is still open. Because the primary's whole executor pool is in that domain, the
   primary is *down*, not silently rescheduled onto survivors: the PPA scenario;
6. stop the input; while the primary closes every window, the batch reference runs over the same (now final)
   input; compare the whole output.

Measures (times in seconds from the fault, from file modification times and the jobs' own progress records, not
from the polling loop): the engine's (the failure windows and the replica's accuracy in each, the first tentative
output, the time caught up, its forecast beside it) and this drill's own:

- ``lost_windows``, ``duplicated_windows``, ``output_equals_reference``: the primary's final sink against the
  reference's windows closed by the whole input (:func:`sink.compare_output`), after the drain;
- ``detection_s``: the master lists the failed workers DEAD (at once for a killed process on loopback, after its
  worker timeout for a host that answers nothing or is cut off), watched beside the engine;
- the replica's cost (its executor CPU per input record against the primary's, from the event logs) and, with
  ``serve``, what the serving view's consumers saw.

The verdict is the engine's (output, recovery, steady state after, failure domains as before) and the whole
output's (:attr:`~spark_jobs.drills.documents.DrillReport.verdict_reasons`).

Whatever happens (an exception, Ctrl-C), everything the drill started is stopped (:meth:`_Drill.teardown`: the
input, the cluster with every driver registered in it, the store); a failure raises :class:`DrillError` naming the
step.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ft_core.errors import ExternalError, FtopsError, InputError
from ft_core.replication.predicted_accuracy import AccuracyEstimate
from spark_jobs.drills.documents import DrillConfig, DrillPorts, DrillReport
from spark_jobs.drills.engine import DrillSettings, DrillState
from spark_jobs.drills.private_job import PrivateJob, job_name
from spark_jobs.drills.progress import recent_batch_s, watermark_of, window_files, window_slide_s
from spark_jobs.drills.replica_cost import ReplicaCost, replica_cost
from spark_jobs.pipeline.accuracy import window_of
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.feed import LiveFeed
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.runtime.launch import kill_group
from spark_jobs.runtime.waiting import wait_for

Progress = Callable[[str], None]


class DrillError(ExternalError):
    """A drill could not complete a step; the message names the step and where to look."""


class DrillSetup(BaseModel):
    """The validated inputs of a drill (everything checked before a process starts)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    workload: Workload
    plan_tasks: list[str]
    predicted_output_fidelity: float
    predicted_internal_completeness: float
    ports: DrillPorts
    settings: DrillSettings
    design_warnings: list[str] = []


def prepare_drill(config: DrillConfig) -> DrillSetup:
    """Validate the pipeline, the plan (given or computed), the drill's design and the ports; raises InputError."""
    from ft_core.replication.fidelity import internal_completeness, replicated_fidelity
    from ft_core.topology.task_graph import build_task_graph
    from spark_jobs.drills.design import check_design
    from spark_jobs.runtime.run_pipeline import load_plan_tasks

    workload = load_workload(config.pipeline, config.params)
    workload.require_sample("a local drill (it feeds the pipeline's seeded input in real time)")
    if not all(s.replayable for s in workload.stream_sources()):
        raise InputError(f"--pipeline: {workload.name} reads a source that cannot be replayed; a drill compares with a "
                         "batch reference over the same input")
    graph = build_task_graph(workload.topology())
    if config.plan is not None:
        tasks = sorted(load_plan_tasks(config.plan, workload))
    elif config.budget is not None:
        from ft_core.replication.planners import plan_replication

        tasks = plan_replication(graph, config.budget, config.algorithm).tasks
    else:
        raise InputError("--plan or --budget: a drill needs a replication plan or a budget to plan one")
    work = config.work_dir.resolve()
    if work.exists() and (not work.is_dir() or any(work.iterdir())):
        raise InputError(f"--work-dir: {work} is not an empty folder; a drill needs a fresh one")
    if config.fault == "partition" and config.network != "namespaces":
        raise InputError("--fault partition: a network partition needs --network namespaces (on loopback nothing "
                         "can be cut)")
    if config.network == "namespaces":
        from spark_jobs.cluster.netns import check_can_create

        check_can_create()
    chosen = graph.indices(tasks, "plan task")
    failed = [i for i in range(graph.n) if i not in chosen]
    design = check_design(workload, config.new_capacity_after_s, config.speedup)
    check_drill_ports(config)
    return DrillSetup(workload=workload, plan_tasks=tasks, predicted_output_fidelity=replicated_fidelity(graph, chosen),
                      predicted_internal_completeness=internal_completeness(graph, failed),
                      ports=DrillPorts.from_base(config.port_base), settings=engine_settings(config, workload),
                      design_warnings=design.warnings)


def engine_settings(config: DrillConfig, workload: Workload) -> DrillSettings:
    """The drill engine's settings for this drill: its domain, fault and outage; the engine's steady-state and lag
    bounds (event seconds) scaled by the input's speed; a duration bound the drill's own deadlines fit in."""
    from spark_jobs.drills.engine import drill_settings

    defaults = DrillSettings(job=job_name(workload.name))
    return drill_settings(dict(
        job=defaults.job, domain=config.fail_domain, fault=config.fault, kill_driver=config.kill_driver,
        replacement_delay_s=config.new_capacity_after_s, timeout_s=max(30.0, config.timeout_s),
        steady_lag_s=defaults.steady_lag_s * config.speedup, max_lag_s=defaults.max_lag_s * config.speedup,
        max_duration_s=max(defaults.max_duration_s, config.new_capacity_after_s + 3 * config.timeout_s)))


def cluster_config(config: DrillConfig, state_dir: Path):
    """The private cluster of a drill: the primary pool all in the failure domain, the standby pool."""
    from spark_jobs.cluster.standalone import ClusterConfig

    p = DrillPorts.from_base(config.port_base)
    return ClusterConfig(state_dir=state_dir, primary_domains=((config.fail_domain, config.primary_workers),),
                         standby_workers=config.standby_workers, worker_timeout_s=config.worker_timeout_s,
                         primary_port=p.primary_port, primary_ui=p.primary_ui, standby_port=p.standby_port,
                         standby_ui=p.standby_ui, worker_port_base=p.worker_port_base, worker_ui_base=p.worker_ui_base,
                         start_timeout_s=config.timeout_s, network=config.network, subnet=config.subnet)


def check_drill_ports(config: DrillConfig) -> None:
    """Every port of the drill's cluster can be bound on 127.0.0.1, else InputError naming ``--port-base``, the
    port, what the drill runs there and a base whose ports are free (checked before any slow work)."""
    from spark_jobs.cluster.standalone import check_ports_free

    if config.network == "namespaces":  # every daemon on a new host of its own
        return
    try:
        check_ports_free(cluster_config(config, config.work_dir / "spark"))
    except InputError as exc:
        free = next((b for b in range(config.port_base + 1000, 65000, 1000) if _ports_free(config, b)), None)
        busy = re.match(r"port (\d+) on (\S+) is in use", str(exc))  # check_ports_free names the first port in use
        what = str(exc) if busy is None else \
            f"{busy[0]} ({DrillPorts.role(int(busy[1]) - config.port_base)}, BASE+{int(busy[1]) - config.port_base})"
        other = "choose another --port-base" + (f" ({free} is free)" if free else "")
        raise InputError(f"--port-base {config.port_base}: {what}; a drill takes ports BASE+40 to BASE+299: {other}, "
                         "or stop what holds it", field="--port-base") from None


def _ports_free(config: DrillConfig, base: int) -> bool:
    from spark_jobs.cluster.standalone import check_ports_free

    try:
        check_ports_free(cluster_config(config.model_copy(update={"port_base": base}), config.work_dir / "spark"))
    except InputError:
        return False
    return True


def wait_for_ports(config: DrillConfig, timeout_s: float = 180.0) -> None:
    """Wait until a drill's cluster ports can be bound. Right after a drill, connections of its killed
    daemons linger in the kernel for up to a minute and still hold the ports; back-to-back drills
    (the benchmark) wait for them, while a single drill refuses a port in use at once (exit 2)."""
    from spark_jobs.runtime.waiting import wait_while

    if config.network == "namespaces":  # every daemon on a new host of its own: nothing lingers there
        return
    if not wait_while(lambda: not _ports_free(config, config.port_base), timeout_s=timeout_s, interval_s=2.0):
        check_drill_ports(config)  # still in use: names the port


def run_drill(config: DrillConfig, progress: Progress | None = None) -> DrillReport:
    """Run one drill end to end (see the module docstring); always stops what it started, and a refusal
    before the jobs start leaves the work dir as it was."""
    say = progress or (lambda _msg: None)
    work = config.work_dir.resolve()
    created = next((p for p in reversed([work, *work.parents]) if not p.exists()), None)  # the first folder it makes
    setup = prepare_drill(config)
    for warning in setup.design_warnings:
        say(f"warning: {warning}")
    drill = _Drill(config, setup, say)
    refused = False
    try:
        return drill.run()
    except InputError:
        refused = drill.stage in _BEFORE_JOBS
        raise
    finally:
        drill.teardown()
        if refused:
            _restore(work, created)


_BEFORE_JOBS = ("validating", "predicting tentative accuracy", "starting the clusters", "registering the job")


def _restore(work: Path, created: Path | None) -> None:
    """Put the work dir back as it was before the drill: remove the folders the drill created (``created``: the
    first of them, ``work`` or an ancestor), or empty ``work`` again when it existed (it was empty: validated)."""
    import shutil

    if created is not None:
        shutil.rmtree(created, ignore_errors=True)
        return
    for child in work.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


class _Drill:
    """The steps of one drill and what they started (see :func:`run_drill`)."""

    def __init__(self, config: DrillConfig, setup: DrillSetup, progress: Progress):
        self.config, self.setup, self.workload, self.say = config, setup, setup.workload, progress
        self.work = config.work_dir.resolve()
        self.dirs = {name: self.work / name for name in ("reference", "spark")}
        self.job: PrivateJob | None = None
        self.feed: LiveFeed | None = None
        self.stage = "validating"
        self.cluster_started = False
        self.t0 = time.time()
        self.drilled: DrillState | None = None  # the engine's state once the drill reached its verdict
        self.experiment = None  # the engine's experiment report
        self.detection: _DeadWatch | None = None
        self.final_ms: int | None = None
        self.reference: subprocess.Popen | None = None
        self.reference_rows: list[dict] = []
        self.serving: subprocess.Popen | None = None  # the serving view (opt-in), not one of the jobs
        self.serving_stopped = False
        self.estimate: AccuracyEstimate | None = None
        if config.serve:
            self.dirs["view"] = self.work / "view"

    # steps
    def run(self) -> DrillReport:
        for path in self.dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        for stage, step in (("predicting tentative accuracy", self._predict),
                            ("starting the clusters", self._start_cluster),
                            ("registering the job", self._register), ("starting the jobs", self._start_jobs),
                            ("waiting for the jobs to start up", self._wait_started), ("drilling the job", self._drill),
                            ("draining the input", self._drain), ("running the batch reference", self._reference)):
            self.stage = stage
            self.say(f"{stage}...")
            try:
                step()
            except (FtopsError, KeyboardInterrupt):
                raise
            except Exception as exc:  # an unexpected failure still says where it happened
                raise DrillError(f"drill failed while {stage}: {type(exc).__name__}: {exc}") from exc
        self.stage = "reporting"
        return self._report()

    def _predict(self) -> None:
        from spark_jobs.drills.prediction import predict_for_drill

        c = self.config
        if c.predict_accuracy:
            self.estimate = predict_for_drill(self.setup, c.budget, c.objective, c.accuracy_sample_s,
                                              self.work / "accuracy", replan=c.plan is None)
            self.say(f"predicted tentative accuracy {self.estimate.spread()}, OF {self.setup.predicted_output_fidelity:.3f}")

    def _start_cluster(self) -> None:
        from spark_jobs.cluster.standalone import cluster_up

        self.cluster_started = True  # even a failed start may have left a state file to clean
        self.state = cluster_up(cluster_config(self.config, self.dirs["spark"]))
        self.job = PrivateJob(self.setup.settings.job, self.work, self.state, self.config, self.workload)
        self.job.start_store()

    def _register(self) -> None:
        algorithm = self.config.algorithm if self.config.plan is None else "given plan"
        self.job.register(self.setup.plan_tasks, self.setup.predicted_output_fidelity, self.estimate, algorithm)

    def _start_jobs(self) -> None:
        self.feed = LiveFeed(self.workload, self.job.deployment.input, self.config.speedup, name="drill-feed")
        self.feed.start()
        self.job.submit()
        if not self.setup.plan_tasks:
            self.say("the plan is empty: no replica (no tentative output)")
        if self.config.serve:
            from spark_jobs.serving_view import start_serving

            self.serving = start_serving(self.job.deployment.primary_output, self.job.replica_output, self.dirs["view"],
                                         self.setup.predicted_output_fidelity, tuple(self.workload.pipeline.output.key))

    def _outputs(self) -> dict[str, Path]:
        outputs = {"primary": self.job.deployment.primary_output}
        if self.job.replica_output is not None:
            outputs["replica"] = self.job.replica_output
        return outputs

    def _wait_started(self) -> None:
        outputs = self._outputs()

        def near_input(output: Path) -> bool:
            mark = watermark_of(output)
            live = self.feed.watermark_at(time.time() - self.config.steady_lag_s - 3 * recent_batch_s(output))
            return mark is not None and live is not None and mark >= live

        def started() -> bool:
            delivered = {window_of(r) for _, rows in window_files(outputs["primary"]) for r in rows}
            return len(delivered) >= self.config.steady_windows and all(near_input(o) for o in outputs.values())

        self._wait(started, "both jobs started and near the input's watermark", list(outputs))
        self.say(f"started: primary watermark {watermark_of(outputs['primary'])}")

    def _drill(self) -> None:
        from spark_jobs.drills.job_drill import drill_job

        holder = f"command ftops drill run (pid {os.getpid()} on {socket.gethostname()})"
        self.detection = _DeadWatch(self.state.master_ui("primary"),
                                    {(w.host, w.port) for w in self.state.workers("primary", self.config.fail_domain)})
        self.detection.start()
        try:
            self.experiment, self.drilled = drill_job(self.job.store, self.setup.settings, holder, progress=self.say,
                                                      driver_env=self.job.driver_env)
        finally:
            self.detection.stop()
        if self.drilled is None or self.drilled.report is None:
            raise DrillError(f"the drill engine ended the drill {self.experiment.verdict} before measuring it: "
                             f"{'; '.join(self.experiment.reasons)} (its report: {self._experiment_file()})")
        self.say(f"the drill engine's verdict: {self.experiment.verdict}")

    def _experiment_file(self) -> Path:
        return self.job.deployment.path / "drills" / f"drill-{self.experiment.experiment_id}" / "experiment.json"

    def _drain(self) -> None:
        from spark_jobs.runtime.launch import stop_run

        outputs, backlog_ms = self._outputs(), self.drilled.ctx.backlog_ms or 0
        if "replica" in outputs:
            self._wait(lambda: (watermark_of(outputs["replica"]) or 0) >= backlog_ms,
                       "the replica to pass the failure windows", ["replica"])
            stop_run(outputs["replica"])
        self.final_ms = self.feed.stop()
        self._start_reference()  # the input is final: the batch reference runs while the primary drains
        self.say(f"input stopped (watermark {self.final_ms}); waiting for the primary to close every window")
        self._wait(lambda: (watermark_of(outputs["primary"]) or 0) >= self.final_ms,
                   "the primary to close every window", ["primary"])
        stop_run(outputs["primary"])
        if self.serving is not None:
            from spark_jobs.serving_view import stop_serving

            self.serving_stopped = True
            if stop_serving(self.serving) != 0:
                raise DrillError(f"the serving view exited {self.serving.returncode}; see {self.dirs['view'] / '_serve.log'}")

    def _start_reference(self) -> None:
        """Submit the batch reference over the (final) input folder, locally, without a UI."""
        from spark_jobs.runtime.launch import launch_run, run_args
        from spark_jobs.runtime.reference import reference_argv

        argv = [*reference_argv(self.workload, self.job.deployment.input, self.dirs["reference"]),
                "--state-dir", self.dirs["spark"]]
        self.reference, self.reference_log = launch_run(run_args(argv))

    def _reference(self) -> None:
        from spark_jobs.runtime.reference import read_reference

        self._wait(lambda: self.reference.poll() is not None, "the batch reference", [])
        if self.reference.returncode != 0:
            raise DrillError(f"the batch reference failed (exit {self.reference.returncode}); see {self.reference_log}")
        self.reference_rows, meta = read_reference(self.dirs["reference"])
        if meta["closed_until_ms"] != self.final_ms:
            raise DrillError(f"input watermark mismatch: reference {meta['closed_until_ms']}, feed {self.final_ms}")

    # measures
    def _report(self) -> DrillReport:
        from spark_jobs.pipeline.sink import closed_rows, compare_output

        expected = closed_rows(self.reference_rows, self.final_ms)
        comparison = compare_output(self.job.deployment.primary_output, expected)
        measured, ctx, c = self.drilled.report, self.drilled.ctx, self.config
        restarts = self._driver_restarts()
        return self._serve_measures(expected, measured["failure_window_starts_ms"], DrillReport(
            workload=self.workload.name, plan_tasks=self.setup.plan_tasks,
            predicted_output_fidelity=self.setup.predicted_output_fidelity,
            predicted_accuracy=self.estimate.mean if self.estimate else None, predicted_accuracy_estimate=self.estimate,
            objective=c.objective, tentative_accuracy=measured["tentative_accuracy"],
            tentative_accuracy_per_window=measured["tentative_accuracy_per_window"],
            time_to_first_tentative_s=measured["time_to_first_tentative_s"],
            time_to_caught_up_s=measured["time_to_caught_up_s"], lost_windows=len(comparison.lost_windows),
            duplicated_windows=len(comparison.duplicated_windows), output_equals_reference=comparison.equal,
            predicted_internal_completeness=self.setup.predicted_internal_completeness,
            failure_window_starts_ms=measured["failure_window_starts_ms"], lost_window_starts_ms=comparison.lost_windows,
            duplicated_window_starts_ms=comparison.duplicated_windows, windows_expected=comparison.expected_windows,
            fail_domain=c.fail_domain, fault=c.fault, network=c.network,
            subnet=self.state.network["subnet"] if self.state.network else None, killed=ctx.killed, kill_driver=c.kill_driver,
            recovery=_recovery(c.kill_driver, restarts), primary_driver_restarts=restarts,
            detection_s=self.detection.seconds_after(ctx.t_fail), new_capacity_after_s=c.new_capacity_after_s,
            capacity_alive_s=measured["capacity_alive_s"], params=self.workload.params_dict(),
            budget=c.budget if c.plan is None else None, algorithm=c.algorithm if c.plan is None else None,
            replica_cost=self._replica_cost(ctx.t_fail), work_dir=str(self.work), elapsed_s=time.time() - self.t0,
            design_warnings=self.setup.design_warnings, experiment_id=self.experiment.experiment_id,
            experiment_verdict=self.experiment.verdict, experiment_reasons=self.experiment.reasons,
            predicted_caught_up_s=measured.get("predicted_caught_up_s"), caught_up_error=measured.get("caught_up_error")))

    def _driver_restarts(self) -> int:
        """How often the primary's driver was submitted again (one driver log per submission)."""
        return max(0, len(list((self.job.deployment.primary_output / "_logs").glob("driver-*.log"))) - 1)

    def _replica_cost(self, t_fail: float) -> ReplicaCost | None:
        from spark_jobs.runtime.event_log import sort_by_application

        outputs = self._outputs()
        if "replica" not in outputs:
            return None
        events = self.work / "events"
        names = self.job.app_names()
        sort_by_application(events, {names[role]: events / role for role in outputs})
        return replica_cost(outputs["primary"], events / "primary", outputs["replica"], events / "replica", t_fail)

    def _serve_measures(self, expected: list[dict], windows: list[int], report: DrillReport) -> DrillReport:
        """The serving view's part of the report (unchanged report without ``serve``)."""
        if not self.config.serve:
            return report
        from spark_jobs.serving_view import measure_view

        def closed_at(window_end: int) -> float | None:  # when the input's watermark passed the window's end
            return next((m.wall for m in self.feed.marks() if m.watermark_ms is not None and m.watermark_ms >= window_end), None)

        t_fail = self.drilled.ctx.t_fail
        caught = None if report.time_to_caught_up_s is None else t_fail + report.time_to_caught_up_s
        failure_windows = sorted({window_of(r) for r in expected if window_of(r)[0] in set(windows)})
        view = measure_view(self.dirs["view"], expected, failure_windows, t_fail, caught, closed_at,
                            self.config.speedup / window_slide_s(expected))
        return report.model_copy(update=dict(
            serve=True, serve_windows_per_s=view.windows_per_s, serve_expected_windows_per_s=view.expected_windows_per_s,
            serve_gap_windows=len(view.gap_windows), serve_gap_window_starts_ms=view.gap_windows,
            serve_max_staleness_s=view.max_staleness_s, serve_tentative_windows=view.tentative_windows,
            serve_equals_reference=view.equals_reference))

    # waiting and stopping
    def _wait(self, done: Callable[[], bool], what: str, watch: list[str], deadline_s: float | None = None) -> None:
        """Poll ``done`` every half second until it holds; the watched streams must stay alive."""
        def holds() -> bool:
            if done():
                return True
            self._check_alive(watch)
            return False

        wait_for(holds, timeout_s=deadline_s or self.config.timeout_s, error=DrillError,
                 what=f"{what} (drill failed while {self.stage}; logs in {self.config.work_dir})")

    def _check_alive(self, roles: list[str]) -> None:
        from spark_jobs.runtime.launch import driver_running

        if self.feed is not None and self.feed.error is not None:
            raise DrillError(f"drill failed while {self.stage}: the input generator failed: {self.feed.error}")
        if self.serving is not None and not self.serving_stopped and self.serving.poll() is not None:
            raise DrillError(f"drill failed while {self.stage}: the serving view exited ({self.serving.returncode}); "
                             f"see {self.dirs['view'] / '_serve.log'}")
        outputs = self._outputs()
        for role in roles:
            if not driver_running(outputs[role]):
                log = max((outputs[role] / "_logs").glob("driver-*.log"), default=None)
                tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:]) if log else "no log"
                raise DrillError(f"drill failed while {self.stage}: the {role} driver exited; see {log}: {tail}")

    def teardown(self) -> None:
        """Stop the input, the serving view, the cluster (with every driver registered in it) and the store."""
        from spark_jobs.cluster.standalone import cluster_down

        if self.feed is not None:
            self.feed.stop()
        if self.serving is not None and self.serving.poll() is None:
            kill_group(self.serving)
        if self.detection is not None:
            self.detection.stop()
        if self.cluster_started:
            stopped = cluster_down(self.dirs["spark"])
            self.say(f"stopped {len(stopped)} processes")
        if self.reference is not None and self.reference.poll() is None:
            kill_group(self.reference)
        if self.job is not None:
            self.job.stop()


def _recovery(kill_driver: bool, restarts: int) -> str:
    """How the primary came back.

    >>> _recovery(False, 0), _recovery(False, 1)
    ('rescheduled onto the capacity given back', 'driver exited; restarted from its checkpoint')
    """
    if not restarts:
        return "rescheduled onto the capacity given back"
    return "driver restarted from its checkpoint" if kill_driver else "driver exited; restarted from its checkpoint"


class _DeadWatch:
    """When the master first listed every worker of the failed domain DEAD, polled beside the drill engine (a
    measure of the fault's detection, not a step of the drill)."""

    def __init__(self, master_ui: str, workers: set[tuple[str, int]], interval_s: float = 0.5):
        self.master_ui, self.workers, self.interval_s = master_ui, workers, interval_s
        self.dead_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drill-detection", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def seconds_after(self, t_fail: float | None) -> float | None:
        return None if self.dead_at is None or not t_fail else max(0.0, self.dead_at - t_fail)

    def _run(self) -> None:
        from spark_jobs.cluster.web_ui import master_state

        while self.dead_at is None and not self._stop.wait(self.interval_s):
            try:
                listed = master_state(self.master_ui, timeout_s=5.0)["workers"]
            except ExternalError:  # not answering now: the next poll asks again
                continue
            dead = {(w["host"], w["port"]) for w in listed if w["state"] == "DEAD"}
            if self.workers and self.workers <= dead:
                self.dead_at = time.time()
