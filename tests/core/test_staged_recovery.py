"""Staged recovery (paper 003, Section 4.4): Figure 2 schedules (T3), placement (T8), activation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ft_core.errors import InputError
from ft_core.recovery.instances import InstanceSpec, random_instance
from ft_core.recovery.problem import load_problem, make_problem
from ft_core.recovery.staged import place, plan_stages
from ft_core.samples import SAMPLES_DIR

FIG2 = load_problem(SAMPLES_DIR / "recovery-fig1.json")
FIVE_NODES = [1.0] * 5  # each node: 0.8 usable under the cap = two partitions of 0.4


def _table(schedule):
    return [(set(s.partitions), s.recovered_queries) for s in schedule.stages[1:]]


def test_t3_order_then_pack_reproduces_figure_2_query_centric_row():
    plan = plan_stages(FIG2, 0.0, FIVE_NODES)
    assert [s.partitions for s in plan.stages[1:]] == [["p3", "p5"], ["p7", "p9"], ["p4", "p10"], ["p6", "p8"], ["p11", "p12"]]
    assert [s.recovered_queries for s in plan.stages[1:]] == [[], ["Q1"], ["Q2"], [], ["Q3", "Q4"]]
    assert plan.query_order == ["Q1", "Q2", "Q3", "Q4"]
    assert all(set(s.placement.values()) == {f"n{k}"} for k, s in enumerate(plan.stages[1:], 1))


def test_t3_operator_centric_policy_reproduces_figure_2_operator_centric_row():
    plan = plan_stages(FIG2, 0.0, FIVE_NODES, policy="operator-centric")
    assert _table(plan) == [({"p3", "p4"}, []), ({"p5", "p6"}, []), ({"p7", "p8"}, []),
                            ({"p9", "p10"}, ["Q1", "Q2"]), ({"p11", "p12"}, ["Q3", "Q4"])]


def test_t3_literal_per_stage_best_density_idles_capacity():
    plan = plan_stages(FIG2, 0.0, FIVE_NODES, policy="per-stage")
    assert _table(plan) == [(set(), []), ({"p3", "p5", "p7", "p9"}, ["Q1"]), ({"p4", "p10"}, ["Q2"]),
                            (set(), []), ({"p6", "p8", "p11", "p12"}, ["Q3", "Q4"])]
    assert plan.stages[2].available == pytest.approx(1.6)  # N1's unused capacity carried over


def test_t8_placement_goes_to_the_node_with_most_free_capacity():
    """T8: nodes at 30%, 50%, 0% under an 80% cap; two 25% partitions both go to the new node."""
    free = {"n30": 0.5, "n50": 0.3, "new": 0.8}
    placement, unplaced = place([("a", 0.25), ("b", 0.25)], free)
    assert placement == {"a": "new", "b": "new"} and unplaced == []
    assert free == pytest.approx({"n30": 0.5, "n50": 0.3, "new": 0.3})
    assert place([("c", 0.6)], free) == ({}, ["c"])


def test_survivor_capacity_per_node_and_t8_in_a_schedule():
    problem = make_problem({"Q1": (1, ["a"]), "Q2": (1, ["b"])}, {"a": 0.25, "b": 0.25})
    plan = plan_stages(problem, [0.5, 0.3], [])
    assert plan.stages[0].placement == {"a": "s1", "b": "s2"}  # after a, s2 (0.3) has more room than s1 (0.25)
    plan = plan_stages(problem, 0.0, [1.0])
    assert plan.stages[1].placement == {"a": "n1", "b": "n1"}


def test_only_the_first_stage_rolls_back_in_incremental_mode():
    plan = plan_stages(FIG2, 0.8, FIVE_NODES, failures=5)
    assert plan.mode == "incremental" and plan.activation_threshold == 2
    assert [s.global_rollback for s in plan.stages] == [True] + [False] * 5


def test_below_two_failures_recovery_is_blocking_until_the_last_node():
    plan = plan_stages(FIG2, 0.8, FIVE_NODES, failures=1)
    assert plan.mode == "blocking" and plan.failures_since_checkpoint == 1
    assert all(not s.partitions for s in plan.stages[:-1])
    last = plan.stages[-1]
    assert last.global_rollback and len(last.partitions) == 10 and last.recovered_queries == ["Q1", "Q2", "Q3", "Q4"]
    assert plan_stages(FIG2, 0.8, FIVE_NODES, failures=2).mode == "incremental"


def test_partitions_that_fit_nowhere_are_reported():
    problem = make_problem({"Q1": (1, ["big"]), "Q2": (1, ["small"])}, {"big": 0.9, "small": 0.1})
    plan = plan_stages(problem, 0.0, [1.0])
    assert plan.unscheduled_partitions == ["big"] and plan.unrecovered_queries == ["Q1"] and plan.recovered_queries == ["Q2"]


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 1000), st.sampled_from(["order-then-pack", "per-stage", "operator-centric"]),
       st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=1, max_size=6), st.floats(0, 0.5))
def test_schedules_respect_node_caps_and_count_queries_cumulatively(seed, policy, arrivals, c0):
    problem = random_instance(InstanceSpec(queries=10, cost=(1, 40)), seed)
    problem = make_problem({q: (v.priority, v.partitions) for q, v in problem.queries.items()},
                           {p: c / 100 for p, c in problem.cost.items()}, level=problem.level)
    plan = plan_stages(problem, c0, arrivals, policy=policy)
    load: dict[str, float] = {}
    started: set[str] = set()
    for stage in plan.stages:
        assert not started & set(stage.partitions)
        started |= set(stage.partitions)
        for p, node in stage.placement.items():
            load[node] = load.get(node, 0.0) + problem.cost[p]
        assert set(stage.recovered_queries) == set(problem.recovered_by(started)) - set(
            q for s in plan.stages[: stage.stage] for q in s.recovered_queries)
    for node, used in load.items():
        assert used <= plan.nodes[node] + 1e-9
    assert set(plan.unscheduled_partitions) == set(problem.partitions) - started


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 1000), st.lists(st.sampled_from([0.5, 1.0]), min_size=1, max_size=5))
def test_order_then_pack_never_idles_capacity_that_fits_waiting_work(seed, arrivals):
    problem = random_instance(InstanceSpec(queries=8, cost=(5, 40)), seed)
    problem = make_problem({q: (v.priority, v.partitions) for q, v in problem.queries.items()},
                           {p: c / 100 for p, c in problem.cost.items()})
    plan = plan_stages(problem, 0.0, arrivals)
    free = dict.fromkeys(plan.nodes, 0.0)
    started: set[str] = set()
    for stage in plan.stages:
        for node, usable in plan.nodes.items():
            if (stage.stage == 0 and node == "survivors") or node == f"n{stage.stage}":
                free[node] = usable
        for p, node in stage.placement.items():
            free[node] -= problem.cost[p]
        started |= set(stage.partitions)
        waiting = [p for p in problem.partitions if p not in started]
        assert all(problem.cost[p] > max(free.values()) + 1e-9 for p in waiting)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"policy": "fastest"}, "policy: unknown"),
    ({"node_cap": 1.5}, "node_cap: must be a fraction"),
    ({"node_cap": 0}, "node_cap: must be a fraction"),
    ({"failures": -1}, "failures: must be an integer"),
])
def test_bad_arguments_raise_input_error(kwargs, message):
    with pytest.raises(InputError, match=message):
        plan_stages(FIG2, 0.0, FIVE_NODES, **kwargs)
    with pytest.raises(InputError, match=r"arrivals\[1\]: must be >= 0"):
        plan_stages(FIG2, 0.0, [1.0, -1.0])
    with pytest.raises(InputError, match="capacity: must be >= 0"):
        plan_stages(FIG2, -0.1, [])
