"""Exact replication planner: a proven optimum of the PPA problem (paper 000, Section IV-A).

Problem: choose ``P``, ``|P| <= R``, maximising OF with every task outside ``P`` failed: a
set-union knapsack over MC-trees, NP-hard. The paper's DP (Algorithm 1) enumerates plans over
MC-trees and could not finish on random topologies of 5-10 operators; we solve a mixed-integer
program with HiGHS instead (:mod:`ft_core.replication.alive_model`: alive fractions, counts for
tasks that full streams make interchangeable, exact products for joins).

Algorithm, under one wall-clock deadline (issue 19's contract: the call returns within
``time_limit`` plus a small constant, see :data:`DEADLINE_SLACK_S`):

1. the structure-aware plan (which is never worse than greedy's) is the incumbent;
2. the model is built (its products relaxed, still a valid bound, if building would eat more
   than half of the remaining time) and HiGHS starts from the incumbent (a MIP start), so its
   search prunes against it from the first node;
3. the better of HiGHS's plan and the incumbent is returned with HiGHS's dual bound, which stays
   a proven upper bound when the time limit stops the search: ``upper_bound - output_fidelity`` is
   the proven gap, and ``optimal`` is true only when it is at most :data:`TOLERANCE`.

Whatever stops early, the answer is at least the structure-aware plan, and an upper bound is only
claimed when one was proven (otherwise it is 1.0, the trivial bound).

Complexity: exponential in the worst case (it is NP-hard); the deadline bounds it. See
docs/benchmarks/replication.md for what it certifies within 60 s.

Example::

    >>> from ft_core.samples import load_sample
    >>> plan = exact_plan(load_sample("fig2-join"), 3)
    >>> plan.tasks, round(plan.output_fidelity, 4), plan.optimal
    (['O1[1]', 'O2[0]', 'O3[0]'], 0.4, True)
"""

from __future__ import annotations

import time

from ft_core.deadline import Deadline, check_time_limit
from ft_core.highs import solve_milp
from ft_core.replication.alive_model import DEFAULT_MAX_NONZEROS, TASK_PENALTY, OutOfTime, build_alive_model
from ft_core.replication.plan import ReplicationPlan, make_plan
from ft_core.replication.structure_aware import structure_aware_plan
from ft_core.topology.task_graph import TaskGraph

# A plan is called optimal when its OF is within this (absolute) of the proven upper bound; HiGHS is
# asked for a gap ten times smaller so that its own "optimal" always satisfies ours.
TOLERANCE = 1e-6
# What the time-limit contract allows past the limit: evaluating and returning the plan after the
# solver stops, HiGHS's own reaction time to its limit, and the CLI's start-up before its clock
# starts. Measured well below this (docs/benchmarks/replication.md, section 5).
DEADLINE_SLACK_S = 1.0
# Below this much time left there is no point in starting HiGHS.
_MIN_SOLVE_S = 0.05


def exact_plan(
    graph: TaskGraph,
    budget: int,
    *,
    time_limit: float | None = 60.0,
    max_nonzeros: int = DEFAULT_MAX_NONZEROS,
    started: float | None = None,
) -> ReplicationPlan:
    """A proven-optimal plan, or within ``time_limit`` seconds (counted from ``started``, default now)
    the best plan found, never worse than structure-aware's, with its proven upper bound."""
    deadline = Deadline(check_time_limit(time_limit), start=started)
    if budget >= graph.n:
        return make_plan(graph, "exact", budget, set(range(graph.n)), deadline.elapsed(), optimal=True, upper_bound=1.0)
    incumbent = {graph.index[t] for t in structure_aware_plan(graph, budget, deadline=deadline).tasks}
    clock = time.perf_counter()
    fallback = make_plan(graph, "exact", budget, incumbent, 0.0)
    # What is left to do once HiGHS stops: decode, evaluate and build the plan (measured on the incumbent).
    reserve = 2 * (time.perf_counter() - clock) + 0.05
    chosen, bound = incumbent, 1.0
    if deadline.remaining() - reserve > _MIN_SOLVE_S:
        chosen, bound = _solve(graph, budget, incumbent, deadline, reserve, max_nonzeros)
    plan = make_plan(graph, "exact", budget, chosen, 0.0) if chosen != incumbent else fallback
    if plan.output_fidelity < fallback.output_fidelity:
        plan = fallback
    bound = max(bound, plan.output_fidelity)
    return plan.model_copy(update={"optimal": bound - plan.output_fidelity <= TOLERANCE, "upper_bound": bound,
                                   "elapsed_s": deadline.elapsed()})

def _solve(graph: TaskGraph, budget: int, incumbent: set[int], deadline: Deadline, reserve: float,
           max_nonzeros: int) -> tuple[set[int], float]:
    """HiGHS's plan (or the incumbent) and its proven upper bound (1.0 when none was proven)."""
    left = None if deadline.seconds is None else deadline.remaining()
    relax_by = Deadline(None if left is None else left / 2)  # past this, products are relaxed
    give_up_by = Deadline(None if left is None else left - reserve - _MIN_SOLVE_S)
    try:
        model = build_alive_model(graph, budget, max_nonzeros=max_nonzeros, deadline=relax_by, hard_deadline=give_up_by)
    except OutOfTime:
        return incumbent, 1.0
    limit = None if left is None else deadline.remaining() - reserve
    if limit is not None and limit <= _MIN_SOLVE_S:
        return incumbent, 1.0
    res = solve_milp(model.cost, model.matrix, model.upper, model.integrality, time_limit=limit,
                     rel_gap=1e-9, abs_gap=TOLERANCE / 10, start=model.start(incumbent))
    chosen = model.decode(res.x) if res.x is not None else incumbent
    if res.status == 2 or res.mip_dual_bound is None:  # HiGHS failed or stopped before any bound
        return chosen, 1.0
    # The dual bound is valid even when the time limit stopped the search; the penalties lower it.
    return chosen, min(1.0, -res.mip_dual_bound + graph.n * TASK_PENALTY)
