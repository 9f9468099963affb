"""Issue 19: the exact replication planner's time-limit contract, warm start and exact formulation."""

from __future__ import annotations

import math
import time
from itertools import combinations

import pytest

from ft_core.errors import InputError
from ft_core.highs import solve_milp
from ft_core.replication.alive_model import build_alive_model
from ft_core.replication.budget_bound import Atom, value_caps
from ft_core.replication.exact import DEADLINE_SLACK_S, TOLERANCE, exact_plan
from ft_core.replication.fidelity import replicated_fidelity
from ft_core.replication.greedy import _cone_loss, single_failure_losses
from ft_core.replication.interchangeable import interchangeable_operators, operator_level_streams
from ft_core.replication.planners import plan_replication
from ft_core.replication.structure_aware import structure_aware_plan
from ft_core.topology.document import parse_topology
from ft_core.topology.random_topology import RandomTopologySpec, random_topology
from ft_core.topology.task_graph import build_task_graph

JOIN_HEAVY = RandomTopologySpec(operators=(10, 10), parallelism=(2, 8), shape="mixed", fan_in=0.5, join_fraction=0.5)


def join_heavy(seed):
    return build_task_graph(random_topology(RandomTopologySpec(**{**JOIN_HEAVY.__dict__, "seed": seed})))


def small_mixed(seed):
    spec = RandomTopologySpec(operators=(3, 6), parallelism=(1, 4), shape="mixed", fan_in=0.5, workload=("uniform", "zipf")[seed % 2],
                              zipf_s=1.0, join_fraction=(0.0, 0.5)[(seed // 2) % 2], seed=seed)
    return build_task_graph(random_topology(spec))


def brute_force(graph, budget):
    k = min(budget, graph.n)
    return max(replicated_fidelity(graph, set(c)) for c in combinations(range(graph.n), k))


def test_a_hard_instance_returns_within_its_time_limit_with_a_gap():
    """Join-heavy seed 0 at half the tasks: HiGHS cannot close the gap in minutes (docs/benchmarks/replication.md)."""
    g = join_heavy(0)
    budget = g.n // 2
    started = time.perf_counter()
    plan = exact_plan(g, budget, time_limit=2.0, started=started)
    elapsed = time.perf_counter() - started
    assert elapsed <= 2.0 + DEADLINE_SLACK_S
    assert not plan.optimal and plan.gap > TOLERANCE
    assert plan.upper_bound >= plan.output_fidelity and len(plan.tasks) <= budget


@pytest.mark.parametrize("seed", [1, 2, 9])
def test_exact_is_never_below_structure_aware_when_it_cannot_prove(seed):
    g = join_heavy(seed)
    budget = g.n // 2
    sa = structure_aware_plan(g, budget)
    plan = exact_plan(g, budget, time_limit=1.0)
    assert not plan.optimal
    assert plan.output_fidelity >= sa.output_fidelity - 1e-12
    assert plan.upper_bound >= plan.output_fidelity


@pytest.mark.parametrize("seed", range(12))
def test_counts_and_products_are_exact_on_small_spark_like_topologies(seed):
    g = small_mixed(seed)
    if g.n > 13:
        g = small_mixed(seed + 50)
    for budget in range(1, min(g.n, 13), 3):
        plan = exact_plan(g, budget, time_limit=30)
        assert plan.optimal and len(plan.tasks) <= budget
        assert plan.output_fidelity == pytest.approx(brute_force(g, budget), abs=1e-6)


@pytest.mark.parametrize("seed", [3, 7])
def test_a_relaxed_model_still_bounds_the_optimum(seed):
    g = small_mixed(seed)
    budget = g.n // 2
    model = build_alive_model(g, budget, max_nonzeros=0)  # every product relaxed to its smaller factor
    res = solve_milp(model.cost, model.matrix, model.upper, model.integrality, time_limit=30)
    assert -res.fun >= brute_force(g, budget) - 1e-6
    assert replicated_fidelity(g, model.decode(res.x)) <= -res.fun + 1e-6


def test_budget_caps_are_the_best_value_each_budget_buys_on_chains_and_disjoint_joins():
    quarters = [(k, k / 4) for k in range(1, 5)]
    chain = [Atom(quarters, [], 0b1), Atom(quarters, [{0: 1.0}], 0b11), Atom(quarters, [{1: 1.0}], 0b111)]
    caps = value_caps(chain, 12)
    assert [round(float(caps[2][b]), 6) for b in (2, 3, 6, 12)] == [0.0, 0.015625, 0.125, 1.0]
    halves = [(1, 0.5), (2, 1.0)]  # two sources of two tasks joined by one task: 1 + kA + kB replicas
    join = [Atom(halves, [], 0b1), Atom(halves, [], 0b10), Atom([(1, 1.0)], [{0: 1.0}, {1: 1.0}], 0b111)]
    best = {b: max((ka / 2) * (kb / 2) for ka in range(3) for kb in range(3) if 1 + ka + kb <= b) for b in range(1, 6)}
    assert [float(v) for v in value_caps(join, 5)[2][1:]] == pytest.approx([best[b] for b in range(1, 6)])


def test_tasks_behind_full_streams_are_interchangeable_unless_explicit_rates_differ():
    doc = {"operators": [{"name": "A", "parallelism": 3}, {"name": "B", "parallelism": 2}, {"name": "C", "parallelism": 2}],
           "streams": [{"from": "A", "to": "B", "partitioning": "full"}, {"from": "B", "to": "C", "partitioning": "one_to_one"}]}
    g = build_task_graph(parse_topology(doc))
    assert set(operator_level_streams(g)) == {("A", "B")}
    assert set(interchangeable_operators(g)) == {"A"}  # B feeds C task by task; C reads B task by task
    doc["substreams"] = [{"from": "A[0]", "to": "B[0]", "rate": 5.0}, {"from": "A[1]", "to": "B[0]", "rate": 1.0},
                         {"from": "A[0]", "to": "B[1]", "rate": 1.0}, {"from": "A[1]", "to": "B[1]", "rate": 5.0}]
    g = build_task_graph(parse_topology(doc))
    assert operator_level_streams(g) == {} and interchangeable_operators(g) == {}


@pytest.mark.parametrize("seed", range(8))
def test_fast_single_failure_losses_equal_the_cone_evaluation(seed):
    g = small_mixed(seed) if seed % 2 else join_heavy(seed)
    sinks = g.sinks
    total = sum(g.rate[s] for s in sinks)
    weight = {s: (g.rate[s] / total if total > 0 else 1 / len(sinks)) for s in sinks}
    assert single_failure_losses(g) == pytest.approx([_cone_loss(g, i, weight) for i in range(g.n)], abs=1e-12)


@pytest.mark.parametrize("bad", [math.nan, math.inf, 0.0, -1.0])
def test_nonsense_time_limits_are_input_errors(bad):
    with pytest.raises(InputError, match="time_limit"):
        plan_replication(join_heavy(0), 3, "exact", time_limit=bad)


@pytest.mark.parametrize("bad", ["nan", "inf"])
def test_the_cli_rejects_nonsense_time_limits_in_one_line(cli, samples, bad):
    res = cli("plan", "replication", samples / "fig1.json", "-R", "3", "--algorithm", "exact", "--time-limit", bad)
    assert res.code == 2 and res.out == ""
    assert "--time-limit" in res.err and len(res.err.strip().splitlines()) == 1 and "optimal" not in res.err
