"""Issue 37, budget advice: ``ftops plan budget``, ``plan replication --budget auto``, and a plan of OF 0 that
says why (the smallest MC-tree, computed from the topology)."""

from __future__ import annotations

import json
import random

import pytest

from ft_core.replication.budget_advice import advise_budget, cpu_share, smallest_budget_plan, task_work
from ft_core.replication.fidelity import replicated_fidelity
from ft_core.replication.mctree import completes_mc_tree, count_mc_trees, iter_mc_trees, smallest_mc_tree
from ft_core.replication.planners import plan_replication
from ft_core.samples import load_sample
from ft_core.topology.document import parse_topology
from ft_core.topology.random_topology import RandomTopologySpec, random_topology
from ft_core.topology.task_graph import build_task_graph

# small random topologies with joins whose inputs descend from one operator (their trees may share tasks), few
# enough trees to enumerate for the reference
SPECS = [spec for shape in ("structured", "mixed", "full") for seed in range(12)
         if count_mc_trees(build_task_graph(random_topology(spec := RandomTopologySpec(
             operators=(3, 6), parallelism=(1, 4), shape=shape, join_fraction=0.5, fan_in=0.6, seed=seed)))) <= 20_000]


def _names(graph, tasks) -> list[str]:
    return [graph.task_ids[i] for i in sorted(tasks)]


def test_the_smallest_mc_tree_of_the_samples():
    q1, fig1, fig6 = load_sample("q1-topk"), load_sample("fig1"), load_sample("fig6-recovery")
    assert smallest_mc_tree(q1) == (frozenset(q1.indices(["O1[0]", "O2[0]", "O3[0]"])), True)
    assert len(smallest_mc_tree(fig1)[0]) == 3  # one source, O3, O4 (O3 independent)
    assert _names(fig6, smallest_mc_tree(fig6)[0]) == ["S[0]", "A[0]", "B[0]", "C[0]", "D[0]"]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.shape}-{s.seed}")
def test_the_smallest_mc_tree_is_the_smallest_of_all_trees(spec):
    graph = build_task_graph(random_topology(spec))
    trees = {t for t, _ in iter_mc_trees(graph)}
    tree, proven = smallest_mc_tree(graph)
    assert proven and tree in trees and len(tree) == min(len(t) for t in trees)
    unproven, flag = smallest_mc_tree(graph, limit=0)  # no enumeration allowed: still a tree, maybe not the least
    assert unproven in trees and (flag or len(unproven) >= len(tree))


def test_enough_random_specs_enumerate():
    assert len(SPECS) >= 30


def test_a_join_of_branches_from_one_operator_is_enumerated():
    """D joins B and C, which both descend from S: the least tree takes one S task for both branches, while the
    smallest subtree of each stream (C's through Y, listed first) makes a tree one task larger."""
    graph = build_task_graph(parse_topology({
        "operators": [{"name": "Y", "parallelism": 2}, {"name": "S", "parallelism": 2}, {"name": "B", "parallelism": 1},
                      {"name": "C", "parallelism": 2}, {"name": "D", "parallelism": 1, "input_model": "correlated"}],
        "streams": [{"from": "S", "to": "B", "partitioning": "merge"}, {"from": "S", "to": "C", "partitioning": "one_to_one"},
                    {"from": "Y", "to": "C", "partitioning": "one_to_one"}, {"from": "B", "to": "D", "partitioning": "one_to_one"},
                    {"from": "C", "to": "D", "partitioning": "merge"}]}))
    tree, proven = smallest_mc_tree(graph)
    assert proven and _names(graph, tree) == ["S[0]", "B[0]", "C[0]", "D[0]"]
    larger, proven_without_enumeration = smallest_mc_tree(graph, limit=0)
    assert _names(graph, larger) == ["Y[0]", "S[0]", "B[0]", "C[0]", "D[0]"] and proven_without_enumeration is False


@pytest.mark.parametrize("spec", SPECS[::3], ids=lambda s: f"{s.shape}-{s.seed}")
def test_completing_an_mc_tree_is_what_keeps_output(spec):
    """With positive rates every tree weighs > 0: OF > 0 exactly when the tasks hold a whole tree."""
    graph = build_task_graph(random_topology(spec))
    rng = random.Random(spec.seed)
    for _ in range(40):
        tasks = {i for i in range(graph.n) if rng.random() < 0.6}
        assert completes_mc_tree(graph, tasks) == (replicated_fidelity(graph, tasks) > 1e-12)


def test_the_work_of_a_task_is_the_records_it_reads():
    g = load_sample("fig2-join")  # sources O1 (1, 2) and O2 (3, 2) all feed O3[0]
    assert task_work(g) == [1.0, 2.0, 3.0, 2.0, 8.0]
    assert cpu_share(g, g.indices(["O1[1]", "O2[0]", "O3[0]"])) == pytest.approx(13 / 16)
    assert cpu_share(g, []) == 0.0 and cpu_share(g, range(g.n)) == pytest.approx(1.0)


@pytest.mark.parametrize("algorithm", ["structure-aware", "greedy", "exact"])
def test_each_row_is_the_planners_plan_and_the_smallest_budget_the_first_to_reach_the_target(algorithm):
    graph = load_sample("q1-topk")
    advice = advise_budget(graph, 0.4, algorithm=algorithm, time_limit=None)
    assert [r.budget for r in advice.rows] == list(range(len(advice.rows)))
    for row in advice.rows:
        plan = plan_replication(graph, row.budget, algorithm, time_limit=None)
        assert (row.tasks, row.output_fidelity) == (plan.tasks, pytest.approx(plan.output_fidelity))
        assert row.cpu_share == pytest.approx(cpu_share(graph, graph.indices(plan.tasks)))
        assert row.predicted_accuracy is None
        assert (row.reason is None) == (row.output_fidelity > 0)
    first = next(r.budget for r in advice.rows if r.output_fidelity >= 0.4)
    assert advice.smallest_budget == first
    assert advice.rows[-1].output_fidelity == pytest.approx(1.0) and len(advice.rows) == graph.n + 1
    assert smallest_budget_plan(graph, 0.4, algorithm, time_limit=None).budget == first


def test_the_sweep_stops_where_asked_and_says_why():
    graph = load_sample("fig6-recovery")  # 31 tasks
    capped = advise_budget(graph, 0.9, max_budget=6)
    assert len(capped.rows) == 7 and capped.smallest_budget is None and "above 6 not tried" in capped.stopped
    whole = advise_budget(load_sample("fig2-join"), 0.5, max_budget=20)
    assert len(whole.rows) == 6 and "keeps OF 1" in whole.stopped  # budget 5 replicates all 5 tasks


def test_plan_budget_prints_the_table_the_reason_and_the_smallest_budget(cli, samples):
    res = cli("plan", "budget", samples / "q1-topk.json")
    assert res.code == 0, res.err
    assert "predicted accuracy" in res.out and "replica CPU share" in res.out and "not estimated" in res.out
    assert ("budgets 0-2 keep no output: the smallest MC-tree needs 3 tasks (O1[0], O2[0], O3[0]); a budget of 2 "
            "completes none") in res.out
    assert "smallest budget 7 (OF 0.5000, 7 replicas" in res.out  # the default target, 0.5
    assert f"next: ftops plan replication {samples / 'q1-topk.json'} --budget 7" in res.out


def test_plan_budget_json(cli, samples):
    doc = cli("plan", "budget", samples / "q1-topk.json", "--target-accuracy", "0.8", "--json").json()
    assert doc["target_accuracy"] == 0.8 and doc["target_measure"] == "output_fidelity"
    assert doc["smallest_mc_tree"] == ["O1[0]", "O2[0]", "O3[0]"] and doc["smallest_mc_tree_proven"] is True
    rows = doc["rows"]
    assert doc["smallest_budget"] == next(r["budget"] for r in rows if r["output_fidelity"] >= 0.8)
    assert rows[2]["output_fidelity"] == 0 and "a budget of 2 completes none" in rows[2]["reason"]
    assert rows[3]["reason"] is None and rows[3]["tasks"] == ["O1[0]", "O2[0]", "O3[0]"]
    assert all(r["predicted_accuracy"] is None for r in rows) and "not estimated" in doc["accuracy_note"]


def test_a_plan_of_of_0_says_why(cli, samples):
    """The first hour (issue 37): budget 2 printed "0/2 replicas, OF 0.0000" and nothing more."""
    text = cli("plan", "replication", samples / "q1-topk.json", "--budget", "2")
    assert text.code == 0
    assert ("no tentative output: the smallest MC-tree needs 3 tasks (O1[0], O2[0], O3[0]); a budget of 2 completes "
            "none") in text.out
    doc = cli("plan", "replication", samples / "q1-topk.json", "--budget", "2", "--json").json()
    assert doc["output_fidelity"] == 0 and "the smallest MC-tree needs 3 tasks" in doc["reason"]
    assert cli("plan", "replication", samples / "q1-topk.json", "--budget", "3", "--json").json()["reason"] is None


def test_a_heuristic_plan_of_of_0_above_the_smallest_tree_names_the_planner():
    """Greedy picks the tasks whose single failure hurts most, which rarely form a whole tree (paper 000, Alg. 2)."""
    graph = load_sample("q2-incidents")
    plan = next(p for b in range(4, graph.n) if (p := plan_replication(graph, b, "greedy")).output_fidelity == 0)
    assert plan.reason.startswith(f"the greedy planner's {len(plan.tasks)} tasks complete no MC-tree")
    assert "the exact planner replicates whole MC-trees" in plan.reason


def test_budget_auto_plans_the_smallest_budget_reaching_the_target(cli, samples):
    advice = cli("plan", "budget", samples / "q2-incidents.json", "--target-accuracy", "0.3", "--json").json()
    doc = cli("plan", "replication", samples / "q2-incidents.json", "--budget", "auto", "--target-accuracy", "0.3",
              "--json").json()
    assert doc["budget"] == advice["smallest_budget"] and doc["output_fidelity"] >= 0.3
    assert doc["budget_choice"] == {"budget": "auto", "target_accuracy": 0.3, "target_measure": "output_fidelity"}
    default = cli("plan", "replication", samples / "q1-topk.json", "--budget", "auto")
    assert default.code == 0 and "budget auto: 7, the smallest whose plan keeps OF >= 0.5" in default.out


@pytest.mark.parametrize("args, field", [
    (["plan", "replication", "FILE", "--budget", "3", "--target-accuracy", "0.5"], "--target-accuracy"),
    (["plan", "replication", "FILE", "--budget", "automatic"], "--budget"),
    (["plan", "budget", "FILE", "--target-accuracy", "0"], "--target-accuracy"),
    (["plan", "budget", "FILE", "--target-accuracy", "1.5"], "--target-accuracy"),
    (["plan", "budget", "FILE", "--max-budget", "-1"], "--max-budget"),
])
def test_bad_flags_exit_2_naming_the_flag(cli, samples, args, field):
    res = cli(*[str(samples / "q1-topk.json") if a == "FILE" else a for a in args], "--json")
    assert res.code == 2, res.out
    doc = json.loads(res.out)
    assert doc["field"] == field and doc["error"].startswith(field)


def test_the_example_in_docs_is_what_the_command_prints(cli):
    from tests.conftest import ROOT

    res = cli("plan", "budget", "ft_core/samples/q1-topk.json")
    assert res.code == 0, res.err
    assert f"$ .venv/bin/ftops plan budget ft_core/samples/q1-topk.json\n{res.out}```" in (ROOT / "docs" / "planners.md").read_text()
