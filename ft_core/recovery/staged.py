"""Staged (incremental) recovery: a schedule that follows the arrival of new nodes (paper 003, §4.4).

Problem: after a correlated failure, recovery capacity comes in steps: first the spare capacity of
the surviving nodes, then each replacement node as it arrives (2-6 minutes apart on EC2, Fig. 7).
Decide which failed partitions start at each stage and on which node, without a node exceeding its
CPU cap (80% by default), so that queries come back as early as possible.

Capacity units: partition costs, ``capacity`` and ``arrivals`` share one unit; we use fractions of
a node's CPU, so 1.0 is one whole node and a cost of 0.25 is 25% of a node. ``capacity`` is the
*free capacity already under the cap* on the surviving nodes (the paper's ``R = sum max(0, 80% -
used)``), one number for the pooled survivors (node ``survivors``) or one per surviving node
(``s1``, ``s2``, ...). Each entry of ``arrivals`` is one new node (``n1``, ``n2``, ...) of that
size; ``node_cap`` of it is usable (a 1.0 node under the 80% cap adds 0.8). Unused capacity stays
free for later stages.

Algorithm: stages are the initial state and one per arrival. Placement puts each started
partition on the node with the most free capacity (ties: the earlier node), as in Section 5; a
partition that fits on no node waits. Policies choose what starts:

- ``order-then-pack`` (default, the digest's fix of the per-stage gap): BestDensity with the whole
  expected capacity (survivors plus all arrivals) orders the queries; their outstanding failed
  partitions, query by query and upstream first, form one list packed first-fit into every stage,
  so capacity never idles while a waiting partition fits. It reproduces Figure 2's query-centric
  schedule.
- ``per-stage``: the paper read literally: BestDensity on the outstanding queries with the stage's
  free capacity (whole queries only; capacity may idle), placed largest first.
- ``operator-centric``: the paper's OC baseline per stage (Figure 2's operator-centric row).

Activation (§4.2, §4.4): incremental recovery starts only after ``ACTIVATION_THRESHOLD`` = 2 node
failures since the last global checkpoint; below it (``failures`` given and < 2) recovery is
*blocking*: nothing starts until the last node arrives, then everything is packed upstream first.
Only the first recovery stage does the global rollback to the checkpoint (``global_rollback``);
later stages restore from the checkpoint plus upstream buffers.

Complexity: BestDensity once (order-then-pack) or once per stage (per-stage), plus O(S * |FP| *
nodes) for the first-fit packing over S stages.

Example (Figure 2: five nodes, each recovering two partitions)::

    >>> from ft_core.samples import SAMPLES_DIR
    >>> from ft_core.recovery.problem import load_problem
    >>> fig2 = load_problem(SAMPLES_DIR / "recovery-fig1.json")
    >>> plan = plan_stages(fig2, 0.0, [1.0] * 5)
    >>> [(s.partitions, s.recovered_queries) for s in plan.stages[1:]]  # doctest: +NORMALIZE_WHITESPACE
    [(['p3', 'p5'], []), (['p7', 'p9'], ['Q1']), (['p4', 'p10'], ['Q2']), (['p6', 'p8'], []),
     (['p11', 'p12'], ['Q3', 'Q4'])]
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from pydantic import BaseModel

from ft_core.recovery.best_density import best_density, best_density_order
from ft_core.errors import InputError
from ft_core.recovery.operator_centric import operator_centric_order
from ft_core.recovery.problem import RecoveryProblem, check_budget, make_problem

POLICIES = ("order-then-pack", "per-stage", "operator-centric")
ACTIVATION_THRESHOLD = 2
DEFAULT_NODE_CAP = 0.8


class Stage(BaseModel):
    """One stage: what starts when its capacity becomes available."""

    stage: int
    event: str
    capacity: float
    added: float
    available: float
    partitions: list[str]
    placement: dict[str, str]
    used: float
    recovered_queries: list[str]
    recovered_priority: float
    global_rollback: bool


class StagedSchedule(BaseModel):
    """The stage-by-stage recovery schedule (see the module docstring)."""

    policy: str
    mode: str
    failures_since_checkpoint: int | None
    activation_threshold: int
    node_cap: float
    nodes: dict[str, float]
    query_order: list[str] | None
    stages: list[Stage]
    recovered_queries: list[str]
    unrecovered_queries: list[str]
    unscheduled_partitions: list[str]
    total_priority: float
    elapsed_s: float
    predicted_back_s: dict[str, float | None] | None = None  # set by the catch-up policy (:mod:`.catch_up_order`)
    predicted_weighted_mean_s: float | None = None


def place(partitions: Sequence[tuple[str, float]], free: dict[str, float]) -> tuple[dict[str, str], list[str]]:
    """Put each partition, in order, on the node with the most free capacity (ties: earlier node).

    ``free`` is updated in place; returns the placement and the partitions that fit nowhere.

    >>> free = {"a": 0.5, "b": 0.3, "new": 0.8}  # T8: nodes at 30%, 50%, 0% under an 80% cap
    >>> place([("x", 0.25), ("y", 0.25)], free), round(free["new"], 2)
    (({'x': 'new', 'y': 'new'}, []), 0.3)
    """
    placement: dict[str, str] = {}
    unplaced: list[str] = []
    for pid, cost in partitions:
        node = max(free, key=free.__getitem__) if free else None
        if node is not None and cost <= free[node] + 1e-9 * max(1.0, free[node]):
            placement[pid] = node
            free[node] -= cost
        else:
            unplaced.append(pid)
    return placement, unplaced


def plan_stages(
    problem: RecoveryProblem,
    capacity: float | Sequence[float],
    arrivals: Sequence[float],
    *,
    node_cap: float = DEFAULT_NODE_CAP,
    policy: str = "order-then-pack",
    failures: int | None = None,
    order: Sequence[str] | None = None,
) -> StagedSchedule:
    """The staged recovery schedule (see the module docstring for units, policies and activation).

    ``order`` (order-then-pack only) replaces BestDensity's query order: every failed query once."""
    start = time.perf_counter()
    survivors, arrivals, node_cap = _check_inputs(capacity, arrivals, node_cap, policy, failures)
    _check_order(problem, order, policy)
    blocking = failures is not None and failures < ACTIVATION_THRESHOLD
    events = [("initial", math.fsum(survivors.values()), survivors)]
    events += [(f"node n{i} arrives", c, {f"n{i}": node_cap * c}) for i, c in enumerate(arrivals, 1)]
    if policy == "order-then-pack" and not blocking:
        order = list(order) if order is not None else best_density_order(problem, math.fsum(n for _, _, new in events for n in new.values()))
    else:
        order = None
    run = _Run(problem, order)
    for k, (event, raw, new_nodes) in enumerate(events):
        run.free.update(new_nodes)
        starts = not blocking or k == len(events) - 1
        run.stage(k, event, raw, math.fsum(new_nodes.values()), policy if not blocking else "blocking", starts)
    return run.schedule(policy, blocking, failures, node_cap, {n: c for _, _, new in events for n, c in new.items()}, start)


def _check_inputs(capacity, arrivals, node_cap, policy, failures) -> tuple[dict[str, float], list[float], float]:
    if policy not in POLICIES:
        raise InputError(f"policy: unknown {policy!r} (choose from {', '.join(POLICIES)})")
    if isinstance(node_cap, bool) or not isinstance(node_cap, (int, float)) or not 0 < node_cap <= 1:
        raise InputError(f"node_cap: must be a fraction in (0, 1], got {node_cap!r}")
    if failures is not None and (isinstance(failures, bool) or not isinstance(failures, int) or failures < 0):
        raise InputError(f"failures: must be an integer >= 0, got {failures!r}")
    if isinstance(capacity, (int, float)) and not isinstance(capacity, bool):
        survivors = {"survivors": check_budget(capacity, "capacity")}
    else:
        survivors = {f"s{i}": check_budget(c, f"capacity[{i - 1}]") for i, c in enumerate(capacity, 1)}
    arrivals = [check_budget(c, f"arrivals[{i}]") for i, c in enumerate(arrivals)]
    return survivors, arrivals, float(node_cap)


def _check_order(problem: RecoveryProblem, order: Sequence[str] | None, policy: str) -> None:
    if order is None:
        return
    if policy != "order-then-pack":
        raise InputError(f"order: only the order-then-pack policy takes a query order, not {policy!r}")
    if sorted(order) != sorted(problem.queries):
        raise InputError(f"order: must name every failed query once ({', '.join(problem.query_ids())}), got {list(order)}")


class _Run:
    """The mutable state of one schedule: free capacity per node, started partitions, stages."""

    def __init__(self, problem: RecoveryProblem, order: list[str] | None) -> None:
        self.problem = problem
        self.free: dict[str, float] = {}
        self.started: set[str] = set()
        self.recovered: set[str] = set()
        self.stages: list[Stage] = []
        self.order = order
        self.sequence = self._sequence(order) if order is not None else []
        self.rolled_back = False

    def _sequence(self, order: list[str]) -> list[str]:
        """Outstanding partitions query by query in ``order``, each query's upstream first."""
        seen: dict[str, None] = {}
        for q in order:
            for p in self.problem.queries[q].partitions:
                seen.setdefault(p, None)
        return list(seen)

    def outstanding(self) -> list[str]:
        return [p for p in self.problem.partitions if p not in self.started]

    def stage(self, k: int, event: str, raw: float, added: float, policy: str, starts: bool) -> None:
        available = math.fsum(self.free.values())
        placement: dict[str, str] = {}
        if starts and self.outstanding():
            placement = self._start(policy, available)
        self.started |= set(placement)
        newly = [q for q in self.problem.query_ids() if q not in self.recovered and set(self.problem.queries[q].partitions) <= self.started]
        self.recovered |= set(newly)
        rollback = starts and not self.rolled_back
        self.rolled_back |= rollback
        self.stages.append(Stage(
            stage=k, event=event, capacity=raw, added=added, available=available,
            partitions=list(placement), placement=placement,
            used=math.fsum(self.problem.cost[p] for p in placement),
            recovered_queries=newly,
            recovered_priority=math.fsum(self.problem.queries[q].priority for q in self.recovered),
            global_rollback=rollback,
        ))

    def _start(self, policy: str, available: float) -> dict[str, str]:
        cost = self.problem.cost
        if policy == "order-then-pack":
            candidates = [p for p in self.sequence if p not in self.started]
        elif policy == "blocking":
            candidates = self.outstanding()
        elif policy == "operator-centric":
            candidates = operator_centric_order(self.problem, self.outstanding(), available)
        else:
            chosen = best_density(self._remaining_problem(), available).partitions
            pos = {p: i for i, p in enumerate(self.problem.partitions)}
            candidates = sorted(chosen, key=lambda p: (-cost[p], pos[p]))
        placement, _ = place([(p, cost[p]) for p in candidates], self.free)
        return placement

    def _remaining_problem(self) -> RecoveryProblem:
        """The outstanding queries over the outstanding partitions (started ones cost nothing)."""
        left = self.outstanding()
        left_set = set(left)
        queries = {}
        for qid, q in self.problem.queries.items():
            parts = [p for p in q.partitions if p in left_set]
            if parts:
                queries[qid] = (q.priority, parts)
        return make_problem(queries, {p: self.problem.cost[p] for p in left}, level={p: self.problem.level[p] for p in left})

    def schedule(self, policy, blocking, failures, node_cap, nodes, start) -> StagedSchedule:
        return StagedSchedule(
            policy=policy,
            mode="blocking" if blocking else "incremental",
            failures_since_checkpoint=failures,
            activation_threshold=ACTIVATION_THRESHOLD,
            node_cap=node_cap,
            nodes=nodes,
            query_order=self.order,
            stages=self.stages,
            recovered_queries=[q for q in self.problem.query_ids() if q in self.recovered],
            unrecovered_queries=[q for q in self.problem.query_ids() if q not in self.recovered],
            unscheduled_partitions=self.outstanding(),
            total_priority=self.problem.total_priority(),
            elapsed_s=time.perf_counter() - start,
        )
