"""The failure timeline simulator (ft_core.simulation.failure_timeline) and ``ftops simulate``."""

from __future__ import annotations

import json

import pytest

from ft_core.recovery.problem import load_problem
from ft_core.recovery.staged import plan_stages
from ft_core.replication.fidelity import output_fidelity
from ft_core.samples import SAMPLES_DIR, load_sample
from ft_core.simulation.failure_timeline import Arrival, TimelineParams, simulate
from ft_core.topology.document import parse_topology
from ft_core.topology.task_graph import build_task_graph
from tests.conftest import assert_plot


def _graph(doc: dict):
    return build_task_graph(parse_topology(doc))


def _two_pipelines():
    """Two independent keyed pipelines A0 -> A1 and B0 -> B1 (two queries, A1[0] and B1[0])."""
    return _graph({"name": "two", "operators": [{"name": n, "parallelism": 1} for n in ("A0", "A1", "B0", "B1")],
                   "streams": [{"from": "A0", "to": "A1", "partitioning": "one_to_one"},
                               {"from": "B0", "to": "B1", "partitioning": "one_to_one"}]})


def test_tentative_fidelity_is_the_of_of_the_unreplicated_failed_tasks():
    g = load_sample("q2-incidents")
    failed = {g.index[t] for t in ("O1[0]", "O1[1]", "O2[0]", "O3[1]")}
    replicated = {g.index["O1[0]"], g.index["O3[1]"]}
    t = simulate(g, replicated, failed, TimelineParams(arrivals=[Arrival(size=1, at_s=20)]))
    assert t.tentative_output_fidelity == pytest.approx(output_fidelity(g, failed - replicated))
    assert 0 < t.tentative_output_fidelity < 1
    assert t.first_tentative_s == t.params.detection_s
    assert t.replicated_failed_tasks == 2
    # the plan's worst case assumes every unreplicated task failed: never above this failure's OF
    assert t.plan_output_fidelity <= t.tentative_output_fidelity
    full = simulate(g, failed, failed, TimelineParams(arrivals=[Arrival(size=1, at_s=20)]))
    assert full.tentative_output_fidelity == 1.0


def test_catch_up_time_follows_backlog_and_utilisation():
    g = load_sample("fig2-join")
    params = TimelineParams(detection_s=4, restore_s=6, checkpoint_interval_s=20, case="max", utilisation=0.75,
                            arrivals=[Arrival(size=1, at_s=50)])
    t = simulate(g, set(), {g.index["O2[1]"]}, params)
    q = t.queries["O3[0]"]
    # starts at 50, restored at 56; backlog = 20 (whole interval) + 56 = 76 s of input,
    # drained at (1 - 0.75) / 0.75 s of input per second: 76 * 3 = 228 s -> 284
    assert (q.restarted_s, q.backlog_s, q.recovered_s) == (50, 76, 284)
    assert t.stages[1].caught_up_s == 284 and t.stages[1].recovered_queries == ["O3[0]"]
    avg = simulate(g, set(), {g.index["O2[1]"]}, params.model_copy(update={"case": "min"}))
    assert avg.queries["O3[0]"].recovered_s == 56 + 56 * 3


def test_higher_priority_query_restarts_first_and_priorities_swap_the_order():
    g = _two_pipelines()
    failed = set(range(g.n))
    base = dict(task_cost=0.4, arrivals=[Arrival(size=1, at_s=30), Arrival(size=1, at_s=90)])
    for first, second in (("A1[0]", "B1[0]"), ("B1[0]", "A1[0]")):
        t = simulate(g, set(), failed, TimelineParams(priority={first: 5, second: 1}, **base))
        assert t.queries[first].restarted_s == 30 and t.queries[second].restarted_s == 90
        assert t.queries[first].recovered_s < t.queries[second].recovered_s
        assert t.stages[1].recovered_queries == [first]


def test_blocking_waits_for_the_last_node_and_recovers_later():
    g = _two_pipelines()
    failed = set(range(g.n))
    params = TimelineParams(task_cost=0.4, priority={"A1[0]": 5}, arrivals=[Arrival(size=1, at_s=30), Arrival(size=1, at_s=90)])
    incremental = simulate(g, set(), failed, params)
    blocking = simulate(g, set(), failed, params.model_copy(update={"policy": "blocking"}))
    assert [len(s.tasks) for s in blocking.stages] == [0, 0, 4]
    assert blocking.queries["A1[0]"].recovered_s > incremental.queries["A1[0]"].recovered_s
    assert blocking.priority_weighted_recovery_s > incremental.priority_weighted_recovery_s


def test_grouped_order_matches_the_staged_planner_on_the_figure_1_instance():
    """The simulator packs tasks in the order of ``plan_stages``' order-then-pack policy."""
    doc = json.loads((SAMPLES_DIR / "recovery-fig1-topology.json").read_text())
    g = _graph(doc["topology"])
    failed = {g.index[t] for t in doc["failed"]}
    arrivals = [0.5, 0.5, 0.5]
    schedule = plan_stages(load_problem(SAMPLES_DIR / "recovery-fig1-topology.json"), 0.0, arrivals, node_cap=1.0)
    t = simulate(g, set(), failed, TimelineParams(cost=doc["cost"], priority=doc["priority"], node_cap=1.0,
                                                  arrivals=[Arrival(size=a, at_s=10 * k) for k, a in enumerate(arrivals, 1)]))
    assert [sorted(s.tasks) for s in t.stages] == [sorted(s.partitions) for s in schedule.stages]
    assert [s.recovered_queries for s in t.stages] == [s.recovered_queries for s in schedule.stages]


def test_insufficient_capacity_leaves_queries_unrecovered():
    g = _two_pipelines()
    t = simulate(g, set(), set(range(g.n)), TimelineParams(task_cost=0.4, arrivals=[Arrival(size=1, at_s=30)]))
    assert len(t.never_started_tasks) == 2 and len(t.unrecovered_queries) == 1
    assert t.all_recovered_s is None and t.priority_weighted_recovery_s is None
    assert t.fidelity_curve[-1].output_fidelity == pytest.approx(0.5)


def test_fidelity_curve_rises_to_one_when_everything_recovers():
    g = load_sample("q1-topk")
    failed = set(range(0, g.n, 2))
    t = simulate(g, set(), failed, TimelineParams(task_cost=0.2, arrivals=[Arrival(size=1, at_s=30 * k) for k in range(1, 8)]))
    ofs = [p.output_fidelity for p in t.fidelity_curve]
    assert ofs == sorted(ofs) and ofs[-1] == pytest.approx(1.0)
    assert t.fidelity_curve[-1].time_s == t.all_recovered_s
    assert t.fidelity_curve[-1].caught_up_tasks == len(failed)


def test_ten_thousand_tasks_and_a_thousand_queries():
    """The scale the Airflow DAGs and UI need ("what if this rack fails now"); speed is benchmarked, not asserted."""
    pars = [2000, 1000, 1000, 2000, 1000, 1000, 1000, 1000]
    kinds = ["merge", "one_to_one", "split", "merge", "one_to_one", "one_to_one", "one_to_one"]
    g = _graph({"name": "scale", "operators": [{"name": f"O{k}", "parallelism": p} for k, p in enumerate(pars)],
                "streams": [{"from": f"O{k}", "to": f"O{k + 1}", "partitioning": kind} for k, kind in enumerate(kinds)]})
    assert (g.n, len(g.sinks)) == (10_000, 1_000)
    failed = set(range(0, g.n, 2))
    t = simulate(g, set(), failed, TimelineParams(task_cost=0.0008, capacity=0.5,
                                                  arrivals=[Arrival(size=1, at_s=60 * k) for k in range(1, 6)]))
    assert t.queries_failed == 1_000 and not t.unrecovered_queries
    assert sum(len(s.tasks) for s in t.stages) == len(failed)
    assert t.fidelity_curve[-1].output_fidelity == pytest.approx(1.0)


def test_unknown_names_in_params_are_refused():
    from ft_core.errors import InputError

    g = load_sample("fig2-join")
    with pytest.raises(InputError, match="priority.O1\\[0\\]: not an output partition"):
        simulate(g, set(), {0}, TimelineParams(priority={"O1[0]": 2}))
    with pytest.raises(InputError, match="cost.X: not a task"):
        simulate(g, set(), {0}, TimelineParams(cost={"X": 1}))


# ----- the CLI contract: ftops simulate TOPOLOGY --plan PLAN --fail ... --json


def test_cli_simulate_json(cli, samples, tmp_path):
    plan = cli("plan", "replication", samples / "q2-incidents.json", "--budget", "4", "--json")
    assert plan.code == 0, plan.err
    (tmp_path / "plan.json").write_text(plan.out)
    res = cli("simulate", samples / "q2-incidents.json", "--plan", tmp_path / "plan.json", "--fail", "O1[0],O1[1]",
              "--fail", "O2[0]", "--arrivals", "1@60,1@120", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["failed_tasks"] == 3 and doc["queries_failed"] == 1
    assert doc["stages"][1]["time_s"] == 60 and doc["queries"]["O4[0]"]["recovered_s"] > 60
    assert {"tentative_output_fidelity", "fidelity_curve", "all_recovered_s", "params"} <= set(doc)


def test_cli_fail_domain(cli, samples, tmp_path):
    (tmp_path / "domains.json").write_text(json.dumps({"rack-a": ["O1", "O3[0]"], "rack-b": ["O2", "O3[1]", "O4"]}))
    res = cli("simulate", samples / "q2-incidents.json", "--fail-domain", "rack-a", "--domains", tmp_path / "domains.json",
              "--capacity", "2", "--json")
    assert res.code == 0, res.err
    g = load_sample("q2-incidents")
    assert res.json()["failed_tasks"] == len(g.tasks_of["O1"]) + 1
    text = cli("simulate", samples / "q2-incidents.json", "--fail-domain", "rack-a", "--domains", tmp_path / "domains.json",
               "--capacity", "2")
    assert text.code == 0 and "all accurate again at" in text.out


@pytest.mark.parametrize("args, message", [
    (["--fail", "O9[0]"], "--fail task 'O9[0]' is not a task"),
    ([], "nothing fails"),
    (["--fail", "O1[0]", "--arrivals", "60"], "--arrivals: '60' is not SIZE@SECONDS"),
    (["--fail", "O1[0]", "--utilisation", "1"], "--utilisation: Input should be less than 1"),
    (["--fail", "O1[0]", "--detection-s", "-1"], "--detection-s: Input should be greater than or equal to 0"),
    (["--fail", "O1[0]", "--detection-s", "inf"], "--detection-s: Input should be a finite number"),
    (["--fail", "O1[0]", "--checkpoint-interval-s", "0"], "--checkpoint-interval-s: Input should be greater than 0"),
    (["--fail", "O1[0]", "--arrivals", "1e18@1"], "--arrivals: '1e18@1': size exceeds the limit of 10000 nodes"),
    (["--fail-domain", "rack-a"], "--fail-domain needs --domains"),
])
def test_cli_bad_input_exits_2(cli, samples, args, message):
    res = cli("simulate", samples / "q2-incidents.json", *args)
    assert res.code == 2 and message in res.err, res.err


def test_cli_plan_for_another_topology_is_refused(cli, samples, tmp_path):
    plan = cli("plan", "replication", samples / "q1-topk.json", "--budget", "2", "--json")
    (tmp_path / "plan.json").write_text(plan.out)
    res = cli("simulate", samples / "q2-incidents.json", "--plan", tmp_path / "plan.json", "--fail", "O1[0]")
    assert res.code == 2 and "made for topology 'q1-topk'" in res.err


def test_bench_writes_the_timeline_and_time_plots_beside_its_table(tmp_path):
    """``ftops bench simulate``'s report on small pipelines (100 and 200 tasks): both plots, linked."""
    from ft_core.bench.simulation import run_benchmark

    table = tmp_path / "simulate.md"
    report = run_benchmark((100, 200), "ftops bench simulate", table=table)
    assert "| keyed | 100 | 10 |" in report and "| shuffled | 200 | 20 |" in report
    assert_plot(tmp_path / "simulate-timeline.svg", report, "Simulated output fidelity after the failure",
                "keyed, 100 tasks", "shuffled, 200 tasks", "node arrives", "seconds after the failure")
    assert_plot(tmp_path / "simulate-time.svg", report, "Time by topology size", "keyed: simulate", "shuffled: plan",
                "keyed: build")
    assert ".svg" not in run_benchmark((100,), "ftops bench simulate --quick")  # no path: stdout only, no plot
