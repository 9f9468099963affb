"""Operator-centric recovery (OC): the paper's baseline planner (paper 003, Sections 2.2.3 and 7.3).

Problem: the recovery-scheduling problem of :mod:`ft_core.recovery.problem`.

Algorithm: OC ignores queries. It "always tries to recover the partition with minimum recovery
cost in topological order" (Section 7): failed partitions are visited level by level, upstream
first (topological level, then cost, then topological position), and each one that still fits in
the remaining budget is restarted; one that does not fit is skipped and the walk continues. The
paper leaves the granularity (partition or operator) and the tie rule open; we use partitions, as
its Figure 2 schedule does, and make ties deterministic. For explicit problem documents each
partition is its own level in document order, so OC follows that order.

Complexity: O(|FP| log |FP|) for the sort, O(sum of query sizes) to count recovered queries.

Example (the Figure 2 instance, T3 of the digest: two unit-cost partitions per node)::

    >>> from ft_core.samples import SAMPLES_DIR
    >>> from ft_core.recovery.problem import load_problem
    >>> fig2 = load_problem(SAMPLES_DIR / "recovery-fig1.json")
    >>> plan = operator_centric(fig2, 0.8)
    >>> plan.partitions, plan.recovered_queries
    (['p3', 'p4'], [])
"""

from __future__ import annotations

import time

from ft_core.recovery.problem import RecoveryPlan, RecoveryProblem, check_budget, make_plan


def operator_centric(problem: RecoveryProblem, budget: float) -> RecoveryPlan:
    """The OC plan for ``budget`` (see the module docstring)."""
    start = time.perf_counter()
    budget = check_budget(budget)
    chosen = operator_centric_order(problem, problem.partitions, budget)
    return make_plan(problem, "operator-centric", budget, chosen, time.perf_counter() - start, optimal=False)


def operator_centric_order(problem: RecoveryProblem, partitions, budget: float) -> list[str]:
    """The partitions of ``partitions`` OC restarts within ``budget``, in the order it picks them."""
    pos = {p: i for i, p in enumerate(problem.partitions)}
    eps = 1e-9 * max(1.0, budget)
    left = budget
    chosen = []
    for p in sorted(partitions, key=lambda p: (problem.level[p], problem.cost[p], pos[p])):
        if problem.cost[p] <= left + eps:
            chosen.append(p)
            left -= problem.cost[p]
    return chosen
