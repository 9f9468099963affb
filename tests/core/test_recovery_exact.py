"""The exact recovery planner (MILP with HiGHS): optimum, monotonicity, time limit, determinism."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ft_core.recovery.best_density import best_density
from ft_core.recovery.exact import FALLBACK_WORK_LIMIT, exact_recovery
from ft_core.recovery.instances import InstanceSpec, random_instance
from ft_core.recovery.problem import RecoveryProblem, make_problem

T2 = make_problem({"Q1": (1, ["p0", "p1"]), "Q2": (1, ["p0", "p2"]), "Q3": (1, ["p0", "p3"]), "Q4": (1, ["p4"])},
                  {"p0": 4, "p1": 1, "p2": 1, "p3": 1, "p4": 3})


@st.composite
def small_problems(draw, max_partitions: int = 7, max_queries: int = 6):
    n_p = draw(st.integers(1, max_partitions))
    costs = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 5.0]), min_size=n_p, max_size=n_p))
    names = [f"p{i}" for i in range(n_p)]
    n_q = draw(st.integers(1, max_queries))
    queries = {}
    for j in range(n_q):
        parts = draw(st.lists(st.sampled_from(names), min_size=1, max_size=min(4, n_p), unique=True))
        queries[f"Q{j}"] = (float(draw(st.integers(0, 10))), parts)
    used = {p for _, ps in queries.values() for p in ps}
    problem = make_problem(queries, {p: c for p, c in zip(names, costs) if p in used})
    budget = draw(st.floats(0, 1.1)) * problem.total_cost()
    return problem, budget


def brute_force(problem: RecoveryProblem, budget: float) -> float:
    best = 0.0
    for k in range(len(problem.partitions) + 1):
        for subset in itertools.combinations(problem.partitions, k):
            if sum(problem.cost[p] for p in subset) <= budget + 1e-9:
                best = max(best, sum(problem.queries[q].priority for q in problem.recovered_by(subset)))
    return best


@pytest.mark.parametrize(("budget", "optimum"), [(2, 0), (3, 1), (5, 1), (6, 2), (7, 3), (8, 3), (9, 3), (10, 4), (11, 4)])
def test_t2_optimal_priority_by_budget(budget, optimum):
    """Digest T2: optimal priority 1 for R 3-5, 2 for 6, 3 for 7-9, 4 for 10-11."""
    plan = exact_recovery(T2, budget)
    assert plan.recovered_priority == optimum and plan.optimal and plan.gap == 0


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_exact_matches_brute_force_and_is_feasible(case):
    problem, budget = case
    plan = exact_recovery(problem, budget)
    assert plan.optimal
    assert plan.recovered_priority == pytest.approx(brute_force(problem, budget))
    assert plan.cost <= budget + 1e-9
    assert set(plan.recovered_queries) == set(problem.recovered_by(plan.partitions))


@settings(max_examples=40, deadline=None)
@given(small_problems(), st.floats(0, 1), st.floats(0, 1))
def test_exact_is_monotone_in_the_budget(case, a, b):
    problem, _ = case
    lo, hi = sorted((a * problem.total_cost(), b * problem.total_cost()))
    assert exact_recovery(problem, lo).recovered_priority <= exact_recovery(problem, hi).recovered_priority + 1e-9


def test_plan_restarts_only_partitions_of_recovered_queries():
    problem = make_problem({"Q1": (5, ["a"]), "Q2": (1, ["b", "c"])}, {"a": 1, "b": 0, "c": 5})
    plan = exact_recovery(problem, 1)
    assert plan.partitions == ["a"] and plan.recovered_queries == ["Q1"]


def test_budget_covering_everything_recovers_all():
    plan = exact_recovery(T2, 100)
    assert plan.recovered_queries == ["Q1", "Q2", "Q3", "Q4"] and plan.optimal


def test_time_limit_returns_best_plan_with_its_gap_instead_of_hanging():
    """3,000 queries take HiGHS seconds; stopped after 0.01 s it returns a plan, not optimal, with its gap."""
    problem = random_instance(InstanceSpec(queries=3000, max_share=6, skew=0.5), seed=3)
    budget = 0.3 * problem.total_cost()
    plan = exact_recovery(problem, budget, time_limit=0.01)
    assert not plan.optimal and 0 < plan.gap < 1
    assert plan.upper_bound >= plan.recovered_priority > 0
    assert plan.cost <= budget + 1e-6
    assert plan.recovered_priority >= best_density(problem, budget, work_limit=FALLBACK_WORK_LIMIT).recovered_priority


def test_exact_is_deterministic():
    problem = random_instance(InstanceSpec(queries=60, max_share=6, skew=0.5), seed=11)
    budget = 0.4 * problem.total_cost()
    first, second = exact_recovery(problem, budget), exact_recovery(problem, budget)
    assert first.partitions == second.partitions and first.recovered_priority == second.recovered_priority


def test_negative_budget_is_input_error():
    from ft_core.errors import InputError

    with pytest.raises(InputError, match="budget: must be >= 0"):
        exact_recovery(T2, -1)
