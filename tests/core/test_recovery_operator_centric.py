"""The operator-centric baseline (paper 003, Sections 2.2.3 and 7.3)."""

from __future__ import annotations

from ft_core.recovery.operator_centric import operator_centric
from ft_core.recovery.problem import load_problem, make_problem
from ft_core.samples import SAMPLES_DIR


def test_figure_2_first_node_recovers_the_most_upstream_partitions():
    fig2 = load_problem(SAMPLES_DIR / "recovery-fig1.json")
    plan = operator_centric(fig2, 0.8)
    assert plan.partitions == ["p3", "p4"] and plan.recovered_queries == [] and plan.algorithm == "operator-centric"
    assert operator_centric(fig2, 3.2).recovered_queries == ["Q1", "Q2"]


def test_walks_levels_upstream_first_and_cheapest_first_within_a_level():
    problem = make_problem({"Q1": (1, ["u1", "o1"]), "Q2": (9, ["u2", "o2"])},
                           {"u1": 3, "u2": 1, "o1": 1, "o2": 1}, level={"u1": 0, "u2": 0, "o1": 1, "o2": 1})
    plan = operator_centric(problem, 2)
    assert plan.partitions == ["u2", "o1"] and plan.recovered_queries == []  # ignores queries: o1 before o2


def test_skips_a_partition_that_does_not_fit_and_continues():
    problem = make_problem({"Q1": (1, ["a"]), "Q2": (1, ["b"]), "Q3": (1, ["c"])}, {"a": 1, "b": 5, "c": 1})
    plan = operator_centric(problem, 2)
    assert plan.partitions == ["a", "c"] and plan.cost == 2 and plan.recovered_queries == ["Q1", "Q3"]


def test_topology_levels_come_from_the_task_graph():
    problem = load_problem(SAMPLES_DIR / "recovery-fig1-topology.json")
    plan = operator_centric(problem, 0.5)
    assert plan.partitions == ["O2[0]", "O2[1]"]  # level 0 (sources) first, cheapest (0.2) before O1[0] (0.3)
