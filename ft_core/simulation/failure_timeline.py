"""Failure timeline: what the users of a job see when a set of tasks (a rack, a zone) fails now.

Problem: given a topology, a replication plan, a failure (a set of failed tasks), the detection
time, per-task restore times, the checkpoint interval and the capacity that arrives after the
failure, predict the timeline: when tentative outputs start and with what output fidelity (OF,
paper 000 Eq. 4), when each query is recovered under the staged schedule (paper 003, §4.4), when
accurate outputs resume, and the backlog each restarted task must catch up.

Model (all times in seconds after the failure):

- *Detection* at ``detection_s`` (heartbeat timeout). From then on consumers read tentative
  outputs: failed tasks with an active replica keep producing through it, failed tasks without
  one are lost, so the tentative OF is ``OF(failed - replicated)`` (paper 000, Eq. 1-4). It is at
  least the plan's worst-case OF, which assumes every unreplicated task failed.
- *Queries* are the output partitions (sink tasks) with their upstream closure (paper 003,
  Definition 1); a query is recovered when all its failed tasks are caught up.
- *Stages*: the free capacity of the survivors is usable at detection; each arriving node adds
  ``node_cap`` of its size at its arrival time (not before detection). ``order-then-pack``
  (default) orders the failed queries by BestDensity with the whole expected capacity and packs
  their failed tasks, query by query and upstream first, onto the node with the most free capacity
  at every stage (the policy of :mod:`ft_core.recovery.staged`); ``blocking`` waits for the last
  arrival and then restarts everything it can, upstream first (the baseline, and the rule below
  two node failures since the last checkpoint).
- *Catch-up*: a task started at ``s`` restores its state in ``restore_s``, then must replay the
  input since its last checkpoint plus the input that arrived while it was down:
  ``backlog = since_checkpoint + s + restore_s`` seconds of input. At utilisation ``u`` (input rate
  over processing rate) it drains at ``(1 - u) / u`` seconds of input per second, so it is caught up
  at ``s + restore_s + backlog * u / (1 - u)``. ``since_checkpoint`` is 0, half or all of the
  checkpoint interval for the ``min``, ``avg`` and ``max`` case (Chiron's cases, paper 004).
  Pipelined catch-up is approximated by the slowest of a query's tasks.
- The *OF curve* gives the OF of what consumers read (accurate where caught up, tentative through
  replicas, lost elsewhere) at detection and whenever more tasks are caught up.

Algorithm: one reverse topological pass gives each failed task the set of sinks it feeds (a bit set);
failed tasks with the same set of sinks form one group, an exact reduction for the query order
because a query needs all of a group or none of it. BestDensity orders the queries of that smaller
problem; the packing then works on tasks. Complexity: O(S * Q / 64) word operations for S
substreams and Q queries, plus BestDensity on the grouped problem, plus O(F * nodes) packing for F
failed tasks, plus one OF evaluation (O(T + S)) per point of the curve (at most ``max_points``).

Example (paper Fig. 2: O3[0] joins O1 and O2; O2[1] fails, nothing replicated; one node arrives)::

    >>> from ft_core.samples import load_sample
    >>> g = load_sample("fig2-join")
    >>> t = simulate(g, replicated=set(), failed={g.index["O2[1]"]},
    ...              params=TimelineParams(arrivals=[Arrival(size=1.0, at_s=30.0)]))
    >>> round(t.tentative_output_fidelity, 3), t.queries["O3[0]"].recovered_s
    (0.6, 75.0)
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ft_core.input.limits import current_limits, exceeds
from ft_core.input.quantities import NonNegative, Nodes, PositiveFraction, PositiveNodes, PositiveSeconds, Seconds
from ft_core.recovery.best_density import best_density_order
from ft_core.recovery.catch_up import UnitRates, node_catch_up
from ft_core.errors import InputError
from ft_core.replication.fidelity import information_loss, output_fidelity
from ft_core.recovery.problem import RecoveryProblem, make_problem
from ft_core.recovery.staged import DEFAULT_NODE_CAP, place
from ft_core.topology.task_graph import TaskGraph

CASE_FRACTION = {"min": 0.0, "avg": 0.5, "max": 1.0}


class Arrival(BaseModel):
    """A replacement node of ``size`` (1.0 = one whole node) registering ``at_s`` after the failure."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    size: PositiveNodes
    at_s: Seconds


class TimelineParams(BaseModel):
    """The timing and capacity model of a simulation (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    detection_s: Seconds = 10.0
    restore_s: Seconds = 5.0
    restore_s_per_task: dict[str, Seconds] = Field(default_factory=dict)
    checkpoint_interval_s: PositiveSeconds = 10.0
    case: Literal["min", "avg", "max"] = "avg"
    utilisation: float = Field(0.5, gt=0, lt=1)
    capacity: Nodes = 0.0
    arrivals: list[Arrival] = Field(default_factory=list)
    node_cap: PositiveFraction = DEFAULT_NODE_CAP
    task_cost: PositiveNodes = 0.1
    cost: dict[str, Nodes] = Field(default_factory=dict)
    priority: dict[str, NonNegative] = Field(default_factory=dict)
    policy: Literal["order-then-pack", "blocking"] = "order-then-pack"
    max_points: int = Field(50, ge=2, le=10_000)

    @field_validator("arrivals")
    @classmethod
    def _few_enough_nodes(cls, value: list[Arrival]) -> list[Arrival]:
        if len(value) > current_limits().max_nodes:
            raise ValueError(f"{len(value)} nodes {exceeds('max_nodes', len(value))}")
        return value


class StageTimeline(BaseModel):
    """One stage: capacity that became usable at ``time_s`` and the failed tasks started on it."""

    stage: int
    event: str
    time_s: float
    added_capacity: float
    tasks: list[str]
    placement: dict[str, str]
    caught_up_s: float | None
    recovered_queries: list[str]


class QueryTimeline(BaseModel):
    """One failed query (output partition): its failed tasks and when it is accurate again."""

    priority: float
    failed_tasks: int
    tentative_fidelity: float
    restarted_s: float | None
    recovered_s: float | None
    backlog_s: float | None


class FidelityPoint(BaseModel):
    time_s: float
    output_fidelity: float
    caught_up_tasks: int


class Timeline(BaseModel):
    """The simulated timeline of one failure (what ``ftops simulate --json`` prints)."""

    topology: str
    tasks: int
    failed_tasks: int
    replicated_failed_tasks: int
    queries_total: int
    queries_failed: int
    detection_s: float
    first_tentative_s: float | None
    tentative_output_fidelity: float
    plan_output_fidelity: float
    policy: str
    stages: list[StageTimeline]
    queries: dict[str, QueryTimeline]
    fidelity_curve: list[FidelityPoint]
    all_recovered_s: float | None
    priority_weighted_recovery_s: float | None
    unrecovered_queries: list[str]
    never_started_tasks: list[str]
    params: TimelineParams
    elapsed_s: float


def simulate(graph: TaskGraph, replicated: set[int], failed: set[int], params: TimelineParams) -> Timeline:
    """Simulate the failure of ``failed`` (task indices) under a plan replicating ``replicated``."""
    start = time.perf_counter()
    if not failed:
        raise InputError("failure: no failed task given (name tasks or a failure domain)")
    _check_names(graph, params)
    lost = failed - replicated
    tentative_of = output_fidelity(graph, lost)
    sinks_below = _sinks_below(graph, failed)
    problem, groups = _grouped_problem(graph, failed, sinks_below, params)
    sequence = _task_sequence(graph, problem, groups, params)
    stages, started_at = _pack_stages(graph, sequence, params)
    alone = {"task": UnitRates(input_rate=params.utilisation, processing_rate=1.0)}  # rates relative to processing
    caught = {t: _caught_up(s, _restore(graph, t, params), params, alone) for t, s in started_at.items()}
    queries = _query_timelines(graph, failed, lost, sinks_below, problem, started_at, caught, params)
    _fill_stage_recoveries(stages, queries, caught, graph)
    recovered = {q: v.recovered_s for q, v in queries.items()}
    done = [v for v in recovered.values() if v is not None]
    return Timeline(
        topology=graph.topology.name,
        tasks=graph.n,
        failed_tasks=len(failed),
        replicated_failed_tasks=len(failed & replicated),
        queries_total=len(graph.sinks),
        queries_failed=len(queries),
        detection_s=params.detection_s,
        first_tentative_s=params.detection_s if tentative_of > 0 else None,
        tentative_output_fidelity=tentative_of,
        plan_output_fidelity=output_fidelity(graph, set(range(graph.n)) - replicated),
        policy=params.policy,
        stages=stages,
        queries=queries,
        fidelity_curve=_fidelity_curve(graph, lost, caught, params),
        all_recovered_s=max(done) if done and len(done) == len(queries) else None,
        priority_weighted_recovery_s=_weighted_recovery(queries),
        unrecovered_queries=[q for q, t in recovered.items() if t is None],
        never_started_tasks=[graph.task_ids[t] for t in sorted(failed - set(started_at))],
        params=params,
        elapsed_s=time.perf_counter() - start,
    )


def _check_names(graph: TaskGraph, params: TimelineParams) -> None:
    sinks = {graph.task_ids[s] for s in graph.sinks}
    for field, names, allowed in (("cost", params.cost, graph.index), ("restore_s_per_task", params.restore_s_per_task, graph.index),
                                  ("priority", params.priority, sinks)):
        unknown = [n for n in names if n not in allowed]
        if unknown:
            kind = "an output partition (sink task)" if field == "priority" else "a task"
            raise InputError(f"{field}.{unknown[0]}: not {kind} of topology {graph.topology.name!r}")


def _sinks_below(graph: TaskGraph, failed: set[int]) -> dict[int, int]:
    """For every failed task, the bit set (bit k = k-th sink) of the sinks it feeds."""
    bit = {s: 1 << k for k, s in enumerate(graph.sinks)}
    below = [0] * graph.n
    for i in range(graph.n - 1, -1, -1):  # tasks are numbered topologically
        mask = bit.get(i, 0)
        for d in graph.downstream[i]:
            mask |= below[d]
        below[i] = mask
    return {t: below[t] for t in failed}


def _grouped_problem(graph: TaskGraph, failed: set[int], sinks_below: dict[int, int],
                     params: TimelineParams) -> tuple[RecoveryProblem, dict[str, list[int]]]:
    """The recovery problem over groups of failed tasks that feed the same sinks (exact for ordering)."""
    by_mask: dict[int, list[int]] = defaultdict(list)
    for t in sorted(failed):
        if sinks_below[t]:
            by_mask[sinks_below[t]].append(t)
    sinks = graph.sinks
    groups: dict[str, list[int]] = {}
    cost: dict[str, float] = {}
    members: dict[int, list[str]] = defaultdict(list)
    for mask, tasks in sorted(by_mask.items(), key=lambda kv: kv[1][0]):
        name = graph.task_ids[tasks[0]] + (f"+{len(tasks) - 1}" if len(tasks) > 1 else "")
        groups[name] = tasks
        cost[name] = math.fsum(_cost(graph, t, params) for t in tasks)
        for k in _bits(mask):
            members[sinks[k]].append(name)
    queries = {graph.task_ids[s]: (params.priority.get(graph.task_ids[s], 1.0), names) for s, names in members.items()}
    return make_problem(queries, cost, name=graph.topology.name), groups


def _bits(mask: int) -> Iterable[int]:
    k = 0
    while mask:
        low = mask & -mask
        k = low.bit_length() - 1
        yield k
        mask ^= low


def _cost(graph: TaskGraph, task: int, params: TimelineParams) -> float:
    return params.cost.get(graph.task_ids[task], params.task_cost)


def _restore(graph: TaskGraph, task: int, params: TimelineParams) -> float:
    return params.restore_s_per_task.get(graph.task_ids[task], params.restore_s)


def _task_sequence(graph: TaskGraph, problem: RecoveryProblem, groups: dict[str, list[int]], params: TimelineParams) -> list[int]:
    """Failed tasks in restart order: BestDensity's query order, each query's groups upstream first."""
    if params.policy == "blocking" or not problem.queries:
        return sorted(t for tasks in groups.values() for t in tasks)
    budget = params.capacity + params.node_cap * math.fsum(a.size for a in params.arrivals)
    seen: dict[int, None] = {}
    for q in best_density_order(problem, budget):
        for name in problem.queries[q].partitions:
            for t in groups[name]:
                seen.setdefault(t, None)
    return list(seen)


def _pack_stages(graph: TaskGraph, sequence: list[int], params: TimelineParams) -> tuple[list[StageTimeline], dict[int, float]]:
    """Pack the sequence into the capacity of each stage; returns the stages and each task's start."""
    events = [("survivors' free capacity", params.detection_s, {"survivors": params.capacity} if params.capacity else {})]
    for k, a in enumerate(sorted(params.arrivals, key=lambda a: a.at_s), 1):
        events.append((f"node n{k} arrives", max(params.detection_s, a.at_s), {f"n{k}": params.node_cap * a.size}))
    free: dict[str, float] = {}
    waiting = list(sequence)
    started_at: dict[int, float] = {}
    stages = []
    for k, (event, at, nodes) in enumerate(events):
        free.update(nodes)
        placement: dict[str, str] = {}
        if waiting and (params.policy != "blocking" or k == len(events) - 1):
            placed, _ = place([(graph.task_ids[t], _cost(graph, t, params)) for t in waiting], free)
            placement = placed
            for t in waiting:
                if graph.task_ids[t] in placed:
                    started_at[t] = at
            waiting = [t for t in waiting if t not in started_at]
        stages.append(StageTimeline(stage=k, event=event, time_s=at, added_capacity=math.fsum(nodes.values()),
                                    tasks=list(placement), placement=placement, caught_up_s=None, recovered_queries=[]))
    return stages, started_at


def _caught_up(start_s: float, restore_s: float, params: TimelineParams, alone: dict[str, UnitRates]) -> float:
    """A task with a slot of its own catches up as one partition alone on its node in
    :mod:`ft_core.recovery.catch_up` (input ``u``, processing 1): at ``s + restore_s + backlog * u / (1 - u)``."""
    backlog_rows = params.utilisation * _backlog(start_s, restore_s, params)
    return node_catch_up([("task", start_s + restore_s, backlog_rows)], alone, size=1.0)["task"]


def _backlog(start_s: float, restore_s: float, params: TimelineParams) -> float:
    """Seconds of input to replay: since the last checkpoint, plus the time down until processing."""
    return CASE_FRACTION[params.case] * params.checkpoint_interval_s + start_s + restore_s


def _query_timelines(graph, failed, lost, sinks_below, problem, started_at, caught, params) -> dict[str, QueryTimeline]:
    by_sink: dict[int, list[int]] = defaultdict(list)
    for t in failed:
        for k in _bits(sinks_below[t]):
            by_sink[k].append(t)
    il_tentative = None
    out = {}
    for k, s in enumerate(graph.sinks):
        tasks = by_sink.get(k)
        if not tasks:
            continue
        if il_tentative is None:
            il_tentative = information_loss(graph, lost)
        complete = all(t in caught for t in tasks)
        tid = graph.task_ids[s]
        out[tid] = QueryTimeline(
            priority=problem.queries[tid].priority,
            failed_tasks=len(tasks),
            tentative_fidelity=1.0 - il_tentative[s],
            restarted_s=max(started_at[t] for t in tasks) if complete else None,
            recovered_s=max(caught[t] for t in tasks) if complete else None,
            backlog_s=max(_backlog(started_at[t], _restore(graph, t, params), params) for t in tasks) if complete else None,
        )
    return out


def _fill_stage_recoveries(stages: list[StageTimeline], queries: dict[str, QueryTimeline], caught: dict[int, float], graph: TaskGraph) -> None:
    """Each stage's caught-up time and the queries that its tasks complete."""
    for stage in stages:
        times = [caught[graph.index[t]] for t in stage.tasks]
        stage.caught_up_s = max(times) if times else None
    for qid, q in sorted(queries.items(), key=lambda kv: (kv[1].restarted_s is None, kv[1].restarted_s or 0.0)):
        if q.restarted_s is None:
            continue
        last = max((s for s in stages if s.time_s <= q.restarted_s), key=lambda s: s.time_s)
        last.recovered_queries.append(qid)


def _fidelity_curve(graph: TaskGraph, lost: set[int], caught: dict[int, float], params: TimelineParams) -> list[FidelityPoint]:
    """OF at detection and at (at most ``max_points``) instants when more failed tasks are caught up."""
    times = sorted(set(caught.values()))
    if len(times) > params.max_points - 1:
        step = len(times) / (params.max_points - 1)
        times = sorted({times[min(len(times) - 1, math.ceil((i + 1) * step) - 1)] for i in range(params.max_points - 1)})
    points = [FidelityPoint(time_s=params.detection_s, output_fidelity=output_fidelity(graph, lost), caught_up_tasks=0)]
    for at in times:
        if at <= params.detection_s:
            continue
        back = {t for t, c in caught.items() if c <= at}
        points.append(FidelityPoint(time_s=at, output_fidelity=output_fidelity(graph, lost - back), caught_up_tasks=len(back)))
    return points


def _weighted_recovery(queries: dict[str, QueryTimeline]) -> float | None:
    """Priority-weighted mean recovery time of the failed queries (None if one never recovers)."""
    if not queries or any(q.recovered_s is None for q in queries.values()):
        return None
    total = math.fsum(q.priority for q in queries.values())
    if total <= 0:
        return math.fsum(q.recovered_s for q in queries.values()) / len(queries)
    return math.fsum(q.priority * q.recovered_s for q in queries.values()) / total
