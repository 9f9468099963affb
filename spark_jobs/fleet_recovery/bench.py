"""``ftops bench fleet-recovery``: fleet staged recovery against first-in-first-out and all-at-once restart, on real
Spark (issue 33, item 5).

Setup: a local standalone cluster whose failure domain ``rack-a`` holds one one-core worker per job; a private
history store; ``jobs`` copies of ``examples/sensor_alerts.py`` registered with priorities 1, 2, 4, ... and submitted
in that order (the least important first: a master left alone serves it first), all fed the same live input.

A run: every job steady (micro-batches with executors for ``steady_s``); ``rack-a`` lost (every worker killed); its
workers back one at a time, ``spacing_s`` apart, in the same domain; then, by policy:

- ``staged``: the fleet recovery's steps (:mod:`spark_jobs.fleet_recovery.steps`, what ``ftops_fleet_recovery``
  runs; its waits polled here instead of deferred) under the planner's ``staged`` order;
- ``fifo``: the same steps under ``fifo`` (submission order, nobody overtaking);
- ``all-at-once``: nothing held down or restarted: every application waits and the master gives each returning
  core to the first one submitted.

Each job's time back (seconds after the failure until every stream it ran ran two micro-batches within its
caught-up band: the DAG's definition) is read from the history store; a run's score is the priority-weighted mean.
Policies rotate their order from run to run, so a drift of the machine over the benchmark does not favour one; before
each run the jobs are restarted in priority order if the master's queue is not (a staged run's restarts reorder it).
At the end, each job's output (every window it closed over every run and policy: all the benchmark's losses, holds
and restarts) is compared with the batch reference of the input they all read: windows lost and duplicated.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from ft_core.errors import ExternalError

POLICIES = ("all-at-once", "fifo", "staged")  # staged last in a run: its restarts reorder the master's queue
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sensor_alerts.py"
PARAMS = ("rate=50", "window_s=2", "watermark_s=1", "spike_prob=0.05", "sensors_p=2", "sites_p=2")
DOMAIN = "rack-a"


class FleetRecoveryBenchConfig(BaseModel):
    jobs: int = 3
    runs: int = 3
    spacing_s: float = 30.0
    trigger_s: float = 3.0  # three drivers and their executors share the machine's cores with the cluster
    steady_s: float = 45.0
    timeout_s: float = 600.0
    port_base: int = 25000
    policies: tuple[str, ...] = POLICIES


class OutputCheck(BaseModel):
    """A job's output over the whole benchmark against the batch reference."""

    lost_windows: int
    duplicated_windows: int
    windows_compared: int
    equal: bool
    unexpected_windows: list[int] = []  # written, and not in the reference (their starts, ms)
    reference_span_ms: tuple[int, int] | None = None  # the first and last window start of the reference compared
    changed_windows: list[int] = []  # written once, with other rows than the reference's (their starts, ms)


class RunResult(BaseModel):
    policy: str
    run: int
    back_s: dict[str, float | None]  # job -> time back after the failure (None: not back by the timeout)
    restarted_s: dict[str, float | None]  # staged and fifo: when each job's stage started it
    planned_back_s: dict[str, float | None]
    weighted_mean_s: float | None
    held: list[str] = []  # staged and fifo: the jobs held down (restarted from their checkpoints)
    order_rule: str | None = None
    predicted_back_s: dict[str, float | None] = {}  # staged and fifo: as predicted at each job's restart
    shared_cpus: float | None = None  # staged and fifo: the CPUs the lost jobs would share, when the plan was made


def priorities(n: int) -> dict[str, float]:
    """``fleet-1`` .. ``fleet-n`` with priorities 1, 2, 4, ... (submission order).

    >>> priorities(3)
    {'fleet-1': 1.0, 'fleet-2': 2.0, 'fleet-3': 4.0}
    """
    return {f"fleet-{i + 1}": float(2 ** i) for i in range(n)}


def weighted_mean(back: dict[str, float | None], weights: dict[str, float]) -> float | None:
    """Priority-weighted mean time back; None when a job is not back (the run failed).

    >>> weighted_mean({"a": 10.0, "b": 40.0}, {"a": 3.0, "b": 1.0})
    17.5
    """
    if any(v is None for v in back.values()):
        return None
    return sum(weights[j] * v for j, v in back.items()) / sum(weights[j] for j in back)


def run_bench(config: FleetRecoveryBenchConfig, work: Path, db_url: str,
              say: Callable[[str], None]) -> tuple[list[RunResult], dict[str, OutputCheck]]:
    """Every run of every policy on one cluster and one store, and each job's output checked at the end (module
    docstring)."""
    from ft_core.store.connection import connect
    from ft_core.store.history import HistoryStore
    from ft_core.store.migrations import upgrade
    from spark_jobs.cluster.standalone import cluster_down, cluster_up
    from spark_jobs.pipeline.loading import load_workload
    from spark_jobs.pipeline.sample_input import run_generator

    jobs = priorities(config.jobs)
    conn = connect(db_url)
    upgrade(conn)
    store = HistoryStore(conn)
    stop, feed = threading.Event(), None
    try:
        cluster_up(_cluster_config(config, work))  # inside: an interrupted start-up stops what it started
        deps = _register(store, jobs, config, work, db_url)
        feed = threading.Thread(target=run_generator, args=(load_workload(str(EXAMPLE), list(PARAMS)), work / "input"),
                                kwargs={"stop": stop}, daemon=True)
        feed.start()
        for job in jobs:  # submitted in priority order, the least important first
            _cli("job", "start", job, db_url=db_url)
        results = []
        for run in range(config.runs):
            k = run % len(config.policies)
            for policy in config.policies[k:] + config.policies[:k]:
                _queue_least_important_first(deps, jobs, db_url, say)
                _steady(store, deps, config.steady_s, say)
                say(f"run {run + 1}/{config.runs}: {policy}")
                results.append(_one_run(store, deps, jobs, policy, run + 1, config, db_url, say))
                say(f"  back after {results[-1].back_s} s; weighted mean {results[-1].weighted_mean_s} s")
        say("each job's output against the batch reference")
        stop.set()  # the input final first: a reference read while files arrive has partial last windows
        feed.join(timeout=30)
        try:
            return results, _output_checks(deps, work / "reference")
        except ExternalError as exc:  # the runs stand; the report says the check did not run, and why
            say(f"output check failed: {exc}")
            return results, {}
    finally:
        stop.set()
        if feed is not None:
            feed.join(timeout=30)
        cluster_down(work / "spark")
        conn.close()


def _output_checks(deps: dict, work: Path) -> dict[str, OutputCheck]:
    """Each job's closed windows against one batch reference of the input they all read (final: the feed stopped),
    from its first file: every job started on the whole input and restarted only from its own checkpoint. Compared
    up to the job's output watermark and the reference's closed range, whichever is earlier (a batch reference
    emits every window, the last ones partial)."""
    from spark_jobs.drills.progress import watermark_of
    from spark_jobs.pipeline.sink import closed_rows, compare_output
    from spark_jobs.runtime.reference import batch_reference

    first = next(iter(deps.values()))
    reference, meta = batch_reference(first.workload(), first.input, work)
    checks = {}
    for job, dep in deps.items():  # the windows both closed: the job's and the reference's
        until = min(watermark_of(dep.primary_output) or 0, meta["closed_until_ms"] or 0)
        expected = closed_rows(reference, until)
        c = compare_output(dep.primary_output, expected, until_ms=until)
        starts = sorted({int(r["window_start"]) for r in expected})
        checks[job] = OutputCheck(lost_windows=len(c.lost_windows), duplicated_windows=len(c.duplicated_windows),
                                  windows_compared=c.expected_windows, equal=c.equal,
                                  unexpected_windows=c.unexpected_windows,
                                  reference_span_ms=(starts[0], starts[-1]) if starts else None,
                                  changed_windows=c.changed_windows)
    return checks


def _cluster_config(config: FleetRecoveryBenchConfig, work: Path):
    from spark_jobs.cluster.standalone import ClusterConfig

    b = config.port_base
    return ClusterConfig(state_dir=work / "spark", primary_domains=((DOMAIN, config.jobs),), standby_workers=1,
                         worker_timeout_s=5, primary_port=b + 77, primary_ui=b + 90, standby_port=b + 78,
                         standby_ui=b + 91, worker_port_base=b + 100, worker_ui_base=b + 200)


def _cli(*args: object, db_url: str) -> None:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ft_core.cli.main", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "FTOPS_DATABASE_URL": db_url}, timeout=300)
    if done.returncode != 0:
        raise ExternalError(f"ftops {' '.join(map(str, args[:2]))} failed: {done.stderr.strip()[-500:]}")


def _register(store, jobs: dict[str, float], config: FleetRecoveryBenchConfig, work: Path, db_url: str) -> dict:
    from spark_jobs.cli.job import registered_deployment

    b = config.port_base
    for job, priority in jobs.items():
        _cli("job", "register", "--name", job, "--pipeline", EXAMPLE, "--input", work / "input", "--root", work / job,
             "--master", f"spark://127.0.0.1:{b + 77}", "--master-ui", f"http://127.0.0.1:{b + 90}",
             "--standby-master", f"spark://127.0.0.1:{b + 78}", "--standby-ui", f"http://127.0.0.1:{b + 91}",
             "--state-dir", work / "spark", "--trigger-s", f"{config.trigger_s:g}", "--max-recovery-s", "300", "--test-job",
             "--priority", f"{priority:g}", *[a for p in PARAMS for a in ("--param", p)], db_url=db_url)
    return {job: registered_deployment(store, job) for job in jobs}


def _queue_least_important_first(deps: dict, jobs: dict[str, float], db_url: str, say: Callable[[str], None]) -> None:
    """Every run starts with the master's queue in priority order, least important first (a staged run's restarts
    reorder it): the jobs restarted in that order when they are not."""
    from spark_jobs.drills.engine import kill_primary_driver
    from spark_jobs.drills.reconcile import submit_primary
    from spark_jobs.fleet_recovery.inputs import submitted_at
    from spark_jobs.runtime.launch import driver_running
    from spark_jobs.runtime.waiting import wait_for

    order = sorted(jobs, key=jobs.get)
    ui = next(iter(deps.values())).primary_ui
    seen = submitted_at(ui, order, deps)
    if all(seen[a] is not None and seen[b] is not None and seen[a] < seen[b] for a, b in zip(order, order[1:])):
        return
    say("  restarting the jobs in priority order (the master's queue was reordered)")
    for job in order:
        kill_primary_driver(deps[job])
    for job in order:  # a master that still lists the stopped application would refuse its submission as running
        wait_for(lambda job=job: (not driver_running(deps[job].primary_output)
                                  and submitted_at(ui, [job], deps)[job] is None) or None,
                 timeout_s=120, interval_s=1, what=f"{job}'s stopped driver gone from its master")
        submit_primary(job, deps[job], {"FTOPS_DATABASE_URL": db_url}, wait=True)


def _steady(store, deps: dict, steady_s: float, say: Callable[[str], None]) -> None:
    """Until every job ran micro-batches with executors for ``steady_s``."""
    from spark_jobs.fleet_recovery.inputs import primary_executors
    from spark_jobs.runtime.waiting import wait_for

    since = time.time()

    def ready() -> bool | None:
        if time.time() - since < steady_s:
            return None
        for job, dep in deps.items():
            rows = store.job_batches(job, since).get(f"ftops-{job}-primary", [])
            if len(rows) < 5 or not primary_executors(dep, job):
                return None
        return True

    say(f"  waiting for a steady state ({steady_s:.0f} s of micro-batches with executors)")
    wait_for(ready, timeout_s=steady_s + 600, interval_s=3, what="every job running steady")


def _one_run(store, deps: dict, jobs: dict[str, float], policy: str, run: int, config: FleetRecoveryBenchConfig,
             db_url: str, say: Callable[[str], None]) -> RunResult:
    from spark_jobs.cluster.seam import cluster_of, give_back

    failed_at = time.time()
    lost = cluster_of(next(iter(deps.values()))).lose(DOMAIN, "host-down")
    workers = lost.undo["workers"]

    def capacity_returns() -> None:  # one worker at a time, in the domain it left
        for k in range(1, len(workers) + 1):
            time.sleep(max(0.0, failed_at + k * config.spacing_s - time.time()))
            give_back({**lost.undo, "workers": workers[:k]})

    returning = threading.Thread(target=capacity_returns, daemon=True)
    returning.start()
    try:
        if policy == "all-at-once":
            back, restarted, planned = _wait_back_alone(store, list(jobs), failed_at, config.timeout_s), {}, {}
            how: dict = {}
        else:
            back, restarted, planned, how = _staged_steps(store, list(jobs), policy, failed_at, run, config, db_url, say)
    finally:
        returning.join(timeout=len(workers) * config.spacing_s + 180)
    return RunResult(policy=policy, run=run, back_s=back, restarted_s=restarted, planned_back_s=planned,
                     weighted_mean_s=weighted_mean(back, jobs), **how)


def _wait_back_alone(store, jobs: list[str], failed_at: float, timeout_s: float) -> dict[str, float | None]:
    """Each job's time back with nobody restarting anything (the DAG's definition of back, from the failure)."""
    from spark_jobs.fleet_recovery.back import back_since
    from spark_jobs.fleet_recovery.inputs import steady_before

    steady = {j: steady_before(store, j, failed_at) for j in jobs}
    back: dict[str, float | None] = {j: None for j in jobs}
    deadline = time.time() + timeout_s
    while time.time() < deadline and any(v is None for v in back.values()):
        for j in (j for j, v in back.items() if v is None):
            found = back_since(store, j, failed_at, steady[j]["streams"], steady[j]["lag_s"])
            if isinstance(found, dict):
                back[j] = round(found["back_at"] - failed_at, 1)
        time.sleep(2)
    return back


def _staged_steps(store, jobs: list[str], policy: str, failed_at: float, run: int, config: FleetRecoveryBenchConfig,
                  db_url: str, say: Callable[[str], None]) -> tuple[dict, dict, dict, dict]:
    """The DAG's steps in-process: plan and hold down, per stage wait for its cores and restart, wait back, finish;
    the waits keep the run's leases as the DAG's triggers do."""
    from spark_jobs.fleet_recovery.back import back_times
    from spark_jobs.fleet_recovery.runs import holder_of
    from spark_jobs.fleet_recovery.steps import finish, open_run, renew_leases, restart_stage
    from spark_jobs.runtime.waiting import wait_for

    run_id_text = f"bench-{policy}-{run}-{int(failed_at)}"
    arrivals = [{"at_s": config.spacing_s * (k + 1), "cores": 1.0} for k in range(len(jobs))]
    planned = open_run(store, named=jobs, failed_at=failed_at, arrivals=arrivals, replacement_s=config.spacing_s,
                       policy=policy, restart_s=20.0, headroom=2.0, dag_run_id=run_id_text)
    say(f"  plan ({planned['order_rule']}): stages {planned['stages']}, held down {planned['held'] or 'none'}")
    env = {"FTOPS_DATABASE_URL": db_url}
    run_id, holder = planned["run_id"], holder_of(run_id_text)

    def ready(stage: str) -> bool | None:
        renew_leases(store, run_id, holder)
        return _stage_ready(planned, stage) or None

    for stage in sorted(planned["stages"], key=int):
        wait_for(lambda stage=stage: ready(stage), timeout_s=config.timeout_s, interval_s=1,
                 what=f"the capacity of stage {stage}")
        restart_stage(store, run_id, planned["stages"][stage], run_id_text, env)

    def all_back() -> bool | None:
        renew_leases(store, run_id, holder)
        back, missing = back_times(store, run_id)
        for job, b in back.items():
            store.fleet_back(run_id, job, b["back_at"], b["restart_delay_s"])
        return True if not missing else None

    try:
        wait_for(all_back, timeout_s=config.timeout_s, interval_s=2, what="every job back")
    finally:
        result = finish(store, run_id, run_id_text, env)
    rows = {r["job"]: r for r in store.fleet_recovery(run_id)["jobs"]}
    back = {j: None if r["measured_back_s"] is None else round(r["measured_back_s"], 1) for j, r in rows.items()}
    restarted = {j: None if r["restarted_at"] is None else round(r["restarted_at"].timestamp() - failed_at, 1)
                 for j, r in rows.items()}
    say(f"  {result['status']}: {result['outcome']}")
    return back, restarted, {j: r["planned_back_s"] for j, r in rows.items()}, \
        {"held": planned["held"], "order_rule": planned["order_rule"], "shared_cpus": planned["shared_cpus"],
         "predicted_back_s": {j: r["predicted_back_s"] for j, r in rows.items()}}


def _stage_ready(planned: dict, stage: str) -> bool:
    """The condition of the DAG's ``wait_capacity_<k>`` (SparkCapacityTrigger), read synchronously: the stage's free
    cores, and an executor for each application it kept waiting."""
    from spark_jobs.cluster.master_room import alive_workers, free_cores
    from spark_jobs.cluster.web_ui import master_state, try_json

    state = master_state(planned["master_ui"])
    alive = alive_workers(state)
    if free_cores(alive) < planned["cores"].get(stage, 0):
        return False
    ids = {a["id"] for a in state.get("activeapps", [])
           if {a.get("id"), a.get("name")} & set(planned["waiting"].get(stage, []))}
    have = {e.get("appid") for w in alive for e in (try_json(w["webuiaddress"].rstrip("/") + "/json/") or {})
            .get("executors", [])}
    return len(ids & have) == len(planned["waiting"].get(stage, []))
