"""Exact recovery planner: a proven optimum of the recovery-scheduling problem (paper 003, App. B).

Problem: the set-union knapsack of :mod:`ft_core.recovery.problem`: restart failed partitions
within budget R to maximise the priority of the queries whose failed partitions are all restarted.

Algorithm: the paper's "DP" (Algorithm 4) enumerates feasible sets of queries (O(2^M)), which is
why its evaluation stops at 18 queries. We solve the mixed-integer program instead, with HiGHS
(``scipy.optimize.milp``)::

    maximise    sum_q prt_q y_q
    subject to  y_q <= x_p            for every failed partition p of query q
                sum_p c_p x_p <= R
                x_p, y_q in {0, 1}

Shortcuts: if R covers every failed partition the answer is all of them; queries that cannot fit
alone (``C_q > R``) are fixed to 0. The plan restarts exactly the partitions of the recovered
queries (the solver may switch on zero-cost partitions that recover nothing; they are dropped).
With ``time_limit`` HiGHS stops and returns its incumbent and dual bound; the better of that
incumbent and a BestDensity plan is returned, ``optimal`` is then false and ``gap = (bound - value)
/ bound`` against HiGHS's proven bound. HiGHS is deterministic for a given model, so the plan is too.

Complexity: exponential in the worst case (NP-hard); the model has |FP| + M binaries and
``sum_q |failed(q)|`` coupling rows. See docs/benchmarks/recovery.md for sizes certified in 60 s.

Example (T2 of the digest at R = 8: three queries sharing p0 beat the cheap standalone query)::

    >>> from ft_core.recovery.problem import make_problem
    >>> t2 = make_problem({"Q1": (1, ["p0", "p1"]), "Q2": (1, ["p0", "p2"]), "Q3": (1, ["p0", "p3"]),
    ...                    "Q4": (1, ["p4"])}, {"p0": 4, "p1": 1, "p2": 1, "p3": 1, "p4": 3})
    >>> plan = exact_recovery(t2, 8)
    >>> plan.recovered_queries, plan.recovered_priority, plan.optimal
    (['Q1', 'Q2', 'Q3'], 3.0, True)
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse import coo_matrix

from ft_core.recovery.best_density import best_density
from ft_core.highs import solve_milp
from ft_core.recovery.problem import RecoveryPlan, RecoveryProblem, check_budget, index_problem, make_plan

# HiGHS proves optima up to its tolerances; a relative gap below this counts as optimal.
TOLERANCE = 1e-6
# Seeds work for the BestDensity incumbent tried when HiGHS stops at its time limit (a fraction of a second).
FALLBACK_WORK_LIMIT = 200_000


def exact_recovery(problem: RecoveryProblem, budget: float, *, time_limit: float | None = 60.0) -> RecoveryPlan:
    """A proven-optimal plan, or within ``time_limit`` seconds the best plan found and its gap."""
    start = time.perf_counter()
    budget = check_budget(budget)
    inst = index_problem(problem)
    if sum(inst.cost) <= budget * (1 + 1e-12):
        return make_plan(problem, "exact", budget, inst.partition_ids, time.perf_counter() - start,
                         optimal=True, upper_bound=problem.total_priority())
    chosen_queries, bound = _solve(inst, budget, time_limit)
    partitions = {inst.partition_ids[p] for q in chosen_queries for p in inst.parts[q]}
    plan = make_plan(problem, "exact", budget, partitions, 0.0, optimal=False, upper_bound=bound)
    if plan.gap is not None and plan.gap > TOLERANCE:  # stopped early: BestDensity may beat the incumbent
        heuristic = best_density(problem, budget, work_limit=FALLBACK_WORK_LIMIT)
        if heuristic.recovered_priority > plan.recovered_priority:
            plan = make_plan(problem, "exact", budget, heuristic.partitions, 0.0, optimal=False, upper_bound=bound)
    return plan.model_copy(update={"optimal": plan.gap is not None and plan.gap <= TOLERANCE,
                                   "elapsed_s": time.perf_counter() - start})


def _solve(inst, budget: float, time_limit: float | None) -> tuple[list[int], float]:
    """Solve the MILP; return the recovered query indices and the proven upper bound."""
    n_p, n_q = len(inst.cost), len(inst.priority)
    fits = [sum(inst.cost[p] for p in ps) <= budget * (1 + 1e-12) + 1e-12 for ps in inst.parts]
    rows, cols, vals = [], [], []
    r = 0
    for q, ps in enumerate(inst.parts):
        if not fits[q]:
            continue
        for p in ps:  # y_q - x_p <= 0
            rows += [r, r]
            cols += [n_p + q, p]
            vals += [1.0, -1.0]
            r += 1
    rows += [r] * n_p
    cols += list(range(n_p))
    vals += list(inst.cost)
    upper = np.zeros(r + 1)
    upper[r] = budget
    matrix = coo_matrix((vals, (rows, cols)), shape=(r + 1, n_p + n_q)).tocsr()
    # y_q of a query that cannot fit alone is fixed to 0 through its objective and a zero row bound.
    c = np.concatenate([np.zeros(n_p), -np.array([inst.priority[q] if fits[q] else 0.0 for q in range(n_q)])])
    integrality = np.ones(n_p + n_q)
    res = solve_milp(c, matrix, upper, integrality, time_limit=time_limit)
    if res.x is None:  # no incumbent within the time limit: the empty plan is always feasible
        bound = -res.mip_dual_bound if getattr(res, "mip_dual_bound", None) is not None else sum(inst.priority)
        return [], bound
    y = res.x[n_p:]
    chosen = [q for q in range(n_q) if fits[q] and y[q] > 0.5]
    bound = -res.mip_dual_bound if getattr(res, "mip_dual_bound", None) is not None else -res.fun
    if res.status == 0:  # solved to optimality (within HiGHS's gap, which we set to ~0)
        bound = min(bound, -res.fun)
    return chosen, bound
