"""Exact and greedy replication planners: brute-force optimality, budgets, time limits."""

from __future__ import annotations

from itertools import combinations

import pytest

from ft_core.errors import InputError
from ft_core.replication.exact import exact_plan
from ft_core.replication.fidelity import replicated_fidelity
from ft_core.replication.greedy import greedy_plan, single_failure_losses
from ft_core.replication.planners import plan_replication
from ft_core.replication.exact import TOLERANCE, exact_plan
from ft_core.samples import load_sample
from ft_core.topology.random_topology import RandomTopologySpec, random_topology
from ft_core.topology.task_graph import build_task_graph


def brute_force(graph, budget):
    k = min(budget, graph.n)
    return max(replicated_fidelity(graph, set(c)) for c in combinations(range(graph.n), k))


def small_random(seed):
    spec = RandomTopologySpec(operators=(3, 5), parallelism=(1, 4), workload="zipf", zipf_s=1.0,
                              shape=("structured", "full")[seed % 2], join_fraction=(0.0, 0.5)[(seed // 2) % 2], seed=seed)
    return build_task_graph(random_topology(spec))


@pytest.mark.parametrize("seed", range(16))
def test_exact_equals_brute_force_on_small_random_topologies(seed):
    g = small_random(seed)
    if g.n > 14:
        g = small_random(seed + 100)
    for budget in range(0, min(g.n, 14) + 1, 2):
        plan = exact_plan(g, budget)
        assert plan.optimal
        assert len(plan.tasks) <= budget
        assert plan.output_fidelity == pytest.approx(brute_force(g, budget), abs=1e-6)


@pytest.mark.parametrize("name", ["fig2-join", "fig1", "q1-topk", "fig6-recovery"])
def test_exact_is_at_least_greedy_and_respects_budget(name):
    g = load_sample(name)
    for budget in range(g.n + 1):
        exact, greedy = exact_plan(g, budget), greedy_plan(g, budget)
        assert len(exact.tasks) <= budget and len(greedy.tasks) <= budget
        assert exact.output_fidelity >= greedy.output_fidelity - 1e-9


def test_fig6_needs_a_whole_chain():
    g = load_sample("fig6-recovery")
    # One root-to-leaf chain has 5 tasks and keeps 1/16 of the output; 4 tasks keep nothing.
    assert exact_plan(g, 4).output_fidelity == 0.0
    plan = exact_plan(g, 5)
    assert plan.output_fidelity == pytest.approx(1 / 16) and plan.optimal


def test_greedy_ranks_by_single_failure_loss():
    g = load_sample("fig2-join")
    losses = single_failure_losses(g)
    assert losses[g.index["O3[0]"]] == pytest.approx(1.0)
    assert losses[g.index["O1[1]"]] == pytest.approx(2 / 3)  # join: 1 - (1 - 2/3)
    assert losses[g.index["O2[0]"]] == pytest.approx(3 / 5)
    assert greedy_plan(g, 2).tasks == ["O1[1]", "O3[0]"]


def test_time_limit_returns_a_plan_and_a_bound():
    spec = RandomTopologySpec(operators=(10, 10), parallelism=(8, 16), shape="structured", workload="zipf",
                              zipf_s=1.0, join_fraction=0.0, seed=7)
    g = build_task_graph(random_topology(spec))
    plan = exact_plan(g, g.n // 5, time_limit=0.05)
    assert len(plan.tasks) <= g.n // 5
    assert plan.upper_bound is not None and plan.upper_bound >= plan.output_fidelity - 1e-9
    assert plan.optimal == (plan.upper_bound - plan.output_fidelity <= TOLERANCE)


def test_plan_records_its_input():
    g = load_sample("q1-topk")
    a, b = plan_replication(g, 4, "greedy"), plan_replication(g, 4, "greedy")
    assert a.input_hash == b.input_hash and a.input_hash != plan_replication(g, 5, "greedy").input_hash


@pytest.mark.parametrize("budget, algorithm, needle", [(-1, "greedy", "budget"), (2, "dp", "unknown replication planner")])
def test_bad_arguments(budget, algorithm, needle):
    with pytest.raises(InputError, match=needle):
        plan_replication(load_sample("fig1"), budget, algorithm)
