"""``ftops bench recovery-runtime``: incremental vs blocking vs operator-centric vs catch-up recovery on real Spark
(paper 003, §7.2; the catch-up policy and its predictions: issue 15).

Problem: paper 003 shows that restarting failed partitions query by query, in priority order as nodes come
back, brings important queries back sooner than waiting for every node (blocking, Storm's behaviour) or
restarting operator by operator. This benchmark repeats the comparison with recovery units on the local
standalone cluster, for a :class:`Scenario`: a pipeline (any, ``--pipeline``; by default the smart city),
its applications (one-core nodes) and their failure domains, and the domain that fails.

The default scenario (one run per strategy, each on a fresh cluster and deployment, same seeded input):

- smart-city units ``O1[0..1]`` (speed), ``O2[0..1]`` (incidents), ``O3[0..1]`` (jams, a join of both); every
  unit is a query, with priorities speed 1, incidents 2, jams 4;
- three one-core nodes (applications): ``A`` = O1[0], O2[0], O3[0] and ``B`` = O1[1], O3[1] in failure domain
  ``rack-a``, ``C`` = O2[1] in ``rack-b`` (pinned: the failing domain's workers exist alone while its
  applications start, then each other domain's workers are added before its applications);
- steady state; the rehearsal (``--no-rehearsal`` skips it): ``rack-a``'s applications killed together and
  each one's units restarted from their checkpoints in a new one, one after another, so the model's restart delay
  is one measured after a failure; steady state again, then ``rack-a`` fails (workers, executors and the drivers
  on them): five of six units and five of six queries are down;
- replacement nodes (one-core workers in ``rack-c``) register with the master ``first_arrival_s`` after the
  failure and then every ``arrival_interval_s``; every unit costs ``cost_per_unit`` of a node (declared, see
  below) and a node's cap is 80 %, so one node restarts three units;
- the strategy's schedule (``ft_core.recovery.staged.plan_stages``: order-then-pack, blocking below the
  activation threshold, or operator-centric; or ``ft_core.recovery.catch_up_order.plan_catch_up``: the order
  with the least predicted time back, from the rates measured before the failure, :mod:`.rates`, and the
  arrival times the scenario schedules) is executed by :func:`.recovery.execute_schedule`, which polls the
  master for each stage's capacity;
- per query: seconds from the failure until it is available again (relative latency below 1.2,
  :mod:`.latency`), the priority-weighted mean, and lost / duplicated rows of every table against the
  failure-free reference; and, for every strategy, what the catch-up model predicted for its schedule.

Costs are declared (0.25 of a node per unit) rather than measured: on this 2-core machine the measured CPU
share of a unit is a few percent, so every failed unit would fit on the first node and the three strategies
would coincide; ``ftops units problem --cost measured`` gives the measured costs of a live deployment.

The report and its plot are :mod:`.bench_report`'s, the command line :mod:`spark_jobs.cli.recovery_bench`'s.
The full benchmark (three runs per strategy) takes about 4 h 40 min here, so it can be continued: each run
writes its result (``run.json``) into its own folder of the work dir when it ends, and ``--resume --work-dir
DIR`` with the same flags keeps those and runs the rest (:func:`bench_config` checks the flags against the
``bench.json`` the first invocation wrote).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ft_core.cli.progress import Progress
from ft_core.errors import FtopsError, InputError
from spark_jobs.runtime.atomic_json import write_json
from spark_jobs.runtime.waiting import wait_for

STRATEGIES = ("incremental", "blocking", "operator-centric", "catch-up")


class Scenario(BaseModel):
    """A pipeline deployed as units: ``apps`` (one-core nodes) hold its units, ``domains`` says each one's
    failure domain, and domain ``fail`` fails. A ``--placement`` file has the same ``apps``, ``domains`` and
    ``fail`` keys."""

    pipeline: str
    params: list[str] = Field(default_factory=list)
    apps: dict[str, list[str]]
    domains: dict[str, str]
    fail: str

    def check(self) -> None:
        """InputError naming the field that does not fit the pipeline (before anything starts)."""
        from spark_jobs.pipeline.loading import load_workload
        from spark_jobs.pipeline.units import UnitTopology
        from spark_jobs.recovery_units.runtime import check_placement

        check_placement(self.apps, UnitTopology(load_workload(self.pipeline, self.params)))
        missing = [a for a in self.apps if a not in self.domains]
        if missing:
            raise InputError(f"--placement: domains: application {missing[0]!r} has no failure domain")
        if self.fail not in self.domains.values():
            raise InputError(f"--placement: fail: domain {self.fail!r} holds no application")

    def domain_order(self) -> list[str]:
        """The failing domain first, then the others in the order their applications appear."""
        return list(dict.fromkeys([self.fail, *(self.domains[a] for a in self.apps)]))


class PlacementFile(BaseModel):
    """A ``--placement`` document: the scenario's applications (one-core nodes) with their units, each
    application's failure domain, and the domain that fails (JSON or YAML, through the input gate)."""

    model_config = ConfigDict(extra="forbid")
    apps: dict[str, list[str]] = Field(min_length=1)
    domains: dict[str, str]
    fail: str


SMART_CITY = Scenario(
    pipeline="smartcity",
    params=["p1=2", "p2=2", "rate=40", "window_s=6", "slide_s=3", "watermark_s=1", "n_users=200", "n_segments=20",
            "incident_interval_s=0.5", "report_spread_s=1", "jam_duration_s=6"],
    apps={"A": ["O1[0]", "O2[0]", "O3[0]"], "B": ["O1[1]", "O3[1]"], "C": ["O2[1]"]},
    domains={"A": "rack-a", "B": "rack-a", "C": "rack-b"}, fail="rack-a")


class RecoveryBenchConfig(BaseModel):
    work_dir: Path
    scenario: Scenario = SMART_CITY
    strategies: list[str] = Field(default_factory=lambda: list(STRATEGIES))
    repetitions: int = Field(default=1, ge=1)
    cost_per_unit: float = Field(default=0.25, gt=0, le=1)
    first_arrival_s: float = Field(default=20.0, ge=0)
    arrival_interval_s: float = Field(default=30.0, gt=0)
    arrivals: int = Field(default=2, ge=1)
    trigger_s: float = Field(default=3.0, gt=0)
    normal_s: float = Field(default=30.0, gt=0, description="seconds of steady state that define the normal latency")
    port_base: int = 24000
    arrival_domain: str = "rack-c"
    timeout_s: float = 600.0
    rehearse_restart: bool = Field(default=True, description="before the failure, kill the failing domain's "
                                   "applications together and restart them from their checkpoints one after another, "
                                   "so the catch-up model's restart delay is one measured after a failure (rates.py)")

    def stage_times(self, worker_join_s: float = 0.0) -> list[float]:
        """When each stage's capacity is due, seconds after the failure (what the catch-up model is given): stage 0
        (the survivors) at once, then the planned node arrivals, each registered ``worker_join_s`` after its start."""
        return [0.0] + [self.first_arrival_s + i * self.arrival_interval_s + worker_join_s for i in range(self.arrivals)]


class StrategyRun(BaseModel):
    strategy: str
    repetition: int
    query_recovered_s: dict[str, float | None]
    weighted_mean_recovery_s: float | None
    planned_stage: dict[str, int | None]
    predicted_s: dict[str, float | None] = Field(default_factory=dict, description="catch-up model, per query")
    predicted_weighted_s: float | None = None
    rates: dict[str, dict] = Field(default_factory=dict, description="the measured catch-up rates per failed unit")
    worker_join_s: float = Field(default=0.0, description="a new worker's start until the master lists it, measured "
                                 "in the rehearsal (without one: when the deployment added its workers): added to the "
                                 "node arrivals the model gets")
    priority: dict[str, float] = Field(default_factory=dict)
    stages: list[dict]
    lost_rows: int
    duplicated_rows: int
    error: str | None = None


class RecoveryBenchResult(BaseModel):
    command: str
    config: RecoveryBenchConfig
    runs: list[StrategyRun]

    def summary(self) -> dict:
        """The issue's JSON contract: per strategy the (median over repetitions) recovery times."""
        out: dict = {"strategies": {}, "lost_rows": sum(r.lost_rows for r in self.runs),
                     "duplicated_rows": sum(r.duplicated_rows for r in self.runs)}
        for strategy in self.config.strategies:
            runs = [r for r in self.runs if r.strategy == strategy and r.error is None]
            queries = sorted({q for r in runs for q in r.query_recovered_s})
            out["strategies"][strategy] = {
                "weighted_mean_recovery_s": median_of_runs([r.weighted_mean_recovery_s for r in runs]),
                "query_recovered_s": {q: median_of_runs([r.query_recovered_s.get(q) for r in runs]) for q in queries},
                "runs": len(runs), "failed_runs": sum(r.strategy == strategy and r.error is not None for r in self.runs),
            }
        return out


def median_of_runs(values: list[float | None]) -> float | None:
    """Median of the runs; None when any run did not recover (an honest 'not back')."""
    if not values or any(v is None for v in values):
        return None
    return round(statistics.median(values), 2)


# --- one run --------------------------------------------------------------------------------------

def schedule_for(strategy: str, problem_doc: dict, arrivals: int, model):
    """The strategy's schedule, with each query's time back predicted by the catch-up ``model``."""
    from ft_core.recovery.catch_up import with_prediction
    from ft_core.recovery.catch_up_order import plan_catch_up
    from ft_core.recovery.problem import parse_problem
    from ft_core.recovery.staged import plan_stages

    problem = parse_problem(problem_doc)
    capacity, nodes = 0.0, [1.0] * arrivals
    if strategy == "catch-up":
        return plan_catch_up(problem, capacity, nodes, model)
    if strategy == "blocking":  # below the activation threshold: wait for every node, then restart all
        schedule = plan_stages(problem, capacity, nodes, failures=1)
    else:
        schedule = plan_stages(problem, capacity, nodes, policy="order-then-pack" if strategy == "incremental" else "operator-centric")
    return with_prediction(problem, schedule, model)


def run_strategy(config: RecoveryBenchConfig, strategy: str, repetition: int, progress) -> StrategyRun:
    from spark_jobs.cluster.standalone import ClusterConfig, cluster_up

    work = config.work_dir / f"{strategy}-{repetition}"  # fresh: _run_and_keep clears what a cut-off run left
    state_dir, root = work / "spark", work / "units"
    p = config.port_base
    scenario = config.scenario
    first = ((scenario.fail, sum(d == scenario.fail for d in scenario.domains.values())),)
    cluster = ClusterConfig(state_dir=state_dir, primary_domains=first, standby_workers=0, worker_timeout_s=5,
                            primary_port=p + 77, primary_ui=p + 90, standby_port=p + 78, standby_ui=p + 91,
                            worker_port_base=p + 100, worker_ui_base=p + 200, start_timeout_s=config.timeout_s)
    try:
        cluster_up(cluster)
        return _measure(config, strategy, repetition, state_dir, root, progress)
    finally:
        _teardown(root, state_dir)


def _teardown(root: Path, state_dir: Path) -> None:
    from spark_jobs.cluster.standalone import cluster_down
    from spark_jobs.recovery_units.runtime import stop_apps

    if (root / "deployment.json").exists():
        stop_apps(root, all_apps=True, timeout_s=20)
    cluster_down(state_dir)


REHEARSAL_DOMAIN = "rehearsal"  # the rehearsal's replacement worker: a domain no scenario names


def _deploy_pinned(config: RecoveryBenchConfig, state_dir: Path, root: Path, progress) -> float:
    """Start the failing domain's applications while only its workers exist, then, domain by domain, add one
    worker per application and start them. Returns the median seconds a worker took to join (0: none added)."""
    from spark_jobs.cluster.standalone import add_worker
    from spark_jobs.recovery_units.runtime import DeployConfig, create_deployment

    scenario = config.scenario
    placement = root.parent / "placement.json"
    placement.write_text(json.dumps({"apps": scenario.apps}))
    create_deployment(DeployConfig(root=root, pipeline=scenario.pipeline, params=scenario.params, placement=placement,
                                   cluster_state=state_dir, trigger_s=config.trigger_s, backlog_s=10,
                                   ui_port_base=config.port_base + 300))
    p, joins = config.port_base, []
    for domain in scenario.domain_order():
        apps = [a for a in scenario.apps if scenario.domains[a] == domain]
        if domain != scenario.fail:
            for _ in apps:
                began = time.time()
                add_worker(state_dir, domain, port_base=p + 110, ui_base=p + 210, timeout_s=config.timeout_s)
                joins.append(time.time() - began)
        for app in apps:
            _start_in(config, root, app, scenario.apps[app], domain)
            progress(f"  {app} ({' '.join(scenario.apps[app])}) runs in {domain}")
    return statistics.median(joins) if joins else 0.0


def _start_in(config: RecoveryBenchConfig, root: Path, app: str, units: list[str], domain: str) -> None:
    """Start application ``app`` with ``units`` and wait until it runs, checked to have landed in ``domain``."""
    from spark_jobs.recovery_units.runtime import start_app, wait_app_placed, wait_app_running

    start_app(root, app, units)
    got = wait_app_placed(root, app, config.timeout_s)
    if got != domain:
        raise FtopsError(f"application {app} landed in {got}, not {domain}")
    wait_app_running(root, app, config.timeout_s)


def _wait_steady(config: RecoveryBenchConfig, root: Path, progress) -> None:
    """Poll until every query has a stable latency over ``normal_s`` seconds (enough batches, no outlier)."""
    from spark_jobs.recovery_units.deployment import load
    from spark_jobs.recovery_units.latency import InputArrivals, unit_marks

    dep = load(root)

    def steady() -> bool:
        arrivals = InputArrivals(dep.workload, Path(dep.input))
        now = time.time()
        # the lag at the end of each recent batch: how stale the query's output is when it is refreshed
        recent = {q: [t - came for t, came in unit_marks(root, q, arrivals) if now - config.normal_s <= t]
                  for q in arrivals.units.queries()}
        if all(len(v) >= 5 and v[-1] <= 1.5 * statistics.median(v) and max(v) <= 3 * min(v) for v in recent.values()):
            progress("  steady: " + ", ".join(f"{q} {statistics.median(v):.1f}s" for q, v in recent.items()))
            return True
        return False

    wait_for(steady, timeout_s=config.timeout_s, interval_s=2.0, what="a steady latency of the deployment", error=FtopsError)


def _rehearse_restart(config: RecoveryBenchConfig, state_dir: Path, root: Path, progress) -> float:
    """A dress rehearsal of the failure: kill every application of the failing domain at once (their drivers,
    SIGKILL: mid-batch, as a failure does), then restart each one's units from their checkpoints in a new
    application, the next one once the one before runs (as a recovery's stages start): the restart delay the
    catch-up model is then given is one measured after a failure, with state restore and the replayed micro-batch
    (:mod:`.rates`), not the deployment's first start from empty checkpoints, and beside what a recovery has
    beside it (the surviving applications and the next restart), not beside the failing domain's other
    applications still running: killed one at a time, the first restart ran beside them and took 137 s to its first
    batch where the recovery's took about 60 s (2026-12-02). Returns a replacement worker's join measured there
    (:func:`_rehearse_join`)."""
    from spark_jobs.recovery_units.recovery import wait_for_capacity
    from spark_jobs.recovery_units.runtime import kill_apps

    scenario = config.scenario
    failing = [a for a in scenario.apps if scenario.domains[a] == scenario.fail]
    kill_apps(root, failing, domain=scenario.fail)
    progress(f"  rehearsal: {', '.join(failing)} killed")
    join_s = _rehearse_join(config, state_dir, progress)
    for app in failing:
        again = f"{app}-rehearsal"
        # a free core first (the master drops the dead driver's executor): a stage starts on free capacity, and the
        # restart measured must not include that wait (the first rehearsal did: 88 s against 49-57 s)
        wait_for_capacity(root, 0, 1, [], config.timeout_s)
        _start_in(config, root, again, scenario.apps[app], scenario.fail)
        progress(f"  rehearsal: {app}'s units restarted from their checkpoints as {again} in {scenario.fail}")
    return join_s


def _rehearse_join(config: RecoveryBenchConfig, state_dir: Path, progress) -> float:
    """Seconds a replacement worker takes to join with the failing domain's applications down (one added in a
    domain of its own, then killed, and waited for until the master no longer lists it alive): the join the
    catch-up model's stage times are given. Measured at deploy instead, beside the failing domain's applications
    catching up from their first backlog, it took 29 s where the failure's replacements joined in 6-10 s."""
    from spark_jobs.cluster.standalone import add_worker, kill_domain, require_state, wait_workers_gone

    began = time.time()
    add_worker(state_dir, REHEARSAL_DOMAIN, port_base=config.port_base + 130, ui_base=config.port_base + 230,
               timeout_s=config.timeout_s)
    join_s = time.time() - began
    wait_workers_gone(require_state(state_dir), kill_domain(state_dir, REHEARSAL_DOMAIN), config.timeout_s)
    progress(f"  rehearsal: a replacement worker joined in {join_s:.1f} s (then removed)")
    return join_s


def _arrivals_thread(config: RecoveryBenchConfig, state_dir: Path, t_fail: float, errors: list, progress) -> threading.Thread:
    from spark_jobs.cluster.standalone import add_worker

    def run() -> None:
        try:
            for i in range(config.arrivals):
                due = t_fail + config.first_arrival_s + i * config.arrival_interval_s
                time.sleep(max(0.0, due - time.time()))
                add_worker(state_dir, config.arrival_domain, port_base=config.port_base + 120 + i,
                           ui_base=config.port_base + 220 + i, timeout_s=config.timeout_s)
                progress(f"  node {i + 1} ({config.arrival_domain}) registered {time.time() - t_fail:.1f} s after the failure")
        except BaseException as exc:  # reported by the run
            errors.append(exc)

    thread = threading.Thread(target=run, name="arrivals", daemon=True)
    thread.start()
    return thread


def _measure(config: RecoveryBenchConfig, strategy: str, repetition: int, state_dir: Path, root: Path, progress) -> StrategyRun:
    from ft_core.recovery.catch_up import weighted_mean
    from spark_jobs.recovery_units.deployment import load
    from spark_jobs.recovery_units.rates import catch_up_model
    from spark_jobs.recovery_units.recovery import execute_schedule
    from spark_jobs.recovery_units.runtime import kill_domain

    join_s = _deploy_pinned(config, state_dir, root, progress)
    _wait_steady(config, root, progress)
    if config.rehearse_restart:
        join_s = _rehearse_restart(config, state_dir, root, progress)
        _wait_steady(config, root, progress)
    failure = kill_domain(root, config.scenario.fail)
    progress(f"  {config.scenario.fail} failed: {', '.join(failure.units)} down")
    errors: list = []
    arrivals = _arrivals_thread(config, state_dir, failure.time, errors, progress)
    units = load(root).units
    problem = units.problem(failure.units, units.declared_cost(config.cost_per_unit))
    model = catch_up_model(root, failure.time, config.stage_times(join_s), units=failure.units)
    schedule = schedule_for(strategy, problem, config.arrivals, model)
    report = execute_schedule(root, schedule, prefix=strategy, timeout_s=config.timeout_s,
                              wait_recovered_s=config.timeout_s, progress=lambda m: progress(f"  {m}"))
    arrivals.join(timeout=config.timeout_s)
    if errors:
        raise FtopsError(f"replacement capacity failed: {errors[0]}")
    planned = {q: next((s.stage for s in schedule.stages if q in s.recovered_queries), None) for q in report.query_recovered_s}
    priority = {q: v["priority"] for q, v in problem["queries"].items()}
    return StrategyRun(strategy=strategy, repetition=repetition, query_recovered_s=report.query_recovered_s,
                       weighted_mean_recovery_s=weighted_mean(report.query_recovered_s, priority), planned_stage=planned,
                       predicted_s=schedule.predicted_back_s or {}, predicted_weighted_s=schedule.predicted_weighted_mean_s,
                       rates={u: r.model_dump() for u, r in model.rates.items()}, worker_join_s=round(join_s, 2),
                       priority=priority,
                       stages=[s.model_dump() for s in report.stages], lost_rows=report.lost_rows,
                       duplicated_rows=report.duplicated_rows)


CONFIG_FILE = "bench.json"  # the benchmark's configuration, in its work dir: what --resume continues
RUN_FILE = "run.json"  # a finished run's result, in the run's own folder


def run_bench(config: RecoveryBenchConfig, progress: Progress) -> RecoveryBenchResult:
    """Every repetition of every strategy, repetition by repetition. A run whose folder holds its result
    (``run.json``, written when it ends) from an earlier, interrupted invocation is kept, not run again
    (``--resume``); one that failed, or was cut off before its result, runs again from a clean folder."""
    runs = []
    progress.set_total(config.repetitions * len(config.strategies))
    for repetition in range(1, config.repetitions + 1):
        for strategy in config.strategies:
            kept = _finished_run(config.work_dir / f"{strategy}-{repetition}")
            if kept is not None:
                progress.skip(f"{strategy} (repetition {repetition}): kept from the earlier invocation")
                runs.append(kept)
                continue
            progress.step(f"{strategy} (repetition {repetition})")
            runs.append(_run_and_keep(config, strategy, repetition, progress))
    return RecoveryBenchResult(command="", config=config, runs=runs)


def _finished_run(work: Path) -> StrategyRun | None:
    path = work / RUN_FILE
    if not path.exists():
        return None
    run = StrategyRun.model_validate_json(path.read_text())
    return run if run.error is None else None


def _run_and_keep(config: RecoveryBenchConfig, strategy: str, repetition: int, progress) -> StrategyRun:
    import shutil

    work = config.work_dir / f"{strategy}-{repetition}"
    if work.exists():  # cut off (or failed) in an earlier invocation: stop what it left running, start clean
        _teardown(work / "units", work / "spark")
        shutil.rmtree(work)
    try:
        run = run_strategy(config, strategy, repetition, progress)
    except FtopsError as exc:
        run = StrategyRun(strategy=strategy, repetition=repetition, query_recovered_s={}, weighted_mean_recovery_s=None,
                          planned_stage={}, stages=[], lost_rows=0, duplicated_rows=0, error=str(exc))
    write_json(work / RUN_FILE, run)  # whole or not at all: a kill mid-write leaves no half a result
    return run


def bench_config(work_dir: Path, wanted: RecoveryBenchConfig, resume: bool) -> RecoveryBenchConfig:
    """The configuration to run in ``work_dir``: a new benchmark needs a folder without one; ``resume`` needs
    the one an earlier invocation wrote there, with the same settings as the flags given now."""
    path = work_dir / CONFIG_FILE
    if not resume:
        if work_dir.exists() and any(work_dir.iterdir()):
            hint = " (an earlier benchmark's: add --resume to continue it)" if path.exists() else ""
            raise InputError(f"--work-dir: {work_dir} is not empty{hint}; use a fresh work dir")
        work_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted.model_dump_json(indent=2))
        return wanted
    if not path.exists():
        raise InputError(f"--resume: {work_dir} holds no benchmark to continue (no {CONFIG_FILE})")
    stored = RecoveryBenchConfig.model_validate_json(path.read_text())
    before, now = stored.model_dump(exclude={"work_dir"}), wanted.model_dump(exclude={"work_dir"})
    changed = sorted(k for k in now if before.get(k) != now[k])
    if changed:
        raise InputError(f"--resume: the flags differ from the benchmark in {work_dir} in {', '.join(changed)} "
                         f"(it was: {', '.join(f'{k}={before.get(k)!r}' for k in changed)}); give the same flags")
    return stored.model_copy(update={"work_dir": work_dir})
