"""BestDensity (paper 003, Algorithm 3 corrected): digest examples T1-T3 and the Theorem 5.1 bound."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ft_core.errors import InputError
from ft_core.recovery.best_density import best_density, best_density_order, profit_density
from ft_core.recovery.exact import exact_recovery
from ft_core.recovery.instances import InstanceSpec, random_instance
from ft_core.recovery.problem import load_problem, make_problem
from ft_core.samples import SAMPLES_DIR

T1 = make_problem({"Q1": (2, ["a"]), "Q2": (10, ["b"])}, {"a": 1.0, "b": 10.0})
T2 = make_problem({"Q1": (1, ["p0", "p1"]), "Q2": (1, ["p0", "p2"]), "Q3": (1, ["p0", "p3"]), "Q4": (1, ["p4"])},
                  {"p0": 4, "p1": 1, "p2": 1, "p3": 1, "p4": 3})


@pytest.fixture(scope="module")
def t3():
    """Digest T3 (Figure 2) with unit costs: the sample document scaled by 2.5 (0.4 -> 1.0)."""
    doc = load_problem(SAMPLES_DIR / "recovery-fig1.json")
    return make_problem({q: (doc.queries[q].priority, doc.queries[q].partitions) for q in doc.query_ids()},
                        dict.fromkeys(doc.partitions, 1.0))


def test_t1_singleton_seeds_escape_the_knapsack_trap():
    """T1: OPT = 10 (Q2); the literal Algorithm 3 returns 2, the corrected one 10."""
    assert best_density(T1, 10, seeds="literal").recovered_priority == 2
    assert best_density(T1, 10).recovered_priority == 10
    assert best_density(T1, 10, seeds="all").recovered_queries == ["Q2"]


def test_t2_profit_densities_and_conditional_cost():
    pd = profit_density(T2)
    assert pd["Q1"] == pytest.approx(3 / 7) and pd["Q2"] == pytest.approx(3 / 7) and pd["Q3"] == pytest.approx(3 / 7)
    assert pd["Q4"] == pytest.approx(1 / 3)
    after_q1 = profit_density(T2, {"p0", "p1"})  # conditional: p0 dropped out of Q2's sum, f unchanged
    assert after_q1["Q2"] == pytest.approx(1 / (1 / 1))


@pytest.mark.parametrize(("budget", "optimum"), [(3, 1), (4, 1), (5, 1), (6, 2), (7, 3), (8, 3), (9, 3), (10, 4), (11, 4)])
def test_t2_best_density_matches_the_optimum_for_every_budget(budget, optimum):
    assert best_density(T2, budget).recovered_priority == optimum


def test_t2_at_budget_8_prefers_the_three_sharing_queries():
    plan = best_density(T2, 8)
    assert plan.recovered_queries == ["Q1", "Q2", "Q3"] and plan.cost == 7


def test_t3_profit_densities(t3):
    pd = profit_density(t3)
    assert pd["Q1"] == pytest.approx(6 / 7) and pd["Q2"] == pytest.approx(6 / 7)
    assert pd["Q3"] == pytest.approx(6 / 23) and pd["Q4"] == pytest.approx(6 / 23)
    after = profit_density(t3, {"p3", "p5", "p7", "p9"})
    assert after["Q2"] == pytest.approx(3 / 2) and after["Q3"] == pytest.approx(3 / 8) and after["Q4"] == pytest.approx(3 / 8)
    assert t3.sharing() == {"p3": 3, "p4": 3, "p5": 4, "p6": 2, "p7": 4, "p8": 2, "p9": 3, "p10": 3, "p11": 1, "p12": 1}


def test_t3_greedy_order_breaks_the_q1_q2_tie_by_lower_id(t3):
    assert best_density_order(t3, 10) == ["Q1", "Q2", "Q3", "Q4"]
    assert best_density(t3, 4).recovered_queries == ["Q1"]


def test_ties_go_to_the_lower_query_id_whatever_the_document_order():
    problem = make_problem({"B": (1, ["x"]), "A": (1, ["y"])}, {"x": 1, "y": 1})
    assert best_density(problem, 1).recovered_queries == ["A"]


@st.composite
def sharing_problems(draw):
    n_p = draw(st.integers(2, 9))
    names = [f"p{i}" for i in range(n_p)]
    costs = draw(st.lists(st.integers(0, 9), min_size=n_p, max_size=n_p))
    queries = {f"Q{j}": (float(draw(st.integers(0, 10))),
                         draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True)))
               for j in range(draw(st.integers(1, 8)))}
    used = {p for _, ps in queries.values() for p in ps}
    problem = make_problem(queries, {p: float(c) for p, c in zip(names, costs) if p in used})
    return problem, draw(st.floats(0, 1)) * problem.total_cost()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sharing_problems())
def test_guarantee_against_exact(case):
    """Theorem 5.1 with singleton seeds: OPT >= BD >= (1 - e^(-1/d)) OPT, BD feasible."""
    problem, budget = case
    plan = best_density(problem, budget, seeds="all")
    opt = exact_recovery(problem, budget).recovered_priority
    d = problem.max_sharing()
    assert plan.full_enumeration and plan.guarantee == pytest.approx(1 - math.exp(-1 / d))
    assert plan.recovered_priority <= opt + 1e-9
    assert plan.recovered_priority >= (1 - math.exp(-1 / d)) * opt - 1e-9
    assert plan.cost <= budget + 1e-9


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([3, 6]), st.sampled_from([0.0, 0.5]), st.floats(0.05, 0.95))
def test_guarantee_on_paper_style_instances(seed, max_share, skew, share):
    problem = random_instance(InstanceSpec(queries=12, max_share=max_share, skew=skew), seed)
    budget = share * problem.total_cost()
    plan, opt = best_density(problem, budget), exact_recovery(problem, budget).recovered_priority
    assert plan.full_enumeration
    assert opt + 1e-9 >= plan.recovered_priority >= (1 - math.exp(-1 / problem.max_sharing())) * opt - 1e-9


def test_plan_is_whole_queries_and_counts_incidental_recoveries():
    problem = make_problem({"Q1": (5, ["a", "b"]), "Q2": (1, ["a"]), "Q3": (1, ["c"])}, {"a": 1, "b": 1, "c": 5})
    plan = best_density(problem, 2)
    assert plan.partitions == ["a", "b"] and plan.recovered_queries == ["Q1", "Q2"] and plan.recovered_priority == 6


def test_seed_count_is_within_the_paper_bound_plus_singletons():
    problem = random_instance(InstanceSpec(queries=10), seed=5)
    plan = best_density(problem, 0.5 * problem.total_cost(), seeds="all")
    m = len(problem.queries)
    assert plan.seeds <= m * (m - 1) // 2 + 1 + m


def test_auto_mode_limits_seeds_on_large_instances_and_says_so():
    problem = random_instance(InstanceSpec(queries=1000, max_share=6, skew=0.5), seed=2)
    plan = best_density(problem, 0.3 * problem.total_cost())
    assert plan.full_enumeration is False and 1 < plan.seeds < 1000
    assert plan.cost <= 0.3 * problem.total_cost() + 1e-6
    small = best_density(random_instance(InstanceSpec(queries=18), seed=2), 10)
    assert small.full_enumeration is True


def test_deterministic():
    problem = random_instance(InstanceSpec(queries=40, max_share=6, skew=0.2), seed=9)
    a, b = best_density(problem, 60), best_density(problem, 60)
    assert a.partitions == b.partitions and a.seeds == b.seeds


def test_zero_budget_and_bad_seed_mode():
    assert best_density(T2, 0).partitions == []
    with pytest.raises(InputError, match="seeds: unknown mode"):
        best_density(T2, 5, seeds="many")
    with pytest.raises(InputError, match="budget: must be >= 0"):
        best_density(T2, -0.5)
