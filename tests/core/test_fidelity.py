"""Eq. 1-4 of paper 000 on the Fig. 2 example and hand-computed cases; IC; OF properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ft_core.replication.fidelity import (
    fidelity_report,
    information_loss,
    internal_completeness,
    output_fidelity,
    replicated_fidelity,
)
from ft_core.samples import load_sample
from ft_core.topology.document import parse_topology
from ft_core.topology.random_topology import RandomTopologySpec, random_topology
from ft_core.topology.task_graph import build_task_graph


def test_fig2_join_loses_two_fifths():
    g = load_sample("fig2-join")
    il = information_loss(g, {g.index["O2[1]"]})
    # IL_in(O1) = 0, IL_in(O2) = 2/(3+2); join: 1 - (1 - 0)(1 - 2/5) = 2/5
    assert il[g.index["O3[0]"]] == pytest.approx(2 / 5)


def test_fig2_independent_loses_one_quarter():
    g = load_sample("fig2-independent")
    il = information_loss(g, {g.index["O2[1]"]})
    # (3 * 0 + 5 * 2/5) / (3 + 5) = 1/4
    assert il[g.index["O3[0]"]] == pytest.approx(1 / 4)


def test_hand_computed_chain_with_weighted_sinks():
    # S[0] (rate 3), S[1] (rate 1) -> merge -> M[0]; M -> split -> K[0], K[1] with rates 1 and 3.
    g = build_task_graph(parse_topology({
        "operators": [{"name": "S", "parallelism": 2}, {"name": "M", "parallelism": 1}, {"name": "K", "parallelism": 2}],
        "streams": [{"from": "S", "to": "M", "partitioning": "merge"}, {"from": "M", "to": "K", "partitioning": "split"}],
        "tasks": {"S[0]": {"rate": 3}, "S[1]": {"rate": 1}, "K[0]": {"rate": 1}, "K[1]": {"rate": 3}},
    }))
    il = information_loss(g, {g.index["S[1]"]})
    assert il[g.index["M[0]"]] == pytest.approx(0.25)
    assert il[g.index["K[0]"]] == pytest.approx(0.25) and il[g.index["K[1]"]] == pytest.approx(0.25)
    assert output_fidelity(g, {g.index["S[1]"]}) == pytest.approx(0.75)
    # K[1] down: Eq. 4 weighs sinks by rate, 1 - 3/4 * 1 = 0.25
    assert output_fidelity(g, {g.index["K[1]"]}) == pytest.approx(0.25)


def test_join_of_three_streams_multiplies_survival():
    g = build_task_graph(parse_topology({
        "operators": [{"name": "A", "parallelism": 2}, {"name": "B", "parallelism": 2}, {"name": "C", "parallelism": 2},
                      {"name": "J", "parallelism": 1, "input_model": "correlated"}],
        "streams": [{"from": x, "to": "J", "partitioning": "merge"} for x in "ABC"],
    }))
    failed = {g.index["A[0]"], g.index["B[1]"]}
    assert output_fidelity(g, failed) == pytest.approx(0.5 * 0.5 * 1.0)


def test_internal_completeness_ignores_join_correlation():
    g = load_sample("fig2-join")
    failed = {g.index["O2[1]"]}
    # 16 tuples expected (8 at the sources, 8 into t31); 2 lost at t22 and 2 more at t31
    assert internal_completeness(g, failed) == pytest.approx(12 / 16)
    assert internal_completeness(g, set()) == 1.0
    assert output_fidelity(g, failed) < internal_completeness(g, failed)


def test_report_matches_the_functions():
    g = load_sample("q2-incidents")
    failed = {g.index["O1[0]"], g.index["O2[3]"]}
    rep = fidelity_report(g, failed)
    assert rep.output_fidelity == pytest.approx(output_fidelity(g, failed))
    assert rep.information_loss["O1[0]"] == 1.0 and rep.information_loss["O1[1]"] == 0.0


def test_no_failure_is_full_fidelity_and_total_failure_is_zero():
    g = load_sample("q1-topk")
    assert output_fidelity(g, set()) == 1.0
    assert replicated_fidelity(g, set()) == 0.0
    assert replicated_fidelity(g, range(g.n)) == 1.0


specs = st.builds(
    RandomTopologySpec,
    operators=st.just((3, 6)),
    parallelism=st.sampled_from([(1, 4), (2, 8)]),
    shape=st.sampled_from(["structured", "full"]),
    workload=st.sampled_from(["uniform", "zipf"]),
    zipf_s=st.just(0.8),
    join_fraction=st.sampled_from([0.0, 0.5]),
    seed=st.integers(0, 10_000),
)


@settings(max_examples=60, deadline=None)
@given(spec=specs, data=st.data())
def test_of_is_in_unit_interval_and_monotone_in_the_plan(spec, data):
    g = build_task_graph(random_topology(spec))
    plan = data.draw(st.sets(st.integers(0, g.n - 1)))
    extra = data.draw(st.integers(0, g.n - 1))
    of = replicated_fidelity(g, plan)
    assert 0.0 <= of <= 1.0 + 1e-12
    assert replicated_fidelity(g, plan | {extra}) >= of - 1e-12
