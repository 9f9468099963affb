"""The recovery-scheduling problem (paper 003, Section 2.3, Definition 2) and its documents.

Problem: after a correlated failure, a set FP of failed partitions, each with a recovery cost
``c_p`` (its CPU share), and a set of failed *queries*, each with a priority and the failed
partitions it needs. A query is recovered iff all its failed partitions are. Given a budget R,
choose RP ⊆ FP with ``sum c_p <= R`` maximising the priority of the recovered queries: a
set-union knapsack (NP-hard; Appendix D.1).

A problem document (JSON or YAML) is one of two forms:

- explicit::

      {"queries": {"Q1": {"priority": 2, "partitions": ["p1", "p2"]}}, "cost": {"p1": 1.0, "p2": 3.0}}

  ``partitions`` lists the query's *failed* partitions; ``priority`` defaults to 1. ``cost`` may
  be omitted (every partition costs 1); if given it must name exactly the partitions the queries
  use. The order of the partitions in ``cost`` (else their first appearance in ``queries``) is
  taken as their topological order (upstream first), which the operator-centric baseline and the
  staged schedules follow.
- topology::

      {"topology": {...}, "failed": ["O1[0]", ...], "cost": {"O1[0]": 1.0}, "priority": {"O3[0]": 2}}

  Queries follow Definition 1: each output partition (sink task) defines the query of its upstream
  closure; the query id is the sink's task id and its failed partitions are the failed tasks in
  that closure. Queries without a failed task are not failed and are left out. ``cost`` defaults
  to 1 per failed task, ``priority`` to 1 per query; the topological order is the task graph's.

Costs and budgets share one unit, e.g. fractions of a node's CPU (1.0 = one node at 100%).

Complexity: loading is O(sum of query sizes) for explicit documents and O(sinks x tasks) for
topologies (one upstream closure per sink).

Example::

    >>> problem = parse_problem({"queries": {"Q1": {"priority": 2, "partitions": ["p1", "p2"]},
    ...                                      "Q2": {"partitions": ["p2"]}},
    ...                          "cost": {"p1": 1.0, "p2": 3.0}})
    >>> problem.partitions, problem.sharing(), problem.max_sharing()
    (['p1', 'p2'], {'p1': 1, 'p2': 2}, 2)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ft_core.errors import InputError
from ft_core.input.limits import current_limits, exceeds

_META_FIELDS = {"name", "description"}
_EXPLICIT_FIELDS = {"queries", "cost"} | _META_FIELDS
_TOPOLOGY_FIELDS = {"topology", "failed", "cost", "priority"} | _META_FIELDS


class RecoveryQuery(BaseModel):
    """One failed query: its priority and its failed partitions (topological order)."""

    model_config = ConfigDict(frozen=True)

    priority: float = 1.0
    partitions: list[str]


class RecoveryProblem(BaseModel):
    """A validated recovery problem (build it with :func:`parse_problem` or :func:`make_problem`).

    ``partitions`` are the failed partitions in topological order, ``level`` their topological
    level (longest path from a source for topologies; the position for explicit documents).
    """

    model_config = ConfigDict(frozen=True)

    name: str = "recovery"
    partitions: list[str]
    cost: dict[str, float]
    level: dict[str, int]
    queries: dict[str, RecoveryQuery]

    def sharing(self) -> dict[str, int]:
        """``f_p``: the number of failed queries that share each failed partition."""
        counts = dict.fromkeys(self.partitions, 0)
        for query in self.queries.values():
            for p in query.partitions:
                counts[p] += 1
        return counts

    def max_sharing(self) -> int:
        """``d = max_p f_p`` of Theorem 5.1."""
        return max(self.sharing().values(), default=0)

    def total_cost(self) -> float:
        return math.fsum(self.cost.values())

    def total_priority(self) -> float:
        return math.fsum(q.priority for q in self.queries.values())

    def recovered_by(self, partitions: set[str] | list[str]) -> list[str]:
        """The queries whose failed partitions are all in ``partitions`` (natural id order)."""
        chosen = set(partitions)
        return [q for q in self.query_ids() if set(self.queries[q].partitions) <= chosen]

    def query_ids(self) -> list[str]:
        """Query ids in natural order (``Q2`` before ``Q10``): the deterministic tie-break order."""
        return sorted(self.queries, key=natural_key)


def natural_key(text: str) -> tuple:
    """Sort key comparing digit runs as numbers: ``natural_key("Q2") < natural_key("Q10")``."""
    return tuple((0, int(tok), "") if tok.isdigit() else (1, 0, tok) for tok in re.split(r"(\d+)", text) if tok)


@dataclass(slots=True)
class IndexedProblem:
    """The problem as plain lists for the planners' hot loops.

    Partitions are numbered in topological order and queries in natural id order; ``parts[q]``
    lists query ``q``'s failed partitions, ``sharers[p]`` the queries that need partition ``p``.
    """

    partition_ids: list[str]
    query_ids: list[str]
    cost: list[float]
    level: list[int]
    priority: list[float]
    parts: list[list[int]]
    sharers: list[list[int]]

    @property
    def share(self) -> list[float]:
        """``c_p / f_p``: each partition's cost spread over the queries that share it."""
        return [c / max(1, len(s)) for c, s in zip(self.cost, self.sharers)]


def index_problem(problem: RecoveryProblem) -> IndexedProblem:
    """Number partitions (topological order) and queries (natural order) for the planners."""
    pos = {p: i for i, p in enumerate(problem.partitions)}
    qids = problem.query_ids()
    parts = [sorted(pos[p] for p in problem.queries[q].partitions) for q in qids]
    sharers: list[list[int]] = [[] for _ in problem.partitions]
    for qi, ps in enumerate(parts):
        for p in ps:
            sharers[p].append(qi)
    return IndexedProblem(
        partition_ids=list(problem.partitions),
        query_ids=qids,
        cost=[problem.cost[p] for p in problem.partitions],
        level=[problem.level[p] for p in problem.partitions],
        priority=[problem.queries[q].priority for q in qids],
        parts=parts,
        sharers=sharers,
    )


def make_problem(
    queries: dict[str, tuple[float, list[str]]],
    cost: dict[str, float],
    *,
    level: dict[str, int] | None = None,
    name: str = "recovery",
) -> RecoveryProblem:
    """Build a problem from trusted plain data (generators, tests); no validation beyond pydantic.

    ``queries`` maps a query id to ``(priority, failed partitions)``; the order of ``cost`` is the
    topological order; ``level`` defaults to the position in that order.
    """
    order = list(cost)
    pos = {p: i for i, p in enumerate(order)}
    return RecoveryProblem(
        name=name,
        partitions=order,
        cost=dict(cost),
        level=dict(level) if level is not None else {p: i for i, p in enumerate(order)},
        queries={q: RecoveryQuery(priority=prio, partitions=sorted(set(ps), key=pos.__getitem__)) for q, (prio, ps) in queries.items()},
    )


def load_problem(path: str | Path) -> RecoveryProblem:
    """Read and validate a problem document from a ``.json``, ``.yaml`` or ``.yml`` file."""
    from ft_core.input.documents import read_document

    return parse_problem(read_document(path, "recovery problem"))


def parse_problem(data: Any) -> RecoveryProblem:
    """Validate a problem document (either form, see the module docstring)."""
    if not isinstance(data, dict):
        raise InputError(f"recovery problem: expected an object, got {type(data).__name__}")
    if "topology" in data:
        return _parse_topology_form(data)
    if "queries" in data:
        return _parse_explicit_form(data)
    raise InputError("recovery problem: expected a 'queries' field (explicit form) or a 'topology' field (topology form)")


def _name(data: dict) -> str:
    name = data.get("name", "recovery")
    if not isinstance(name, str):
        raise InputError(f"name: expected a string, got {type(name).__name__}")
    return name


def _check_fields(data: dict, allowed: set[str], form: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise InputError(f"{unknown[0]}: unknown field for the {form} form (allowed: {', '.join(sorted(allowed))})")


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise InputError(f"{where}: must be finite, got {value!r}")
    if value < 0:
        raise InputError(f"{where}: must be >= 0, got {value!r}")
    return float(value)


def _within_task_limit(count: int, where: str, what: str) -> None:
    limits = current_limits()
    if count > limits.max_tasks:
        raise InputError(f"{where}: {count} {what} {exceeds('max_tasks', count, limits)}")


def _mapping(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _parse_explicit_form(data: dict) -> RecoveryProblem:
    _check_fields(data, _EXPLICIT_FIELDS, "explicit")
    raw_queries = _mapping(data["queries"], "queries")
    if not raw_queries:
        raise InputError("queries: must list at least one failed query")
    _within_task_limit(len(raw_queries), "queries", "queries")
    queries = {str(qid): _parse_query(qid, spec) for qid, spec in raw_queries.items()}
    used = list(dict.fromkeys(p for _, ps in queries.values() for p in ps))
    _within_task_limit(len(used), "queries", "failed partitions")
    if "cost" in data:
        cost = {str(p): _number(v, f"cost.{p}") for p, v in _mapping(data["cost"], "cost").items()}
        for qid, (_, ps) in queries.items():
            for p in ps:
                if p not in cost:
                    raise InputError(f"queries.{qid}.partitions: unknown partition {p!r} (it has no entry in cost)")
        listed = set(used)
        unused = [p for p in cost if p not in listed]
        if unused:
            raise InputError(f"cost.{unused[0]}: unknown partition (no query lists it)")
    else:
        cost = dict.fromkeys(used, 1.0)
    return make_problem(queries, cost, name=_name(data))


def _parse_query(qid: Any, spec: Any) -> tuple[float, list[str]]:
    where = f"queries.{qid}"
    spec = _mapping(spec, where)
    unknown = sorted(set(spec) - {"priority", "partitions"})
    if unknown:
        raise InputError(f"{where}.{unknown[0]}: unknown field (allowed: partitions, priority)")
    priority = _number(spec.get("priority", 1), f"{where}.priority")
    parts = spec.get("partitions")
    if not isinstance(parts, list) or not parts:
        raise InputError(f"{where}.partitions: expected a non-empty list of failed partition ids")
    if not all(isinstance(p, str) and p for p in parts):
        raise InputError(f"{where}.partitions: partition ids must be non-empty strings")
    if len(set(parts)) != len(parts):
        dup = next(p for p in parts if parts.count(p) > 1)
        raise InputError(f"{where}.partitions: partition {dup!r} is listed twice")
    return priority, list(parts)


def _parse_topology_form(data: dict) -> RecoveryProblem:
    from ft_core.topology.task_graph import build_task_graph
    from ft_core.topology.document import parse_topology

    _check_fields(data, _TOPOLOGY_FIELDS, "topology")
    graph = build_task_graph(parse_topology(data["topology"]))
    failed = _failed_tasks(data.get("failed"), graph.index)
    cost = _task_costs(data.get("cost", {}), graph.index, failed)
    priority = _sink_priorities(data.get("priority", {}), graph)
    fail_set = set(failed)
    queries = {}
    for s in graph.sinks:
        closure = graph.upstream_closure(s) & fail_set
        if closure:
            tid = graph.task_ids[s]
            queries[tid] = (priority.get(tid, 1.0), [graph.task_ids[i] for i in sorted(closure)])
    order = sorted(failed)
    levels = _levels(graph)
    return make_problem(
        queries,
        {graph.task_ids[i]: cost[graph.task_ids[i]] for i in order},
        level={graph.task_ids[i]: levels[i] for i in order},
        name=_name(data) if "name" in data else graph.topology.name,
    )


def _failed_tasks(raw: Any, index: dict[str, int]) -> list[int]:
    if not isinstance(raw, list) or not raw:
        raise InputError("failed: expected a non-empty list of failed task ids")
    out = []
    for tid in raw:
        if not isinstance(tid, str) or tid not in index:
            raise InputError(f"failed: unknown task {tid!r} (not a task of the topology)")
        if index[tid] in out:
            raise InputError(f"failed: task {tid!r} is listed twice")
        out.append(index[tid])
    return out


def _task_costs(raw: Any, index: dict[str, int], failed: list[int]) -> dict[str, float]:
    raw = _mapping(raw, "cost")
    for tid in raw:
        if tid not in index:
            raise InputError(f"cost.{tid}: unknown partition (not a task of the topology)")
    names = {i: tid for tid, i in index.items()}
    return {names[i]: _number(raw.get(names[i], 1.0), f"cost.{names[i]}") for i in failed}


def _sink_priorities(raw: Any, graph) -> dict[str, float]:
    raw = _mapping(raw, "priority")
    sinks = {graph.task_ids[s] for s in graph.sinks}
    for tid, value in raw.items():
        if tid not in sinks:
            raise InputError(f"priority.{tid}: not an output partition (sink task) of the topology")
        _number(value, f"priority.{tid}")
    return {tid: float(v) for tid, v in raw.items()}


def _levels(graph) -> list[int]:
    """Longest-path depth of each task from the sources (tasks are numbered topologically)."""
    level = [0] * graph.n
    for i in range(graph.n):
        for stream in graph.inputs[i]:
            for up in stream.upstream:
                level[i] = max(level[i], level[up] + 1)
    return level


def upstream_first(problem: RecoveryProblem, partitions) -> list[str]:
    """``partitions`` sorted in the problem's topological order."""
    pos = {p: i for i, p in enumerate(problem.partitions)}
    return sorted(partitions, key=pos.__getitem__)



class RecoveryPlan(BaseModel):
    """A recovery plan: the failed partitions to restart and what that recovers.

    ``optimal`` is true only when optimality is proven: by the exact solver, or for a heuristic when
    it recovers every failed query or meets the fractional upper bound. ``upper_bound`` is a proven
    bound on the optimum's priority when known, and ``gap`` the relative gap ``(ub - value) / ub``.
    ``guarantee`` is best-density's ratio ``1 - e^(-1/d)`` (Theorem 5.1), which applies when
    ``full_enumeration`` is true (every feasible singleton and pair seed was tried or pruned by the
    bound).
    """

    algorithm: str
    budget: float
    partitions: list[str]
    recovered_queries: list[str]
    recovered_priority: float
    total_priority: float
    cost: float
    optimal: bool
    elapsed_s: float
    upper_bound: float | None = None
    gap: float | None = None
    max_sharing: int
    guarantee: float | None = None
    seeds: int | None = None
    full_enumeration: bool | None = None


def make_plan(
    problem: RecoveryProblem,
    algorithm: str,
    budget: float,
    partitions,
    elapsed_s: float,
    *,
    optimal: bool,
    upper_bound: float | None = None,
    **extra: Any,
) -> RecoveryPlan:
    """Assemble a :class:`RecoveryPlan`, recomputing the recovered queries, priority and cost."""
    chosen = upstream_first(problem, set(partitions))
    recovered = problem.recovered_by(chosen)
    value = math.fsum(problem.queries[q].priority for q in recovered)
    gap = None
    if upper_bound is not None:
        upper_bound = max(upper_bound, value)
        gap = (upper_bound - value) / upper_bound if upper_bound > 0 else 0.0
    return RecoveryPlan(
        algorithm=algorithm,
        budget=budget,
        partitions=chosen,
        recovered_queries=recovered,
        recovered_priority=value,
        total_priority=problem.total_priority(),
        cost=math.fsum(problem.cost[p] for p in chosen),
        optimal=optimal or len(recovered) == len(problem.queries),
        elapsed_s=elapsed_s,
        upper_bound=upper_bound,
        gap=gap,
        max_sharing=problem.max_sharing(),
        **extra,
    )


def check_budget(budget: Any, where: str = "budget") -> float:
    """A budget must be a finite number >= 0 (InputError otherwise)."""
    return _number(budget, where)
