"""Greedy replication planner: paper 000, Section IV-B, Algorithm 2 (the structure-blind baseline).

Problem: choose at most R tasks to replicate so that OF with every other task failed is high.

Algorithm: for every task, the OF when only that task fails; replicate the R tasks whose single
failure lowers OF the most (ties broken by task order, so results are deterministic). It ignores
whether the chosen tasks form complete MC-trees, which is why it does poorly at small budgets.

Single-failure losses: with one task down, information loss spreads linearly through independent
operators (Eq. 1, 3) and through a join that it reaches by one input stream only (Eq. 2 with the
other streams intact is the identity on that stream). So wherever a task cannot reach a join through
two of its streams, its loss is the derivative of OF with respect to its alive fraction, computed
for all tasks at once by one reverse (adjoint) pass. Tasks of operators that do reach some join
through two streams (reconvergent paths) are evaluated on their downstream cone, as before.

Complexity: O(T + S) for the adjoint pass, plus O(C * S_C) per reconvergent task for its cone C
(O(T * (T + S)) in the worst case: full partitioning and reconvergence everywhere); the paper
states O(N * M).

Example::

    >>> from ft_core.samples import load_sample
    >>> greedy_plan(load_sample("fig2-join"), 2).tasks
    ['O1[1]', 'O3[0]']
"""

from __future__ import annotations

import heapq
import time

from ft_core.deadline import Deadline
from ft_core.replication.plan import ReplicationPlan, make_plan
from ft_core.topology.task_graph import TaskGraph, rate_shares


def greedy_plan(graph: TaskGraph, budget: int) -> ReplicationPlan:
    start = time.perf_counter()
    return make_plan(graph, "greedy", budget, greedy_tasks(graph, budget), time.perf_counter() - start)


def greedy_tasks(graph: TaskGraph, budget: int, *, deadline: Deadline | None = None) -> set[int] | None:
    """The ``budget`` tasks whose single failure costs most OF; None if ``deadline`` passed first."""
    losses = single_failure_losses(graph, deadline=deadline)
    if losses is None:
        return None
    return set(heapq.nsmallest(min(budget, graph.n), range(graph.n), key=lambda i: (-losses[i], i)))


def single_failure_losses(graph: TaskGraph, *, deadline: Deadline | None = None) -> list[float] | None:
    """``1 - OF`` when only task ``i`` fails, for every task (Alg. 2 lines 3-5); None past ``deadline``."""
    sinks = graph.sinks
    total = sum(graph.rate[s] for s in sinks)
    weight = {s: (graph.rate[s] / total if total > 0 else 1.0 / len(sinks)) for s in sinks}
    losses = _adjoint(graph, weight)
    reconvergent = _reconvergent_operators(graph)
    for k, i in enumerate(i for i in range(graph.n) if graph.operator_of[i] in reconvergent):
        if deadline is not None and k % 64 == 0 and deadline.expired():
            return None
        losses[i] = _cone_loss(graph, i, weight)
    return losses


def _adjoint(graph: TaskGraph, sink_weight: dict[int, float]) -> list[float]:
    """``d OF / d A_i`` with every task alive, by one reverse pass (the linear part of every loss)."""
    grad = [sink_weight.get(i, 0.0) for i in range(graph.n)]
    for v in range(graph.n - 1, -1, -1):  # index order is topological: consumers come later
        streams = graph.inputs[v]
        if not streams or grad[v] == 0.0:
            continue
        join = graph.correlated[v] and len(streams) > 1
        weights = [1.0] * len(streams) if join else rate_shares([s.total_rate for s in streams])
        for stream, w in zip(streams, weights):
            for u, share in zip(stream.upstream, rate_shares(stream.rates)):
                grad[u] += grad[v] * w * share
    return grad


def _reconvergent_operators(graph: TaskGraph) -> set[str]:
    """Operators that reach some join operator through two of its input streams."""
    reaches: dict[str, set[str]] = {op: {op} for op in graph.operator_order}  # op -> operators upstream of it
    inputs: dict[str, list[str]] = {op: [] for op in graph.operator_order}
    for s in graph.topology.streams:
        inputs[s.target].append(s.source)
    for op in graph.operator_order:
        for u in inputs[op]:
            reaches[op] |= reaches[u]
    out: set[str] = set()
    for op in graph.operator_order:
        if graph.topology.operator(op).input_model != "correlated" or len(inputs[op]) < 2:
            continue
        for a, first in enumerate(inputs[op]):
            for second in inputs[op][a + 1:]:
                out |= reaches[first] & reaches[second]
    return out


def _cone_loss(graph: TaskGraph, failed: int, sink_weight: dict[int, float]) -> float:
    il = {failed: 1.0}
    for i in _downstream_cone(graph, failed):
        if i == failed:
            continue
        losses, rates = [], []
        for s in graph.inputs[i]:
            total = s.total_rate
            if total > 0:
                losses.append(sum(il.get(u, 0.0) * r for u, r in zip(s.upstream, s.rates)) / total)
            else:
                losses.append(sum(il.get(u, 0.0) for u in s.upstream) / len(s.upstream))
            rates.append(total)
        il[i] = _combine(graph.correlated[i], losses, rates)
    return sum(sink_weight[s] * loss for s, loss in il.items() if s in sink_weight)


def _combine(correlated: bool, losses: list[float], rates: list[float]) -> float:
    if correlated:
        alive = 1.0
        for loss in losses:
            alive *= 1.0 - loss
        return 1.0 - alive
    total = sum(rates)
    if total > 0:
        return sum(l * r for l, r in zip(losses, rates)) / total
    return sum(losses) / len(losses)


def _downstream_cone(graph: TaskGraph, task: int) -> list[int]:
    seen = {task}
    stack = [task]
    while stack:
        for v in graph.downstream[stack.pop()]:
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return sorted(seen)  # index order is a topological order
