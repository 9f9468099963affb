"""Replica placement across failure domains (paper 001, Sec. V-A/V-B, Algorithms 5 and 6, generalised).

Problem: every task (operator) runs a primary copy on a known node; place up to ``k_max``
*replicas* of each task (copies besides the primary) on nodes with spare capacity so that no two
copies of a task share a failure domain, at least ``k_min`` replicas per task survive, and the
network cost stays low; when the total cost exceeds a target, drop the least useful replicas per
unit of cost, never going below ``k_min``.

Cost model (Sec. V-A): every copy of a task receives from every copy of each upstream task and
sends to every copy of each downstream task (the paper's stream replicas: k^2 between adjacent
operators, k from a source or to a consumer). A stream costs ``rate x cost(from node, to node)``
(the bandwidth-delay product with a cost matrix in place of WAN latency); ``rate`` is the sending
task's output rate, or the given rate of an external source. The cost of a copy on node ``s`` is
the paper's ``cost_s(in(o) + out(o))``: all streams that touch it.

Algorithm 5 (deployment), generalised: ``k_max`` phases; in each phase every task (topological
order, then document order) gets one more replica on the node of least ``cost_s`` among the
candidates, ties to the earlier node in the document. Candidates: ``load + demand <= headroom x
capacity`` (the paper's ``alpha``; ``<=`` so that a node can be filled exactly) and a failure domain
used by no copy of the task yet. The domain rule replaces the paper's ``latency(s, s') > d_min``
(its point: peers must not fall into the same network partition); here they must not fall to the
same correlated failure. Phases 1..k_min are mandatory: a task left without a candidate there
raises :class:`~ft_core.errors.InfeasibleError` (the paper does not handle an empty C); later
phases are best effort (``shortfall``).

Algorithm 6 (garbage collection), generalised: while the total cost exceeds ``cost_target``,
discard the replica with the least ``utility / cost`` among tasks with more than ``k_min``
replicas (utility 1 unless given, e.g. measured first-arrival weights, so the most expensive
replica goes first; ties: the later-deployed). A replica is discarded with all its streams; every
other copy still has the primaries to talk to, so no dependent group forms (the paper's
``dependents(S)`` cascade only arises when single stream replicas are dropped, which this module
does not do). If the target cannot be met at ``k_min`` replicas, ``target_met`` is false: the
``k_min`` guarantee wins, as in the paper.

Complexity: deployment O(k_max x T x N x k x d) for T tasks, N nodes, k copies and d neighbours
per task; each pruning round O(R x k x d) over the R removable replicas. The greedy is the
paper's; it is not an optimal assignment (capacity contention can make it fail where another
order would succeed).

Example (two tasks with primaries on rack-a; replicas avoid rack-a)::

    >>> doc = {"nodes": [{"name": "a1", "domain": "rack-a", "capacity": 2},
    ...                  {"name": "b1", "domain": "rack-b", "capacity": 2},
    ...                  {"name": "s1", "domain": "standby", "capacity": 2}],
    ...        "cost": {"same_domain": 1, "other_domain": 4, "between": {"a1": {"s1": 2}}},
    ...        "tasks": [{"name": "parse", "primary": "a1"}, {"name": "agg", "primary": "a1", "upstream": ["parse"]}]}
    >>> plan = place_replicas(parse_placement_problem(doc), k_min=1)
    >>> plan.replicas, plan.total_cost, plan.baseline_cost
    ({'parse': ['s1'], 'agg': ['s1']}, 4.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from ft_core.errors import InfeasibleError, InputError
from ft_core.input.documents import read_document
from ft_core.input.names import named
from ft_core.input.quantities import AtMost, NonNegative, PositiveFraction
from ft_core.input.validation import validate

_EPS = 1e-9  # capacity and cost comparisons tolerate float noise of repeated sums


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


class Node(_Doc):
    """A node that can host copies: its failure domain, capacity and load before placement."""

    name: str = Field(min_length=1)
    domain: named("failure domain")
    capacity: NonNegative
    load: NonNegative = 0.0


class CostModel(_Doc):
    """Cost of one unit of rate between two nodes: 0 on the same node, ``between`` when given
    (either direction; symmetric unless both are given), else by failure domain."""

    same_domain: float = Field(default=1.0, ge=0)
    other_domain: float = Field(default=1.0, ge=0)
    between: dict[str, dict[str, float]] = Field(default_factory=dict)


class Task(_Doc):
    """A task to replicate: its primary's node, demand (capacity units) and streams."""

    name: str = Field(min_length=1)
    primary: str
    demand: float = Field(default=1.0, ge=0)
    rate: float = Field(default=1.0, ge=0, description="output rate sent by each copy to each downstream copy")
    upstream: list[str] = Field(default_factory=list)
    sources: dict[str, float] = Field(default_factory=dict, description="external input node -> rate")
    sinks: list[str] = Field(default_factory=list, description="nodes that read this task's output")


class PlacementProblem(_Doc):
    """A placement document (``ftops plan placement``); see the module docstring."""

    name: str = "placement"
    description: str | None = None
    headroom: PositiveFraction = 1.0
    nodes: Annotated[list[Node], Field(min_length=1), AtMost("max_nodes", length=True)]
    cost: CostModel = Field(default_factory=CostModel)
    tasks: Annotated[list[Task], Field(min_length=1), AtMost("max_tasks", length=True)]


class Placement(BaseModel):
    """One replica: where it runs, in which phase it was deployed, and the cost of its streams in
    the final placement (after pruning; at deployment the other replicas may have differed)."""

    task: str
    node: str
    domain: str
    phase: int
    cost: float


class Pruned(BaseModel):
    """A replica discarded by the pruning (Algorithm 6) and the total cost after it."""

    task: str
    node: str
    cost: float
    utility: float
    total_cost_after: float


class PlacementPlan(BaseModel):
    """Replica nodes per task (deployment order), costs against the unreplicated baseline."""

    k_min: int
    k_max: int
    cost_target: float | None
    replicas: dict[str, list[str]]
    placements: list[Placement]
    pruned: list[Pruned]
    shortfall: dict[str, int]
    total_cost: float
    baseline_cost: float
    streams: int
    baseline_streams: int
    bandwidth: float
    baseline_bandwidth: float
    target_met: bool | None
    node_load: dict[str, float]


CostFunction = Callable[[str, str], float]


def load_placement_problem(path: str | Path) -> PlacementProblem:
    """Read and validate a placement document from a ``.json``, ``.yaml`` or ``.yml`` file."""
    return parse_placement_problem(read_document(path, "placement"))


def parse_placement_problem(data: Any) -> PlacementProblem:
    """Validate a placement document given as a dict; InputError names the field."""
    problem = validate(PlacementProblem, data, "placement document")
    _check_references(problem)
    _topological_order(problem)  # raises on a cycle
    return problem


def domain_cost(problem: PlacementProblem) -> CostFunction:
    """The document's cost function (see :class:`CostModel`)."""
    domain = {n.name: n.domain for n in problem.nodes}
    between = problem.cost.between
    model = problem.cost

    def cost(a: str, b: str) -> float:
        if a == b:
            return 0.0
        if b in between.get(a, {}):
            return between[a][b]
        if a in between.get(b, {}):
            return between[b][a]
        return model.same_domain if domain[a] == domain[b] else model.other_domain

    return cost


def place_replicas(
    problem: PlacementProblem,
    k_min: int,
    *,
    k_max: int | None = None,
    cost_target: float | None = None,
    cost: CostFunction | None = None,
    utility: Mapping[tuple[str, str], float] | None = None,
) -> PlacementPlan:
    """Deploy (Algorithm 5) then prune (Algorithm 6); see the module docstring.

    ``cost`` overrides the document's cost model; ``utility`` maps ``(task, node)`` to a
    replica's usefulness (default 1).
    """
    k_max = k_min if k_max is None else k_max
    _check_counts(k_min, k_max, cost_target)
    state = _State.build(problem, cost or domain_cost(problem))
    state.check_domains(k_min)
    phases = state.deploy(k_min, k_max)
    pruned = state.prune(k_min, cost_target, utility or {}) if cost_target is not None else []
    return state.plan(k_min, k_max, cost_target, phases, pruned)


def _check_counts(k_min: int, k_max: int, cost_target: float | None) -> None:
    if isinstance(k_min, bool) or not isinstance(k_min, int) or k_min < 0:
        raise InputError(f"k_min: must be an integer >= 0, got {k_min!r}")
    if isinstance(k_max, bool) or not isinstance(k_max, int) or k_max < k_min:
        raise InputError(f"k_max: must be an integer >= k_min ({k_min}), got {k_max!r}")
    if cost_target is not None and not (math.isfinite(cost_target) and cost_target >= 0):
        raise InputError(f"cost_target: must be a finite number >= 0, got {cost_target!r}")


def _check_references(problem: PlacementProblem) -> None:
    nodes = _unique([n.name for n in problem.nodes], "nodes")
    tasks = _unique([t.name for t in problem.tasks], "tasks")
    for i, t in enumerate(problem.tasks):
        where = f"placement document field tasks.{i}"
        if t.primary not in nodes:
            raise InputError(f"{where}.primary: unknown node {t.primary!r}")
        for up in t.upstream:
            if up not in tasks or up == t.name:
                raise InputError(f"{where}.upstream: {up!r} is not another task of the document")
        for node, rate in t.sources.items():
            if node not in nodes:
                raise InputError(f"{where}.sources.{node}: unknown node")
            if not (math.isfinite(rate) and rate >= 0):
                raise InputError(f"{where}.sources.{node}: rate must be a finite number >= 0, got {rate!r}")
        for node in t.sinks:
            if node not in nodes:
                raise InputError(f"{where}.sinks: unknown node {node!r}")
    for a, row in problem.cost.between.items():
        for b, value in row.items():
            if a not in nodes or b not in nodes:
                raise InputError(f"placement document field cost.between.{a}.{b}: unknown node {(a if a not in nodes else b)!r}")
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"placement document field cost.between.{a}.{b}: must be a finite number >= 0, got {value!r}")


def _unique(names: list[str], field: str) -> set[str]:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise InputError(f"placement document field {field}.{i}.name: duplicate name {name!r}")
        seen.add(name)
    return seen


def _topological_order(problem: PlacementProblem) -> list[int]:
    """Kahn's algorithm; ties keep document order (the paper leaves the order open)."""
    index = {t.name: i for i, t in enumerate(problem.tasks)}
    indegree = [len(set(t.upstream)) for t in problem.tasks]
    down: list[list[int]] = [[] for _ in problem.tasks]
    for i, t in enumerate(problem.tasks):
        for up in dict.fromkeys(t.upstream):
            down[index[up]].append(i)
    order, ready = [], [i for i, d in enumerate(indegree) if d == 0]
    while ready:
        i = min(ready)
        ready.remove(i)
        order.append(i)
        for j in down[i]:
            indegree[j] -= 1
            if indegree[j] == 0:
                ready.append(j)
    if len(order) < len(problem.tasks):
        stuck = [problem.tasks[i].name for i in range(len(problem.tasks)) if i not in set(order)]
        raise InputError(f"placement document field tasks: the upstream links form a cycle among {', '.join(stuck)}")
    return order


@dataclass(slots=True)
class _State:
    """Plain lists for the greedy loops: node and task indices, a dense cost matrix."""

    problem: PlacementProblem
    cost: list[list[float]]
    domain: list[str]
    room: list[float]  # headroom x capacity
    load: list[float]
    copies: list[list[int]]  # per task, node indices; [0] is the primary
    phase_of: dict[tuple[int, int], int]
    up: list[list[int]]
    down: list[list[int]]
    sources: list[list[tuple[int, float]]]
    sinks: list[list[int]]
    rate: list[float]
    demand: list[float]
    order: list[int]

    @classmethod
    def build(cls, problem: PlacementProblem, cost: CostFunction) -> _State:
        names = [n.name for n in problem.nodes]
        node = {name: i for i, name in enumerate(names)}
        task = {t.name: i for i, t in enumerate(problem.tasks)}
        matrix = [[_cost_value(cost, a, b) for b in names] for a in names]
        load = [n.load for n in problem.nodes]
        for t in problem.tasks:
            load[node[t.primary]] += t.demand
        up = [[task[u] for u in dict.fromkeys(t.upstream)] for t in problem.tasks]
        down: list[list[int]] = [[] for _ in problem.tasks]
        for i, ups in enumerate(up):
            for u in ups:
                down[u].append(i)
        return cls(
            problem=problem, cost=matrix, domain=[n.domain for n in problem.nodes],
            room=[problem.headroom * n.capacity for n in problem.nodes], load=load,
            copies=[[node[t.primary]] for t in problem.tasks], phase_of={}, up=up, down=down,
            sources=[[(node[s], r) for s, r in t.sources.items()] for t in problem.tasks],
            sinks=[[node[s] for s in t.sinks] for t in problem.tasks],
            rate=[t.rate for t in problem.tasks], demand=[t.demand for t in problem.tasks],
            order=_topological_order(problem),
        )

    def fits(self, n: int, t: int) -> bool:
        return self.load[n] + self.demand[t] <= self.room[n] + _EPS

    def copy_cost(self, t: int, n: int) -> float:
        """``cost_s(in(o) + out(o))``: every stream touching a copy of task ``t`` on node ``n``."""
        c = self.cost
        incoming = sum(self.rate[u] * sum(c[m][n] for m in self.copies[u]) for u in self.up[t])
        incoming += sum(rate * c[s][n] for s, rate in self.sources[t])
        outgoing = sum(sum(c[n][m] for m in self.copies[d]) for d in self.down[t]) + sum(c[n][s] for s in self.sinks[t])
        return incoming + self.rate[t] * outgoing

    def check_domains(self, k_min: int) -> None:
        """Fail early when too few other failure domains could ever host a task's replicas."""
        for t in self.order:
            own = self.domain[self.copies[t][0]]
            possible = sorted({self.domain[n] for n in range(len(self.domain)) if self.domain[n] != own and self.fits(n, t)})
            if len(possible) < k_min:
                raise InfeasibleError(
                    f"task {self._name(t)!r}: k_min={k_min} replicas need {k_min} failure domains other than its "
                    f"primary's ({own!r}) with a node that fits demand {self.demand[t]:g}; only {len(possible)} "
                    f"possible ({', '.join(possible) or 'none'})")

    def deploy(self, k_min: int, k_max: int) -> dict[str, int]:
        """Algorithm 5: one replica per task per phase; returns the best-effort shortfall."""
        shortfall: dict[str, int] = {}
        for phase in range(1, k_max + 1):
            placed = 0
            for t in self.order:
                best = self._cheapest_candidate(t)
                if best is None:
                    self._give_up(t, phase, k_min, shortfall)
                    continue
                self.copies[t].append(best)
                self.load[best] += self.demand[t]
                self.phase_of[(t, best)] = phase
                placed += 1
            if not placed:
                # Loads only grow and used domains only accumulate, so no later phase can place a replica
                # either: count the remaining phases as shortfall at once (a --k-max of 10^4 costs nothing).
                for t in self.order:
                    shortfall[self._name(t)] += k_max - phase
                break
        return shortfall

    def _cheapest_candidate(self, t: int) -> int | None:
        used = {self.domain[n] for n in self.copies[t]}
        candidates = [n for n in range(len(self.domain)) if self.domain[n] not in used and self.fits(n, t)]
        return min(candidates, key=lambda n: (self.copy_cost(t, n), n)) if candidates else None

    def _give_up(self, t: int, phase: int, k_min: int, shortfall: dict[str, int]) -> None:
        placed = len(self.copies[t]) - 1
        if phase <= k_min:
            used = sorted({self.domain[n] for n in self.copies[t]})
            raise InfeasibleError(
                f"task {self._name(t)!r}: only {placed} of k_min={k_min} replicas could be placed: every node "
                f"outside the failure domains it already uses ({', '.join(used)}) lacks free capacity for demand "
                f"{self.demand[t]:g} once the other tasks' replicas are placed")
        shortfall[self._name(t)] = shortfall.get(self._name(t), 0) + 1

    def total_cost(self) -> float:
        """Every stream once: the inputs of every copy (from upstream copies and sources) plus sink streams."""
        total = 0.0
        for t in range(len(self.copies)):
            for n in self.copies[t]:
                total += sum(self.rate[u] * sum(self.cost[m][n] for m in self.copies[u]) for u in self.up[t])
                total += sum(rate * self.cost[s][n] for s, rate in self.sources[t])
                total += self.rate[t] * sum(self.cost[n][s] for s in self.sinks[t])
        return total

    def stream_counts(self) -> tuple[int, float]:
        """The number of streams and their summed rate (the paper's bandwidth)."""
        count, bandwidth = 0, 0.0
        for t, copies in enumerate(self.copies):
            k = len(copies)
            for u in self.up[t]:
                count += k * len(self.copies[u])
                bandwidth += k * len(self.copies[u]) * self.rate[u]
            count += k * (len(self.sources[t]) + len(self.sinks[t]))
            bandwidth += k * (sum(r for _, r in self.sources[t]) + len(self.sinks[t]) * self.rate[t])
        return count, bandwidth

    def prune(self, k_min: int, target: float, utility: Mapping[tuple[str, str], float]) -> list[Pruned]:
        """Algorithm 6: discard the least useful replica per unit of cost while over the target."""
        pruned: list[Pruned] = []
        total = self.total_cost()
        while total > target + _EPS:
            victim = self._least_useful(k_min, utility)
            if victim is None:
                break
            t, n, cost, value = victim
            self.copies[t].remove(n)
            self.load[n] -= self.demand[t]
            total = self.total_cost()
            pruned.append(Pruned(task=self._name(t), node=self._node(n), cost=cost, utility=value, total_cost_after=total))
        return pruned

    def _least_useful(self, k_min: int, utility: Mapping[tuple[str, str], float]) -> tuple[int, int, float, float] | None:
        best, best_key = None, None
        for t, copies in enumerate(self.copies):
            if len(copies) - 1 <= k_min:
                continue
            for n in copies[1:]:
                cost = self.copy_cost(t, n)
                if cost <= _EPS:
                    continue  # discarding it saves nothing
                value = float(utility.get((self._name(t), self._node(n)), 1.0))
                key = (value / cost, -cost, -self.phase_of[(t, n)], -t)
                if best_key is None or key < best_key:
                    best, best_key = (t, n, cost, value), key
        return best

    def plan(self, k_min: int, k_max: int, target: float | None, shortfall: dict[str, int], pruned: list[Pruned]) -> PlacementPlan:
        total = self.total_cost()
        streams, bandwidth = self.stream_counts()
        baseline = replace(self, copies=[copies[:1] for copies in self.copies])  # primaries only
        base_streams, base_bandwidth = baseline.stream_counts()
        placements = [
            Placement(task=self._name(t), node=self._node(n), domain=self.domain[n], phase=self.phase_of[(t, n)],
                      cost=self.copy_cost(t, n))
            for t in self.order for n in self.copies[t][1:]
        ]
        return PlacementPlan(
            k_min=k_min, k_max=k_max, cost_target=target,
            replicas={self._name(t): [self._node(n) for n in self.copies[t][1:]] for t in self.order},
            placements=placements, pruned=pruned, shortfall=shortfall,
            total_cost=total, baseline_cost=baseline.total_cost(), streams=streams, baseline_streams=base_streams,
            bandwidth=bandwidth, baseline_bandwidth=base_bandwidth,
            target_met=None if target is None else total <= target + _EPS,
            node_load={self._node(n): self.load[n] for n in range(len(self.load))},
        )

    def _name(self, t: int) -> str:
        return self.problem.tasks[t].name

    def _node(self, n: int) -> str:
        return self.problem.nodes[n].name


def _cost_value(cost: CostFunction, a: str, b: str) -> float:
    value = cost(a, b)
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
        raise InputError(f"cost({a!r}, {b!r}): must be a finite number >= 0, got {value!r}")
    return float(value)
