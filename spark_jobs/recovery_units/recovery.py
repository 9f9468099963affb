"""Execute a staged recovery schedule on a live units deployment (paper 003, §4.4, on Spark).

Problem: after a correlated failure (:func:`.runtime.kill_domain`), restart the failed units stage by stage
as capacity comes back, in the order the planner chose (``ftops plan stages``), and measure per query when
it is available again. The CLI (``ftops recover``) runs all stages in one process; the Airflow DAG runs the
same steps as tasks (a deferred wait for capacity, then :func:`start_stage`), so each step is a function.

Mapping: a *node* of the schedule is one Spark application with one executor core (:mod:`.app`); the units a
stage places on a node start together in a new application ``<prefix>-s<stage>-<node>`` from their own
checkpoints. A stage waits, by polling the Spark master's JSON (never a sleep), until

- as many *new* workers are alive as the schedule's arrivals up to this stage (workers not alive right after
  the failure, recorded with it), and
- the master has a free core for each application the stage starts,

then starts its applications and waits until their queries run. Stages are idempotent: an application the
deployment already records is not started again, so a resumed recovery (an Airflow retry, a scheduler
restart) continues where it stopped.

Measures: per query, seconds from the failure until it is available again (:mod:`.latency`: relative latency
below 1.2), and per unit the committed table against the failure-free reference for the windows it has
closed (:mod:`.verification`): lost and duplicated rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from ft_core.errors import ExternalError, InputError
from ft_core.input.documents import read_document
from ft_core.input.quantities import PositiveFraction, PositiveNodes, Seconds, check, check_list
from ft_core.input.validation import validate
from ft_core.recovery.catch_up_order import POLICY as CATCH_UP
from ft_core.recovery.staged import POLICIES, StagedSchedule
from spark_jobs.cluster.master_room import alive_workers, free_cores
from spark_jobs.recovery_units.deployment import Failure, load
from spark_jobs.recovery_units.runtime import UnitsError, start_app, wait_app_running
from spark_jobs.recovery_units.verification import verify
from spark_jobs.runtime.waiting import wait_for, wait_while

Progress = Callable[[str], None]
STAGE_POLICIES = (*POLICIES, "blocking", CATCH_UP)


class StageRun(BaseModel):
    """What one stage did: when its capacity was there, which applications it started."""

    stage: int
    event: str
    units: list[str]
    apps: dict[str, list[str]]
    capacity_ready_s: float | None
    started_s: float | None
    running_s: float | None
    skipped: bool = False


class RecoveryReport(BaseModel):
    """``ftops recover --json``: the contract fields first."""

    stages: list[StageRun]
    query_recovered_s: dict[str, float | None]
    lost_rows: int
    duplicated_rows: int
    failure_time: float
    failed_units: list[str]
    policy: str
    mode: str
    normal_lag_s: dict[str, float | None]
    verification: list[dict]


# --- the schedule ---------------------------------------------------------------------------------

def load_schedule(path: Path, root: Path) -> StagedSchedule:
    """Read ``ftops plan stages --json`` output and check it against the deployment's last failure (the
    document first: a bad schedule is refused by itself, whatever the state of the deployment)."""
    schedule = validate(StagedSchedule, read_document(path, "--schedule"), "--schedule (a `ftops plan stages --json` document)")
    failure = last_failure(root)
    planned = [u for s in schedule.stages for u in s.partitions]
    unknown = [u for u in planned if u not in failure.units]
    if unknown:
        raise InputError(f"--schedule: partition {unknown[0]!r} is not a failed unit of this deployment "
                         f"(failed: {', '.join(failure.units)})")
    return schedule


def last_failure(root: Path) -> Failure:
    dep = load(root)
    if not dep.failures:
        raise InputError(f"--deployment-dir: no failure recorded in {dep.root}; inject one with `ftops units kill` first")
    return dep.failures[-1]


def app_name(prefix: str, stage: int, node: str) -> str:
    return f"{prefix}-s{stage}-{node}"


def stage_apps(schedule: StagedSchedule, k: int, prefix: str) -> dict[str, list[str]]:
    """The applications stage ``k`` starts: one per node it places units on (units upstream first)."""
    stage = schedule.stages[k]
    apps: dict[str, list[str]] = {}
    for unit in stage.partitions:
        apps.setdefault(app_name(prefix, k, stage.placement[unit]), []).append(unit)
    return apps


def arrivals_by(schedule: StagedSchedule, k: int) -> int:
    """How many new nodes the schedule assumes by stage ``k`` (every stage after the initial one is an arrival)."""
    return len(schedule.stages[1:k + 1])


def unit_costs(root: Path, text: str) -> dict[str, float]:
    """Unit costs in fractions of a node: ``measured`` (CPU share from Spark's task metrics; a unit never
    measured gets the largest measured cost, else 0.25) or ``declared:X`` (every unit X)."""
    from spark_jobs.recovery_units.runtime import measured_cost

    units = load(root).units
    if text == "measured":
        measured = measured_cost(root)
        fallback = max(measured.values(), default=0.25)
        return {u: measured.get(u, fallback) for u in units.unit_ids()}
    kind, _, value = text.partition(":")
    try:
        per_unit = float(value)
    except ValueError:
        per_unit = -1.0
    if kind != "declared" or not 0 < per_unit <= 1:
        raise InputError(f"--cost: expected 'measured' or 'declared:X' with 0 < X <= 1, got {text!r}")
    return units.declared_cost(per_unit)


def survivor_capacity(root: Path, node_cap: float, master_ui: str | None = None) -> list[float]:
    """Usable capacity on the surviving workers now: ``node_cap`` per free core (one-core nodes), from the
    master at ``master_ui`` (default: the one the deployment records)."""
    failure = last_failure(root)
    alive = [w for w in alive_workers(_master_doc(root, master_ui)) if w["id"] in failure.survivor_workers]
    return [node_cap] * free_cores(alive)


def check_stage_inputs(arrivals: str, policy: str, node_cap: float | str,
                       arrival_times: str | None = None) -> tuple[list[float], float, list[float] | None]:
    """The replacement node sizes, the node cap and (policy catch-up) the seconds after the failure each node
    is expected, checked (InputError naming the field otherwise), with the policy: what a staged plan takes
    from its caller, before anything is read or asked."""
    if policy not in STAGE_POLICIES:
        raise InputError(f"policy: expected one of {', '.join(STAGE_POLICIES)}, got {policy!r}")
    node_cap = check(PositiveFraction, node_cap, "node_cap")
    sizes = check_list(PositiveNodes, str(arrivals), "arrivals", max_items="max_nodes")
    if policy != CATCH_UP:
        return sizes, node_cap, None
    return sizes, node_cap, check_arrival_times(arrival_times, "arrival_times", nodes=len(sizes))


def check_arrival_times(text: str | None, field: str, nodes: int | None = None) -> list[float]:
    """Seconds after the failure at which each replacement node is expected: comma-separated, in arrival order
    (``nodes`` of them when given); InputError naming ``field`` otherwise."""
    times = check_list(Seconds, str(text or ""), field, max_items="max_nodes", allow_empty=False)
    if times != sorted(times) or (nodes is not None and len(times) != nodes):
        count = f"one time per expected node ({nodes}), " if nodes is not None else ""
        raise InputError(f"{field}: {count}in order of arrival, got {text!r}")
    return times


def plan_failure_stages(root: Path, arrivals: str, cost: str = "measured", policy: str = "order-then-pack",
                        node_cap: float = 0.8, master_ui: str | None = None,
                        arrival_times: str | None = None) -> tuple[StagedSchedule, dict]:
    """The staged schedule for the last failure's units that are still down: its recovery problem (unit
    costs per :func:`unit_costs`), the survivors' free capacity now and the expected replacement nodes
    (``arrivals``: sizes, comma-separated); ``policy`` ``blocking`` waits for every node; ``catch-up`` needs
    ``arrival_times`` (seconds after the failure, one per node) and measures the units' rates (:mod:`.rates`)."""
    from ft_core.recovery.problem import parse_problem
    from ft_core.recovery.staged import plan_stages

    sizes, node_cap, times = check_stage_inputs(arrivals, policy, node_cap, arrival_times)
    dep = load(root)
    running = dep.unit_apps()
    down = [u for u in last_failure(root).units if u not in running]
    if not down:
        raise InputError("every unit of the last failure runs again: nothing to recover")
    problem = dep.units.problem(down, unit_costs(root, cost))
    capacity = survivor_capacity(root, node_cap, master_ui) or 0.0
    if policy == "blocking":
        schedule = plan_stages(parse_problem(problem), capacity, sizes, node_cap=node_cap, failures=1)
    elif policy == CATCH_UP:
        from ft_core.recovery.catch_up_order import plan_catch_up
        from spark_jobs.recovery_units.rates import catch_up_model

        failure = last_failure(root)
        now = max(0.0, time.time() - failure.time)  # the survivors' capacity is usable now
        model = catch_up_model(root, failure.time, [now, *(max(now, t) for t in times)], units=down)
        schedule = plan_catch_up(parse_problem(problem), capacity, sizes, model, node_cap=node_cap)
    else:
        schedule = plan_stages(parse_problem(problem), capacity, sizes, node_cap=node_cap, policy=policy)
    return schedule, problem


# --- capacity (the Spark master's real state) -----------------------------------------------------

def recorded_master_ui(root: Path) -> str | None:
    """The master web UI the deployment records (deployments older than that field: their local cluster
    state's); None when it records neither."""
    from spark_jobs.cluster.standalone import require_state

    dep = load(root)
    if dep.master_ui:
        return dep.master_ui
    return require_state(Path(dep.cluster_state)).master_ui("primary") if dep.cluster_state else None


def _master_doc(root: Path, master_ui: str | None = None) -> dict:
    """The master's ``/json/`` at ``master_ui`` (default: the recorded one); ClusterError when it does not answer."""
    from spark_jobs.cluster.standalone import ClusterError
    from spark_jobs.cluster.web_ui import master_state

    url = master_ui or recorded_master_ui(root)
    if url is None:
        raise InputError("this deployment records no master web UI (deploy with --master-ui or --state-dir): "
                         "capacity cannot be polled")
    try:
        return master_state(url)
    except ExternalError as exc:
        raise ClusterError(str(exc)) from None


def capacity(root: Path, known_workers: list[str], master_ui: str | None = None) -> tuple[int, int]:
    """(alive workers not in ``known_workers``, free cores on alive workers) from the JSON of the master at
    ``master_ui`` (default: the one the deployment records)."""
    alive = alive_workers(_master_doc(root, master_ui))
    return sum(w["id"] not in known_workers for w in alive), free_cores(alive)


def wait_for_capacity(root: Path, new_workers: int, free_cores: int, known_workers: list[str],
                      timeout_s: float, progress: Progress = lambda _: None) -> None:
    """Poll the master until ``new_workers`` new workers are alive and ``free_cores`` cores are free."""
    from spark_jobs.cluster.standalone import ClusterError

    seen = now = None

    def arrived() -> bool:
        nonlocal seen, now
        try:
            now = capacity(root, known_workers)
        except ClusterError as exc:
            now = None
            progress(f"waiting for the master: {exc}")
        if now is not None and now[0] >= new_workers and now[1] >= free_cores:
            return True
        if now != seen and now is not None:
            progress(f"capacity: {now[0]}/{new_workers} new workers, {now[1]}/{free_cores} free cores")
            seen = now
        return False

    wait_for(arrived, timeout_s=timeout_s, interval_s=1.0,
             what=lambda: f"capacity: {new_workers} new workers and {free_cores} free cores (have {now})")


# --- stages ---------------------------------------------------------------------------------------

def start_stage(root: Path, schedule: StagedSchedule, k: int, prefix: str = "recovery",
                timeout_s: float = 300.0, wait_capacity: bool = True, progress: Progress = lambda _: None) -> StageRun:
    """Run stage ``k``: wait for its capacity (unless ``wait_capacity`` is off: the caller waited, as the
    Airflow DAG does in a deferred task), start its applications, wait until their units run."""
    failure = last_failure(root)
    stage = schedule.stages[k]
    apps = stage_apps(schedule, k, prefix)
    run = StageRun(stage=k, event=stage.event, units=list(stage.partitions), apps=apps, capacity_ready_s=None,
                   started_s=None, running_s=None, skipped=not apps)
    if not apps:
        return run
    existing = load(root).apps
    todo = {name: units for name, units in apps.items() if name not in existing}
    if wait_capacity and todo:
        progress(f"stage {k} ({stage.event}): waiting for capacity for {len(todo)} application(s)")
        wait_for_capacity(root, arrivals_by(schedule, k), len(todo), failure.known_workers(), timeout_s, progress)
    run.capacity_ready_s = round(time.time() - failure.time, 2)
    for name, units in todo.items():
        progress(f"stage {k}: starting {name} with {', '.join(units)}")
        start_app(root, name, units, stage=k)
    run.started_s = round(time.time() - failure.time, 2)
    for name in apps:
        wait_app_running(root, name, timeout_s)
    run.running_s = round(time.time() - failure.time, 2)
    return run


def execute_schedule(root: Path, schedule: StagedSchedule, prefix: str = "recovery", timeout_s: float = 600.0,
                     wait_recovered_s: float = 300.0, progress: Progress = lambda _: None) -> RecoveryReport:
    """Every stage in order, then wait (up to ``wait_recovered_s``) until every failed query is available."""
    runs = [start_stage(root, schedule, k, prefix, timeout_s, progress=progress) for k in range(len(schedule.stages))]
    queries = failed_queries(root)
    recovered = query_recovery(root, queries)

    def pending() -> bool:
        nonlocal recovered
        recovered = query_recovery(root, queries)
        return any(v is None for v in recovered.values())

    wait_while(pending, timeout_s=wait_recovered_s, interval_s=2.0)
    progress("queries available again after (s): " + ", ".join(f"{q} {v}" for q, v in recovered.items()))
    check = verify(root)
    failure = last_failure(root)
    return RecoveryReport(stages=runs, query_recovered_s=recovered, lost_rows=check.lost_rows,
                          duplicated_rows=check.duplicated_rows, failure_time=failure.time, failed_units=failure.units,
                          policy=schedule.policy, mode=schedule.mode, normal_lag_s=normal_lags(root, queries),
                          verification=check.units)


# --- measures -------------------------------------------------------------------------------------

def failed_queries(root: Path) -> list[str]:
    """Queries whose upstream closure holds a unit of the last failure."""
    return load(root).units.failed_queries(last_failure(root).units)


def _arrivals(root: Path):
    from spark_jobs.recovery_units.latency import InputArrivals

    dep = load(root)
    return InputArrivals(dep.workload, Path(dep.input))


def normal_lags(root: Path, queries: list[str], normal_s: float = 30.0) -> dict[str, float | None]:
    from spark_jobs.recovery_units.latency import normal_lag, unit_marks

    failure, arrivals = last_failure(root), _arrivals(root)
    return {q: normal_lag(unit_marks(root, q, arrivals), failure.time, normal_s) for q in queries}


def query_recovery(root: Path, queries: list[str] | None = None, normal_s: float = 30.0, window: int = 3) -> dict[str, float | None]:
    """Per query (default: the failed ones), seconds from the failure until it is available again (None: not yet,
    or no normal lag): never before every failed unit of its upstream closure has restarted (:mod:`.latency`). Reads the units'
    progress files and the input folder; :func:`recovery_watch` says what the same answer needs from the store."""
    from spark_jobs.recovery_units.latency import unit_marks

    arrivals, watch = _arrivals(root), recovery_watch(root, queries)
    marks = {u: unit_marks(root, u, arrivals) for u in watch.units()}
    return watch.recovered(marks, normal_s, window)


class RecoveryWatch(BaseModel):
    """What judging the queries of a failure needs, without the deployment's folder: the failure's time and, per
    query, the failed units of its upstream closure (each must have restarted first)."""

    failure_time: float
    failed_upstream: dict[str, list[str]]

    def units(self) -> list[str]:
        """Every unit whose progress is read: the queries' own and their failed upstream units."""
        return sorted(set(self.failed_upstream) | {u for us in self.failed_upstream.values() for u in us})

    def recovered(self, marks: dict[str, list[tuple[float, float]]], normal_s: float = 30.0,
                  window: int = 3) -> dict[str, float | None]:
        """Per query, seconds from the failure until it is available again, from each unit's lag marks
        (``spark_jobs.recovery_units.latency``: batch end, arrival of its watermark's input)."""
        from spark_jobs.recovery_units.latency import normal_lag, recovered_after, restarted_at

        out: dict[str, float | None] = {}
        for q, failed in self.failed_upstream.items():
            restarts = [restarted_at(marks.get(u, []), self.failure_time) for u in failed]
            base = normal_lag(marks.get(q, []), self.failure_time, normal_s)
            if base is None or any(r is None for r in restarts):
                out[q] = None
                continue
            value = recovered_after(marks[q], self.failure_time, base, max(restarts, default=self.failure_time), window)
            out[q] = None if value is None else round(value, 2)
        return out


def recovery_watch(root: Path, queries: list[str] | None = None) -> RecoveryWatch:
    """The :class:`RecoveryWatch` of the deployment's last failure (``queries``: default, its failed queries)."""
    failure, units = last_failure(root), load(root).units
    queries = units.failed_queries(failure.units) if queries is None else queries
    return RecoveryWatch(failure_time=failure.time,
                         failed_upstream={q: [u for u in units.query_units(q) if u in failure.units] for q in queries})


def require_recovered(report: RecoveryReport) -> None:
    """Raise when a query never came back or output was lost or duplicated (for callers that must fail)."""
    missing = [q for q, v in report.query_recovered_s.items() if v is None]
    problems = []
    if missing:
        problems.append(f"queries not available again: {', '.join(missing)}")
    if report.lost_rows or report.duplicated_rows:
        problems.append(f"{report.lost_rows} lost and {report.duplicated_rows} duplicated rows")
    if problems:
        raise UnitsError("recovery incomplete: " + "; ".join(problems))
