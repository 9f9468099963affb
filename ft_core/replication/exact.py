"""Exact replication planner: a proven optimum of the PPA problem (paper 000, Section IV-A).

Problem: choose ``P``, ``|P| <= R``, maximising OF with every task outside ``P`` failed. OF is a sum
of non-negative MC-tree weights over the trees contained in ``P`` (see :mod:`ft_core.replication.mctree`): a
set-union knapsack, NP-hard. The paper's DP (Algorithm 1) enumerates plans over MC-trees and could
not finish on random topologies of 5-10 operators; we solve mixed-integer programs with HiGHS
(``scipy.optimize.milp``) instead.

Algorithm: two formulations, both with binary ``x_i`` (task ``i`` replicated), ``sum x <= R``.

- *Alive-fraction* model: continuous ``0 <= A_i <= x_i`` with ``A_i <= sum_k c_ik A_k`` (independent
  task, ``c_ik`` its substream shares of Eq. 1/3) or ``A_i <= sum_k c_ijk A_k`` for each input
  stream ``j`` (join); maximise ``sum_sinks w_s A_s`` (Eq. 4 weights). Without joins the optimum
  ``A`` equals the true alive fraction ``1 - IL``, so the MILP is exact at any size (O(T) variables,
  O(S) non-zeros). With joins, ``A_i <= min_j B_ij`` relaxes the product of Eq. 2: an upper bound.
- *MC-tree* model, used when joins are present and the trees are few enough: ``y_t <= x_i`` for
  each task of each distinct tree ``t``; maximise ``sum_t w_t y_t``. Exact.

With joins and too many trees, the relaxation's bound and the best of (its own plan, the
structure-aware plan, the greedy plan) give a plan with a proven gap; ``optimal`` is true only when
the gap closes. A ``time_limit`` makes HiGHS return its incumbent and dual bound instead of hanging.

Complexity: exponential in the worst case (it is NP-hard); in practice HiGHS certifies the paper's
random topologies in well under a second each (see docs/benchmarks/replication.md).

Example::

    >>> from ft_core.samples import load_sample
    >>> plan = exact_plan(load_sample("fig2-join"), 3)
    >>> plan.tasks, round(plan.output_fidelity, 4), plan.optimal
    (['O1[1]', 'O2[0]', 'O3[0]'], 0.4, True)
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse import coo_matrix

from ft_core.replication.fidelity import replicated_fidelity
from ft_core.highs import solve_milp
from ft_core.replication.mctree import count_mc_trees, weighted_tree_sets
from ft_core.replication.plan import ReplicationPlan, make_plan
from ft_core.topology.task_graph import TaskGraph, rate_shares

# HiGHS proves optima up to its feasibility tolerances (1e-6); a gap below this is optimal.
TOLERANCE = 1e-5
# A tiny cost per replicated task so that the solver does not pick useless tasks; far below TOLERANCE.
_TASK_PENALTY = 1e-10
DEFAULT_MAX_TREE_NONZEROS = 2_000_000


def exact_plan(
    graph: TaskGraph,
    budget: int,
    *,
    time_limit: float | None = 60.0,
    max_tree_nonzeros: int = DEFAULT_MAX_TREE_NONZEROS,
) -> ReplicationPlan:
    """A proven-optimal plan, or the best plan found with its proven upper bound."""
    start = time.perf_counter()
    if budget >= graph.n:
        return make_plan(graph, "exact", budget, set(range(graph.n)), time.perf_counter() - start, optimal=True, upper_bound=1.0)
    has_joins = any(graph.correlated[i] and len(graph.inputs[i]) > 1 for i in range(graph.n))
    if has_joins and _tree_nonzeros(graph) <= max_tree_nonzeros:
        chosen, bound = _solve_trees(graph, budget, time_limit)
    else:
        chosen, bound = _solve_alive_fraction(graph, budget, time_limit)
        if has_joins:
            chosen = _best_incumbent(graph, budget, chosen)
    plan_of = replicated_fidelity(graph, chosen)
    optimal = bound - plan_of <= TOLERANCE
    return make_plan(graph, "exact", budget, chosen, time.perf_counter() - start, optimal=optimal, upper_bound=max(bound, plan_of))


def _tree_nonzeros(graph: TaskGraph) -> int:
    # Cheap pre-check: trees x depth overestimates the constraint matrix without enumerating.
    depth = len(graph.operator_order)
    return count_mc_trees(graph) * depth


def _sink_weights(graph: TaskGraph) -> dict[int, float]:
    sinks = graph.sinks
    total = sum(graph.rate[s] for s in sinks)
    return {s: (graph.rate[s] / total if total > 0 else 1.0 / len(sinks)) for s in sinks}


def _solve_alive_fraction(graph: TaskGraph, budget: int, time_limit: float | None) -> tuple[set[int], float]:
    # Variables: x (n, binary), A (n), and one flow f per substream with f <= A_upstream, f <= x_task,
    # A_i <= sum_k c_ik f_ik. The per-substream cap tightens the LP relaxation well beyond A_i <= x_i.
    n = graph.n
    subs = [(i, j, u, c) for i in range(n) for j, s in enumerate(graph.inputs[i]) for u, c in zip(s.upstream, rate_shares(s.rates))]
    m = len(subs)
    rows, cols, vals = [], [], []
    upper: list[float] = []

    def add(entries: list[tuple[int, float]], ub: float = 0.0) -> None:
        r = len(upper)
        for col, val in entries:
            rows.append(r)
            cols.append(col)
            vals.append(val)
        upper.append(ub)

    for i in range(n):
        add([(n + i, 1.0), (i, -1.0)])  # A_i <= x_i
    by_task: dict[int, list[list[tuple[int, float]]]] = {}
    for e, (i, j, u, c) in enumerate(subs):
        f = 2 * n + e
        add([(f, 1.0), (n + u, -1.0)])  # f <= A_u
        add([(f, 1.0), (i, -1.0)])  # f <= x_i
        streams = by_task.setdefault(i, [[] for _ in graph.inputs[i]])
        streams[j].append((f, c))
    for i, streams in by_task.items():
        if graph.correlated[i]:
            for stream in streams:  # the join's product relaxed to min over streams
                add([(n + i, 1.0)] + [(f, -c) for f, c in stream])
        else:
            weights = rate_shares([graph.inputs[i][j].total_rate for j in range(len(streams))])
            add([(n + i, 1.0)] + [(f, -c * w) for stream, w in zip(streams, weights) for f, c in stream])
    add([(i, 1.0) for i in range(n)], float(budget))
    for higher, lower in _exchangeable_pairs(graph):
        add([(lower, 1.0), (higher, -1.0)])  # x_lower <= x_higher: breaks symmetry, loses no optimum

    c = np.zeros(2 * n + m)
    c[:n] = _TASK_PENALTY
    for s, w in _sink_weights(graph).items():
        c[n + s] -= w
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(upper), 2 * n + m)).tocsr()
    integrality = np.concatenate([np.ones(n), np.zeros(n + m)])
    return _run(c, matrix, np.array(upper), integrality, n, time_limit)


def _exchangeable_pairs(graph: TaskGraph) -> list[tuple[int, int]]:
    """Consecutive tasks (by rate) of operators whose every stream in and out is ``full``.

    Such tasks have the same upstream and downstream tasks and differ only in rate, which weighs
    their substreams (and their Eq. 4 weight at a sink); replacing a replicated task by an
    unreplicated one of higher rate never lowers OF, so some optimum replicates a prefix of
    them in rate order.
    """
    streams = graph.topology.streams
    pairs = []
    for op, tasks in graph.tasks_of.items():
        touching = [s for s in streams if op in (s.source, s.target)]
        if len(tasks) < 2 or any(s.partitioning != "full" for s in touching):
            continue
        ordered = sorted(tasks, key=lambda i: (-graph.rate[i], i))
        pairs.extend(zip(ordered, ordered[1:]))
    return pairs


def _solve_trees(graph: TaskGraph, budget: int, time_limit: float | None) -> tuple[set[int], float]:
    n = graph.n
    trees = list(weighted_tree_sets(graph, limit=count_mc_trees(graph)).items())
    rows, cols, vals = [], [], []
    row = 0
    for t, (tasks, _) in enumerate(trees):
        for i in tasks:  # y_t <= x_i
            rows += [row, row]
            cols += [n + t, i]
            vals += [1.0, -1.0]
            row += 1
    for higher, lower in _exchangeable_pairs(graph):
        rows += [row, row]
        cols += [lower, higher]
        vals += [1.0, -1.0]
        row += 1
    for i in range(n):
        rows.append(row)
        cols.append(i)
        vals.append(1.0)
    row += 1
    upper = np.zeros(row)
    upper[-1] = float(budget)
    c = np.concatenate([np.full(n, _TASK_PENALTY), -np.array([w for _, w in trees])])
    matrix = coo_matrix((vals, (rows, cols)), shape=(row, n + len(trees))).tocsr()
    integrality = np.concatenate([np.ones(n), np.zeros(len(trees))])
    return _run(c, matrix, upper, integrality, n, time_limit)


def _run(c, matrix, upper, integrality, n: int, time_limit: float | None) -> tuple[set[int], float]:
    res = solve_milp(c, matrix, upper, integrality, time_limit=time_limit)
    chosen = set() if res.x is None else {i for i in range(n) if res.x[i] > 0.5}
    dual = getattr(res, "mip_dual_bound", None)
    bound = -dual if dual is not None and np.isfinite(dual) else 1.0
    # The dual bound is valid even when the time limit stopped the search.
    return chosen, min(1.0, bound + n * _TASK_PENALTY)


def _best_incumbent(graph: TaskGraph, budget: int, relaxed: set[int]) -> set[int]:
    from ft_core.replication.greedy import greedy_plan
    from ft_core.replication.structure_aware import structure_aware_plan

    candidates = [relaxed]
    for planner in (structure_aware_plan, greedy_plan):
        candidates.append({graph.index[t] for t in planner(graph, budget).tasks})
    return max(candidates, key=lambda p: replicated_fidelity(graph, p))
