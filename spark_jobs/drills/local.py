"""Chaos drills: a correlated failure under a running streaming job, measured as its users see it.

Problem (issue 4, paper 000 Section VI): show on a real Spark standalone cluster that partial active
replication keeps *tentative outputs* flowing while the primary is down, that their measured accuracy
matches the planner's predicted output fidelity (Fig. 12), and that the primary recovers from its
checkpoint without losing or duplicating a window.

One drill (:func:`run_drill`), every step polling real state with generous deadlines:

1. validate (the pipeline's parameters, the plan's tasks, the outage against the pipeline's windows:
   :mod:`spark_jobs.drills.design`, the ports) before anything starts or is written; the plan is
   ``--plan`` or computed by the planner for ``budget``; its OF (and IC) are recomputed from the
   pipeline's own topology document. A refusal (InputError) before the jobs start leaves the work dir
   as it was: removed when the drill created it, emptied again when it was given empty;
2. start a private cluster (``spark_jobs.cluster.standalone``): the primary pool's workers all in the failure
   domain ``fail_domain``, the standby pool for the replica;
3. feed the pipeline's seeded sample input in real time; submit the primary (whole pipeline, checkpointing) to the
   primary pool and the replica (``--plan``: only the replicated MC-trees) to the standby pool; an
   empty plan starts no replica (R = 0: no tentative output);
4. wait until both jobs are steady: each has closed ``steady_windows`` windows and its watermark is
   within ``steady_lag_s`` plus three of its recent micro-batch durations of the input's (a job's
   watermark trails the input by up to three batches: the one that read the data, the one that
   reports it, and the wait for the next; on a loaded machine a batch takes seconds);
5. **the failure** (``fault``), through the cluster seam as every drill's (:mod:`spark_jobs.cluster.seam`):
   ``host-down`` SIGKILLs every worker of ``fail_domain`` with its executors (on a namespace network its hosts go
   down whole), ``partition`` cuts the domain's hosts off the network while they keep running
   (``network="namespaces"`` only: a host per daemon, this machine the drivers' host,
   :mod:`spark_jobs.cluster.netns`); with ``kill_driver`` the primary driver dies too. Because the primary's whole executor pool is in that domain, the primary is *down*, not
   silently rescheduled onto survivors: the PPA scenario. The driver runs outside the rack (client mode)
   and survives unless ``kill_driver``;
6. **recovery**: after ``new_capacity_after_s`` the domain's capacity is given back in that domain, as the drill
   engine gives it back (the seam's ``give_back``: the workers it lost, started again, or its links healed); Spark
   reschedules the surviving driver's work onto it, restoring state from the checkpoint; a killed (or crashed)
   driver is restarted from its checkpoint instead;
7. the primary has *caught up* once it has completed a micro-batch whose watermark passes the input's
   watermark at the moment capacity returned (every window the outage held back is out, the backlog
   is drained);
8. stop the input; while the primary closes every window, the batch reference runs over the same
   (now final) input; compare.

Measures (times in seconds from the kill, from file modification times and the jobs' own progress
records, not from the polling loop):

- *failure windows*: reference windows that end after the primary's last output before the failure
  and no later than the input watermark when capacity returned: what users missed from the primary;
- ``tentative_accuracy_per_window``: the replica's rows for each failure window against the
  reference with the pipeline's accuracy function (:mod:`spark_jobs.pipeline.accuracy`; a window the
  replica lacks scores 0);
- ``time_to_first_tentative_s``: the first replica output file written after the kill that holds a
  window the primary had not delivered;
- ``time_to_caught_up_s``, ``detection_s`` (the master lists the failed workers DEAD: at once for a killed
  process on loopback, after its worker timeout for a host that answers nothing or is cut off);
- ``lost_windows``, ``duplicated_windows``, ``output_equals_reference``: the primary's final sink
  against the reference's windows closed by the whole input (:func:`sink.compare_output`).

What it shares with the drill engine (:mod:`spark_jobs.drills.engine`, the drills of running jobs): the fault and
its undo (the cluster seam's ``lose`` and ``give_back``), the failure windows and their accuracy, the first
tentative output (:mod:`spark_jobs.drills.live`), the first batch reaching the backlog, and the output rule of the
verdict (:func:`~spark_jobs.drills.engine.output_problem`). What is its own: it starts and stops a private
cluster, the input and both jobs, and keeps no history store, so it holds no lease and journals no fault (nothing
outlives it: :meth:`_Drill.teardown` stops the whole cluster).

Whatever happens (an exception, Ctrl-C), everything the drill started is stopped
(:meth:`_Drill.teardown`); a failure raises :class:`DrillError` naming the step.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ft_core.errors import ExternalError, FtopsError, InputError
from ft_core.replication.predicted_accuracy import AccuracyEstimate
from spark_jobs.cluster.seam import LostDomain
from spark_jobs.drills.documents import DrillConfig, DrillPorts, DrillReport
from spark_jobs.drills.live import failure_window_accuracy, first_tentative_s
from spark_jobs.drills.progress import first_batch_reaching, recent_batch_s, watermark_of, window_files, window_slide_s
from spark_jobs.drills.replica_cost import ReplicaCost, replica_cost
from spark_jobs.pipeline.accuracy import window_of
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.feed import LiveFeed
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.runtime.event_log import event_log_conf
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
                      ports=DrillPorts.from_base(config.port_base), design_warnings=design.warnings)


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


_BEFORE_JOBS = ("validating", "predicting tentative accuracy", "starting the clusters")


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
        work = config.work_dir.resolve()
        self.dirs = {name: work / name for name in ("input", "primary", "primary-ckpt", "replica", "replica-ckpt",
                                                    "reference", "spark")}
        self.plan_file = work / "plan.json"
        self.feed: LiveFeed | None = None
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}
        self.stage = "validating"
        self.cluster_started = False
        self.t0 = time.time()
        self.t_fail: float | None = None
        self.failure_end_ms: int | None = None
        self.killed: list[str] = []
        self.killed_ports: set[tuple[str, int]] = set()
        self.lost: LostDomain | None = None  # what the fault took, with the document that gives it back
        self.detection_s: float | None = None
        self.t_capacity: float | None = None
        self.backlog_ms: int | None = None
        self.t_caught_up: float | None = None
        self.driver_restarts = 0
        self.recovery = "rescheduled onto the capacity given back"
        self.final_ms: int | None = None
        self.reference_rows: list[dict] = []
        self.serving: subprocess.Popen | None = None  # the serving view (opt-in), not one of the jobs
        self.serving_stopped = False
        self.estimate: AccuracyEstimate | None = None
        if config.serve:
            self.dirs["view"] = work / "view"

    # steps
    def run(self) -> DrillReport:
        self._prepare_dirs()
        for stage, step in (("predicting tentative accuracy", self._predict),
                            ("starting the clusters", self._start_cluster), ("starting the jobs", self._start_jobs),
                            ("waiting for steady state", self._wait_steady), ("injecting the failure", self._inject),
                            ("recovering the primary", self._recover), ("draining the input", self._drain),
                            ("running the batch reference", self._reference)):
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

    def _prepare_dirs(self) -> None:
        for path in self.dirs.values():
            path.mkdir(parents=True, exist_ok=True)

    def _predict(self) -> None:
        from spark_jobs.drills.prediction import predict_for_drill

        c = self.config
        if c.predict_accuracy:
            self.estimate = predict_for_drill(self.setup, c.budget, c.objective, c.accuracy_sample_s,
                                              c.work_dir.resolve() / "accuracy", replan=c.plan is None)
            self.say(f"predicted tentative accuracy {self.estimate.spread()}, OF {self.setup.predicted_output_fidelity:.3f}")
        self.plan_file.write_text(json.dumps({"tasks": self.setup.plan_tasks}))

    def _start_cluster(self) -> None:
        from spark_jobs.cluster.standalone import cluster_up

        self.cluster_started = True  # even a failed start may have left a state file to clean
        self.state = cluster_up(cluster_config(self.config, self.dirs["spark"]))

    def _start_jobs(self) -> None:
        self.feed = LiveFeed(self.workload, self.dirs["input"], self.config.speedup, name="drill-feed")
        self.feed.start()
        self._submit("primary")
        if self.setup.plan_tasks:
            self._submit("replica")
        else:
            self.say("the plan is empty: no replica (no tentative output)")
        if self.config.serve:
            from spark_jobs.serving_view import start_serving

            self.serving = start_serving(self.dirs["primary"], self.dirs["replica"] if "replica" in self.procs else None,
                                         self.dirs["view"], self.setup.predicted_output_fidelity,
                                         tuple(self.workload.pipeline.output.key))

    def _submit(self, role: str) -> None:
        from spark_jobs.runtime.launch import launch_run, run_args

        pool = "primary" if role == "primary" else "standby"
        p = self.setup.ports
        cores = self.config.primary_workers if role == "primary" else self.config.standby_workers
        argv = ["--pipeline", self.workload.ref, "--role", role, "--input", self.dirs["input"], "--output", self.dirs[role],
                "--checkpoint", self.dirs[f"{role}-ckpt"], "--master", self.state.master_url(pool),
                "--trigger-s", self.config.trigger_s, "--total-executor-cores", cores, "--state-dir", self.dirs["spark"],
                "--pool", pool, "--conf", f"spark.ui.port={p.primary_driver_ui if role == 'primary' else p.replica_driver_ui}"]
        argv += ["--plan", self.plan_file] if role == "replica" else []
        for key, value in self.state.driver_confs().items():  # on a namespace network the executors call the driver back there
            argv += ["--conf", f"{key}={value}"]
        for item in [*event_log_conf(self.config.work_dir.resolve() / "events" / role)]:  # what the replica costs
            argv += ["--conf", item]
        for item in self.config.params:
            argv += ["--param", item]
        self.procs[role], self.logs[role] = launch_run(run_args(argv))

    def _wait_steady(self) -> None:
        roles = list(self.procs)

        def near_input(role: str) -> bool:
            mark = watermark_of(self.dirs[role])
            lag_s = self.config.steady_lag_s + 3 * recent_batch_s(self.dirs[role])
            live = self.feed.watermark_at(time.time() - lag_s)
            return mark is not None and live is not None and mark >= live

        def steady() -> bool:
            delivered = {window_of(r) for _, rows in window_files(self.dirs["primary"]) for r in rows}
            return len(delivered) >= self.config.steady_windows and all(near_input(r) for r in roles)

        self._wait(steady, "both jobs steady (watermarks near the input's)", roles)
        self.say(f"steady: primary watermark {watermark_of(self.dirs['primary'])}")

    def _inject(self) -> None:
        from spark_jobs.cluster.local_standalone import local_cluster

        end_ms = max((int(r["window_end"]) for _, rows in window_files(self.dirs["primary"]) for r in rows), default=0)
        self.t_fail = time.time()
        self.lost = local_cluster(self.dirs["spark"]).lose(self.config.fail_domain, self.config.fault)
        self.killed = list(self.lost.hit)
        self.killed_ports = {(w.host, w.port) for w in self.state.workers(domain=self.config.fail_domain)
                             if w.name in self.killed}  # what the master must list dead: the workers it hit
        if self.config.kill_driver:
            self._kill_primary_driver()
            self.killed.append("primary driver")
            self.recovery = "driver restarted from its checkpoint"
        self.failure_end_ms = max(end_ms, watermark_of(self.dirs["primary"]) or 0)
        done = "cut off" if self.config.fault == "partition" else "killed"
        self.say(f"{done} {', '.join(self.killed)}; primary had delivered windows ending <= {self.failure_end_ms}")

    def _kill_primary_driver(self) -> None:
        kill_group(self.procs["primary"])

    def _recover(self) -> None:
        due = self.t_fail + self.config.new_capacity_after_s

        def step() -> bool:
            self._check_alive(["replica"] if "replica" in self.procs else [])
            self._detect()
            if self.t_capacity is None:
                if time.time() >= due:
                    self._add_capacity()
                return False
            if self.procs["primary"].poll() is not None:
                self._restart_primary()
                return False
            self.t_caught_up = first_batch_reaching(self.dirs["primary"], self.backlog_ms, self.t_fail)
            return self.t_caught_up is not None

        self._wait(step, "the primary to catch up", [], deadline_s=self.config.timeout_s + self.config.new_capacity_after_s)
        self.say(f"primary caught up {self.t_caught_up - self.t_fail:.1f} s after the failure")

    def _detect(self) -> None:
        from spark_jobs.cluster.web_ui import master_state

        if self.detection_s is not None:
            return
        try:
            workers = master_state(self.state.master_ui("primary"), timeout_s=5.0)["workers"]
        except ExternalError:  # not answering now: the next poll asks again
            return
        dead = {(w["host"], w["port"]) for w in workers if w["state"] == "DEAD"}
        if self.killed_ports <= dead:
            self.detection_s = time.time() - self.t_fail
            self.say(f"the master declared {self.config.fail_domain} dead after {self.detection_s:.1f} s")

    def _add_capacity(self) -> None:
        from spark_jobs.cluster.seam import give_back

        done = give_back(self.lost.undo, timeout_s=self.config.timeout_s)
        self.say(f"capacity given back to {self.config.fail_domain}: {'; '.join(done) or 'it was back already'}")
        self.t_capacity = time.time()
        self.backlog_ms = self.feed.watermark_at(self.t_capacity)
        if self.procs["primary"].poll() is not None:
            self._restart_primary()

    def _restart_primary(self) -> None:
        if self.driver_restarts >= 3:
            raise DrillError(f"the primary driver exited {self.driver_restarts + 1} times; see {self.logs['primary']}")
        if not self.config.kill_driver:
            self.recovery = "driver exited; restarted from its checkpoint"
        self.driver_restarts += 1
        self.say(f"restarting the primary driver from its checkpoint (restart {self.driver_restarts})")
        self._submit("primary")

    def _drain(self) -> None:
        from spark_jobs.runtime.launch import stop_run

        if "replica" in self.procs:
            self._wait(lambda: (watermark_of(self.dirs["replica"]) or 0) >= self.backlog_ms,
                       "the replica to pass the failure windows", ["replica"])
            stop_run(self.dirs["replica"])
        self.final_ms = self.feed.stop()
        self._start_reference()  # the input is final: the batch reference runs while the primary drains
        self.say(f"input stopped (watermark {self.final_ms}); waiting for the primary to close every window")
        self._wait(lambda: (watermark_of(self.dirs["primary"]) or 0) >= self.final_ms,
                   "the primary to close every window", ["primary"])
        stop_run(self.dirs["primary"])
        if self.serving is not None:
            from spark_jobs.serving_view import stop_serving

            self.serving_stopped = True
            if stop_serving(self.serving) != 0:
                raise DrillError(f"the serving view exited {self.serving.returncode}; see {self.dirs['view'] / '_serve.log'}")

    def _start_reference(self) -> None:
        """Submit the batch reference over the (final) input folder, locally, without a UI."""
        from spark_jobs.runtime.launch import launch_run, run_args
        from spark_jobs.runtime.reference import reference_argv

        argv = [*reference_argv(self.workload, self.dirs["input"], self.dirs["reference"]), "--state-dir", self.dirs["spark"]]
        self.procs["reference"], self.logs["reference"] = launch_run(run_args(argv))

    def _reference(self) -> None:
        from spark_jobs.runtime.reference import read_reference

        self._wait(lambda: self.procs["reference"].poll() is not None, "the batch reference", [])
        if self.procs["reference"].returncode != 0:
            raise DrillError(f"the batch reference failed (exit {self.procs['reference'].returncode}); see {self.logs['reference']}")
        self.reference_rows, meta = read_reference(self.dirs["reference"])
        if meta["closed_until_ms"] != self.final_ms:
            raise DrillError(f"input watermark mismatch: reference {meta['closed_until_ms']}, feed {self.final_ms}")

    # measures
    def _report(self) -> DrillReport:
        from spark_jobs.pipeline.sink import closed_rows, compare_output

        expected = closed_rows(self.reference_rows, self.final_ms)
        comparison = compare_output(self.dirs["primary"], expected)
        per_window = failure_window_accuracy(self.workload, expected, self.dirs["replica"], self.failure_end_ms,
                                             self.backlog_ms)
        windows, values = sorted(per_window), [per_window[w] for w in sorted(per_window)]
        return self._serve_measures(expected, windows, DrillReport(
            workload=self.workload.name, plan_tasks=self.setup.plan_tasks,
            predicted_output_fidelity=self.setup.predicted_output_fidelity,
            predicted_accuracy=self.estimate.mean if self.estimate else None, predicted_accuracy_estimate=self.estimate,
            objective=self.config.objective, tentative_accuracy=sum(values) / len(values) if values else None,
            tentative_accuracy_per_window=values,
            time_to_first_tentative_s=first_tentative_s(self.dirs["replica"], self.t_fail, self.failure_end_ms),
            time_to_caught_up_s=self.t_caught_up - self.t_fail, lost_windows=len(comparison.lost_windows),
            duplicated_windows=len(comparison.duplicated_windows), output_equals_reference=comparison.equal,
            predicted_internal_completeness=self.setup.predicted_internal_completeness,
            failure_window_starts_ms=[w[0] for w in sorted(per_window)], lost_window_starts_ms=comparison.lost_windows,
            duplicated_window_starts_ms=comparison.duplicated_windows, windows_expected=comparison.expected_windows,
            fail_domain=self.config.fail_domain, fault=self.config.fault, network=self.config.network,
            subnet=self.state.network["subnet"] if self.state.network else None, killed=self.killed, kill_driver=self.config.kill_driver,
            recovery=self.recovery, primary_driver_restarts=self.driver_restarts, detection_s=self.detection_s,
            new_capacity_after_s=self.config.new_capacity_after_s, capacity_alive_s=self.t_capacity - self.t_fail,
            params=self.workload.params_dict(), budget=self.config.budget if self.config.plan is None else None,
            algorithm=self.config.algorithm if self.config.plan is None else None,
            replica_cost=self._replica_cost(), work_dir=str(self.config.work_dir.resolve()), elapsed_s=time.time() - self.t0,
            design_warnings=self.setup.design_warnings))

    def _replica_cost(self) -> ReplicaCost | None:
        if "replica" not in self.procs:
            return None
        events = self.config.work_dir.resolve() / "events"
        return replica_cost(self.dirs["primary"], events / "primary", self.dirs["replica"], events / "replica", self.t_fail)

    def _serve_measures(self, expected: list[dict], windows: list, report: DrillReport) -> DrillReport:
        """The serving view's part of the report (unchanged report without ``serve``)."""
        if not self.config.serve:
            return report
        from spark_jobs.serving_view import measure_view

        def closed_at(window_end: int) -> float | None:  # when the input's watermark passed the window's end
            return next((m.wall for m in self.feed.marks() if m.watermark_ms is not None and m.watermark_ms >= window_end), None)

        view = measure_view(self.dirs["view"], expected, windows, self.t_fail, self.t_caught_up, closed_at,
                            self.config.speedup / window_slide_s(expected))
        return report.model_copy(update=dict(
            serve=True, serve_windows_per_s=view.windows_per_s, serve_expected_windows_per_s=view.expected_windows_per_s,
            serve_gap_windows=len(view.gap_windows), serve_gap_window_starts_ms=view.gap_windows,
            serve_max_staleness_s=view.max_staleness_s, serve_tentative_windows=view.tentative_windows,
            serve_equals_reference=view.equals_reference))

    # waiting and stopping
    def _wait(self, done: Callable[[], bool], what: str, watch: list[str], deadline_s: float | None = None) -> None:
        """Poll ``done`` every half second until it holds; the watched jobs must stay alive."""
        def holds() -> bool:
            if done():
                return True
            self._check_alive(watch)
            return False

        wait_for(holds, timeout_s=deadline_s or self.config.timeout_s, error=DrillError,
                 what=f"{what} (drill failed while {self.stage}; logs in {self.config.work_dir})")

    def _check_alive(self, roles: list[str]) -> None:
        if self.feed is not None and self.feed.error is not None:
            raise DrillError(f"drill failed while {self.stage}: the input generator failed: {self.feed.error}")
        if self.serving is not None and not self.serving_stopped and self.serving.poll() is not None:
            raise DrillError(f"drill failed while {self.stage}: the serving view exited ({self.serving.returncode}); "
                             f"see {self.dirs['view'] / '_serve.log'}")
        for role in roles:
            code = self.procs[role].poll()
            if code is not None:
                tail = " | ".join(self.logs[role].read_text(errors="replace").strip().splitlines()[-3:])
                raise DrillError(f"drill failed while {self.stage}: the {role} driver exited ({code}); "
                                 f"see {self.logs[role]}: {tail}")

    def teardown(self) -> None:
        """Stop the input, the jobs and the cluster (by the pids the drill recorded)."""
        from spark_jobs.cluster.standalone import cluster_down

        if self.feed is not None:
            self.feed.stop()
        if self.serving is not None and self.serving.poll() is None:
            kill_group(self.serving)
        if self.cluster_started:
            stopped = cluster_down(self.dirs["spark"])
            self.say(f"stopped {len(stopped)} processes")
        for proc in self.procs.values():
            if proc.poll() is None:
                kill_group(proc)


