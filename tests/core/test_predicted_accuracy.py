"""Predicted tentative accuracy, the pure part (issue 15): the estimate's summary and spread, the
candidate plans of ``--objective accuracy`` and the choice among scored candidates."""

from __future__ import annotations

import pytest

from ft_core.replication.accuracy_candidates import accuracy_candidates, choose_by_accuracy, prune_to_budget
from ft_core.replication.fidelity import replicated_fidelity
from ft_core.replication.planners import plan_replication
from ft_core.replication.predicted_accuracy import summarize
from ft_core.samples import load_sample


def test_summary_gives_mean_spread_and_range_over_windows():
    est = summarize(["b", "a"], [0.5, 1.0, 0.75, 0.75], "four windows")
    assert est.tasks == ["a", "b"] and est.windows == 4 and est.per_window == [0.5, 1.0, 0.75, 0.75]
    assert (est.mean, est.min, est.max) == (0.75, 0.5, 1.0)
    assert est.stdev == pytest.approx(0.1767767, abs=1e-6)
    assert est.spread() == "0.750 ± 0.177 (0.50-1.00, 4 windows)"


def test_no_window_means_no_estimate_and_covers_nothing():
    est = summarize(["a"], [], "nothing closed")
    assert est.mean is None and est.windows == 0 and est.spread() == "-"
    assert not est.covers(0.0)


def test_covers_is_two_standard_deviations_clipped_to_the_observed_range():
    est = summarize([], [0.6, 0.8, 1.0, 0.8], "s")  # mean 0.8, sd 0.141
    assert est.covers(0.8) and est.covers(0.6) and est.covers(1.0)
    assert not est.covers(0.55)  # below every window seen
    tight = summarize([], [0.8, 0.8, 0.8, 0.9], "s")  # mean 0.825, sd 0.043
    assert tight.covers(0.85) and not tight.covers(0.95)


@pytest.mark.parametrize("sample,budget", [("q1-topk", 4), ("q1-topk", 6), ("q2-incidents", 6), ("fig1", 5)])
def test_candidates_fit_the_budget_start_with_the_of_optimum_and_all_keep_output(sample, budget):
    graph = load_sample(sample)
    candidates = accuracy_candidates(graph, budget)
    best_of = plan_replication(graph, budget, "exact")
    assert candidates[0] == best_of.tasks  # the paper's objective is always the first candidate
    assert len({tuple(c) for c in candidates}) == len(candidates) <= 8
    for tasks in candidates:
        assert len(tasks) <= budget
        assert replicated_fidelity(graph, [graph.index[t] for t in tasks]) > 0  # completes an MC-tree
    fidelity = [replicated_fidelity(graph, [graph.index[t] for t in c]) for c in candidates]
    assert fidelity == sorted(fidelity, reverse=True)


def test_swap_neighbourhood_offers_other_key_groups_than_the_of_optimum():
    graph = load_sample("q1-topk")  # 8 O1 tasks -> 4 O2 tasks -> O3: an MC-tree is O1[i], O2[i // 2], O3[0]
    candidates = accuracy_candidates(graph, 4)
    groups = {t for c in candidates for t in c if t.startswith("O2")}
    assert len(groups) >= 2  # not only the O2 group the OF optimum uses


def test_pruning_keeps_only_complete_trees_within_budget():
    graph = load_sample("q1-topk")
    ids = {t: graph.index[t] for t in graph.task_ids}
    kept = prune_to_budget(graph, {ids["O1[0]"], ids["O1[1]"], ids["O2[0]"], ids["O3[0]"], ids["O2[3]"]}, 4)
    assert {graph.task_ids[i] for i in kept} == {"O1[0]", "O1[1]", "O2[0]", "O3[0]"}
    assert prune_to_budget(graph, {ids["O2[0]"], ids["O2[1]"]}, 4) == set()  # no tree: nothing worth a replica


def test_choice_takes_the_best_accuracy_then_of_then_fewer_tasks():
    a = summarize(["x", "y"], [0.9, 0.9], "s")
    b = summarize(["x"], [0.9, 0.9], "s")
    c = summarize(["z"], [0.95, 0.85], "s")
    none = summarize(["w"], [], "s")
    assert choose_by_accuracy([a, c], [0.5, 0.4]) == 0  # equal accuracy: higher OF
    assert choose_by_accuracy([a, b], [0.5, 0.5]) == 1  # equal accuracy and OF: fewer tasks
    assert choose_by_accuracy([none, summarize(["v"], [0.1], "s")], [0.9, 0.1]) == 1  # no estimate ranks last
    assert choose_by_accuracy([summarize(["v"], [0.5], "s"), summarize(["u"], [0.6], "s")], [0.9, 0.1]) == 1
