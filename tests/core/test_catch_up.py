"""Catch-up-aware recovery (issue 15 item 3): the catch-up model's predictions and the policy built on them."""

from __future__ import annotations

import json
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ft_core.errors import InputError
from ft_core.recovery.catch_up import CatchUpModel, UnitRates, node_catch_up, predict_catch_up
from ft_core.recovery.catch_up_order import plan_catch_up
from ft_core.recovery.instances import InstanceSpec, random_instance
from ft_core.recovery.problem import make_problem
from ft_core.recovery.staged import POLICIES, plan_stages


def _rates(**units: tuple[float, float, float]) -> dict[str, UnitRates]:
    return {u: UnitRates(input_rate=lam, processing_rate=mu, restart_s=restart) for u, (lam, mu, restart) in units.items()}


def test_alone_a_partition_drains_its_backlog_at_processing_minus_input_rate():
    rates = _rates(a=(10, 40, 0))
    assert node_catch_up([("a", 30.0, 300.0)], rates, size=1.0) == {"a": pytest.approx(40.0)}
    # on a two-node pool (the survivors' free capacity) one partition still gets at most one node, two get one each
    assert node_catch_up([("a", 30.0, 300.0)], rates, size=2.0) == {"a": pytest.approx(40.0)}
    both = _rates(a=(10, 40, 0), b=(10, 40, 0))
    assert node_catch_up([("a", 30.0, 300.0), ("b", 30.0, 300.0)], both, size=2.0) == {"a": pytest.approx(40.0),
                                                                                          "b": pytest.approx(40.0)}


def test_partitions_on_one_node_share_it_and_a_caught_up_one_keeps_its_input_share():
    rates = _rates(a=(10, 40, 0), b=(10, 40, 0))
    # b has half a's backlog: both drain 10 rows/s for 15 s (b done at 45 s, a has 150 left); then a gets
    # 1 - 10/40 = 0.75 of the node: 30 - 10 = 20 rows/s, 7.5 s more
    got = node_catch_up([("a", 30.0, 300.0), ("b", 30.0, 150.0)], rates, size=1.0)
    assert got == {"b": pytest.approx(45.0), "a": pytest.approx(52.5)}


def test_a_late_start_slows_the_one_already_catching_up():
    rates = _rates(a=(10, 40, 0), b=(10, 40, 0))
    # a alone drains 30 rows/s from 0 s; at 5 s (150 rows left) b starts with 100 rows: both 10 rows/s;
    # b done at 15 s (a has 50 left), then a drains 20 rows/s: 2.5 s
    got = node_catch_up([("a", 0.0, 300.0), ("b", 5.0, 100.0)], rates, size=1.0)
    assert got == {"b": pytest.approx(15.0), "a": pytest.approx(17.5)}


def test_an_overloaded_node_never_catches_up():
    rates = _rates(a=(10, 15, 0), b=(10, 15, 0))  # two need 2 x 10/15 > 1 node
    assert node_catch_up([("a", 0.0, 100.0), ("b", 0.0, 100.0)], rates, size=1.0) == {"a": None, "b": None}


def test_nothing_to_replay_is_caught_up_only_where_the_node_keeps_up():
    rates = _rates(a=(9, 10, 0), b=(5, 10, 0))  # together they need 0.9 + 0.5 of a node
    # half a node each: b keeps up at once; a, with the half b leaves, never does
    assert node_catch_up([("a", 0.0, 0.0), ("b", 0.0, 0.0)], rates, size=1.0) == {"b": 0.0, "a": None}
    assert node_catch_up([("a", 0.0, 0.0), ("b", 0.0, 0.0)], rates, size=1.5) == {"a": 0.0, "b": 0.0}


def test_rates_that_cannot_keep_up_are_refused_by_name():
    with pytest.raises(ValidationError, match="never catch up"):
        UnitRates(input_rate=20, processing_rate=20)
    with pytest.raises(ValidationError, match="must not decrease"):
        CatchUpModel(rates={}, stage_times=[0, 30, 10])


PROBLEM = make_problem({"Q1": (1, ["a"]), "Q2": (4, ["a", "b"])}, {"a": 0.4, "b": 0.4})


def test_prediction_follows_the_schedule_backlog_grows_with_time_down():
    schedule = plan_stages(PROBLEM, 0.0, [0.5, 0.5])  # each node takes one partition (0.4 of 0.8 x 0.5)
    model = CatchUpModel(rates=_rates(a=(1, 11, 2), b=(1, 11, 2)), stage_times=[0, 20, 40], pending_s=3)
    got = predict_catch_up(PROBLEM, schedule, model)
    first = schedule.stages[1].partitions[0]
    # started at 20 + 2 s with (3 + 22) rows on half a node: 5.5 - 1 = 4.5 rows/s
    assert got.restarted_s[first] == 22 and got.caught_up_s[first] == pytest.approx(22 + 25 / 4.5, abs=1e-3)
    second = schedule.stages[2].partitions[0]
    assert got.caught_up_s[second] == pytest.approx(42 + 45 / 4.5, abs=1e-3)
    assert got.query_back_s["Q2"] == max(got.caught_up_s.values())
    assert got.weighted_mean_s == pytest.approx((got.query_back_s["Q1"] + 4 * got.query_back_s["Q2"]) / 5, abs=1e-3)


def test_a_stage_starts_only_once_the_previous_stage_runs():
    """Both executors (``execute_schedule``, the DAG's wait >> start >> record chain per stage) wait until a
    stage's applications run before they start the next: a node that arrives earlier waits for them."""
    schedule = plan_stages(PROBLEM, 0.0, [0.5, 0.5])
    model = CatchUpModel(rates=_rates(a=(1, 11, 30), b=(1, 11, 30)), stage_times=[0, 20, 25], pending_s=0)
    got = predict_catch_up(PROBLEM, schedule, model)
    first, second = schedule.stages[1].partitions[0], schedule.stages[2].partitions[0]
    assert got.restarted_s[first] == 50  # 20 + 30
    assert got.restarted_s[second] == 80  # its node came at 25 s, but stage 1 ran only at 50 s: 50 + 30
    assert got.caught_up_s[second] == pytest.approx(80 + 80 / 4.5, abs=1e-3)  # 80 s of input, 5.5 - 1 rows/s


def test_the_next_stage_waits_for_the_previous_applications_to_be_up_not_for_their_first_batch():
    """The recovery-runtime run of 2026-12-01: stage 2's node registered at 60 s and its application started
    then, once stage 1's was up (its queries started); the model had waited for stage 1's first batch to end (108 s
    predicted). With ``running_s`` measured, the next stage starts when the previous one is up."""
    schedule = plan_stages(PROBLEM, 0.0, [0.5, 0.5])
    rates = {u: UnitRates(input_rate=1, processing_rate=11, restart_s=30, running_s=12) for u in ("a", "b")}
    got = predict_catch_up(PROBLEM, schedule, CatchUpModel(rates=rates, stage_times=[0, 20, 25], pending_s=0))
    first, second = schedule.stages[1].partitions[0], schedule.stages[2].partitions[0]
    assert got.restarted_s[first] == 50  # 20 + 30: its first batch
    assert got.restarted_s[second] == 62  # stage 1 up at 20 + 12 = 32 s, after the node's 25 s: 32 + 30


def test_unscheduled_partitions_and_missing_inputs():
    schedule = plan_stages(PROBLEM, 0.0, [0.5])  # room for one partition only
    model = CatchUpModel(rates=_rates(a=(1, 11, 0), b=(1, 11, 0)), stage_times=[0, 20])
    got = predict_catch_up(PROBLEM, schedule, model)
    assert got.query_back_s["Q2"] is None and got.weighted_mean_s is None
    with pytest.raises(InputError, match="no rates for failed partition 'b'"):
        predict_catch_up(PROBLEM, schedule, CatchUpModel(rates=_rates(a=(1, 11, 0)), stage_times=[0, 20]))
    with pytest.raises(InputError, match="stage_times: 1 time"):
        predict_catch_up(PROBLEM, schedule, CatchUpModel(rates=model.rates, stage_times=[0]))


def test_the_policy_restarts_a_slow_catcher_first_where_best_density_would_not():
    problem = make_problem({"fast": (2, ["a"]), "slow": (1, ["b"])}, {"a": 0.8, "b": 0.8})
    model = CatchUpModel(rates=_rates(a=(10, 1000, 0), b=(10, 11, 0)), stage_times=[0, 10, 20])
    paper = plan_stages(problem, 0.0, [1.0, 1.0])
    chosen = plan_catch_up(problem, 0.0, [1.0, 1.0], model)
    assert paper.query_order == ["fast", "slow"] and chosen.query_order == ["slow", "fast"]
    assert chosen.policy == "catch-up" and chosen.predicted_weighted_mean_s < predict_catch_up(problem, paper, model).weighted_mean_s


def test_below_the_activation_threshold_the_policy_is_blocking():
    model = CatchUpModel(rates=_rates(a=(1, 11, 0), b=(1, 11, 0)), stage_times=[0, 20, 40])
    schedule = plan_catch_up(PROBLEM, 0.0, [0.5, 0.5], model, failures=1)
    assert schedule.mode == "blocking" and schedule.predicted_back_s is not None


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_the_policy_is_never_predicted_worse_than_any_paper_policy(seed):
    problem = random_instance(InstanceSpec(queries=6, query_size=(1, 3), cost=(1, 5)), seed=seed)
    rng = random.Random(seed)
    rates = {p: UnitRates(input_rate=rng.uniform(1, 10), processing_rate=rng.uniform(12, 60), restart_s=rng.uniform(0, 5))
             for p in problem.partitions}
    arrivals = [12.0, 12.0, 60.0]  # costs 1-5 in the generator's unit; the last node takes whatever is left
    model = CatchUpModel(rates=rates, stage_times=[0, 15, 30, 45])
    chosen = plan_catch_up(problem, 2.0, arrivals, model).predicted_weighted_mean_s
    assert chosen is not None
    for policy in POLICIES:
        other = predict_catch_up(problem, plan_stages(problem, 2.0, arrivals, policy=policy), model).weighted_mean_s
        assert other is not None and chosen <= other + 1e-6


def test_plan_stages_cli_plans_and_predicts_with_a_catch_up_model(cli, tmp_path):
    problem = tmp_path / "problem.json"
    problem.write_text(json.dumps({"queries": {"fast": {"priority": 2, "partitions": ["a"]},
                                               "slow": {"priority": 1, "partitions": ["b"]}},
                                   "cost": {"a": 0.8, "b": 0.8}}))
    model = tmp_path / "model.json"
    rates = {"a": {"input_rate": 10, "processing_rate": 1000}, "b": {"input_rate": 10, "processing_rate": 11}}
    model.write_text(json.dumps({"rates": rates, "stage_times": [0, 10, 20]}))
    args = ("plan", "stages", problem, "--capacity", "0", "--arrivals", "1,1")
    # a time limit no loaded machine reaches: the search's answer must not depend on the machine's speed
    res = cli(*args, "--policy", "catch-up", "--catch-up", model, "--time-limit", "600", "--json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["policy"] == "catch-up" and doc["query_order"] == ["slow", "fast"] and doc["predicted_weighted_mean_s"] == 50.135
    res = cli(*args, "--catch-up", model)  # the paper's policy, with its predicted times printed
    assert res.code == 0 and "priority-weighted mean 80.067" in res.out, res.out

    res = cli(*args, "--policy", "catch-up")
    assert res.code == 2 and "--catch-up: --policy catch-up needs the catch-up model" in res.err
    model.write_text(json.dumps({"rates": {"a": rates["a"]}, "stage_times": [0, 10, 20]}))
    res = cli(*args, "--catch-up", model)
    assert res.code == 2 and "--catch-up: rates: no rates for failed partition 'b'" in res.err, res.err
    model.write_text(json.dumps({"rates": rates, "stage_times": [0, 10]}))
    res = cli(*args, "--policy", "catch-up", "--catch-up", model)
    assert res.code == 2 and "--catch-up: stage_times: 2 time(s) for 3 stages" in res.err, res.err
    model.write_text(json.dumps({"rates": {**rates, "b": {"input_rate": 12, "processing_rate": 11}}, "stage_times": [0, 10, 20]}))
    res = cli(*args, "--policy", "catch-up", "--catch-up", model)
    assert res.code == 2 and "--catch-up" in res.err and "can never catch up" in res.err, res.err


def test_the_search_stops_at_its_time_limit_or_evaluations_with_the_best_so_far():
    problem = random_instance(InstanceSpec(queries=60, query_size=(2, 4), cost=(1, 5)), seed=3)
    rates = {p: UnitRates(input_rate=5, processing_rate=20 + i % 7, restart_s=1) for i, p in enumerate(problem.partitions)}
    model = CatchUpModel(rates=rates, stage_times=[0, 20, 40, 60])
    best_paper = min(predict_catch_up(problem, plan_stages(problem, 4.0, [200.0] * 3, policy=p), model).weighted_mean_s
                     for p in POLICIES)
    # unbounded, this search runs for 30 s on the project's machine; 0.5 s stops it with the best so far
    started = time.perf_counter()
    quick = plan_catch_up(problem, 4.0, [200.0] * 3, model, time_limit_s=0.5, max_evaluations=10**6)
    assert time.perf_counter() - started < 10
    assert quick.predicted_weighted_mean_s <= best_paper
    # three evaluations: the paper's policies only, the best of them
    assert plan_catch_up(problem, 4.0, [200.0] * 3, model, max_evaluations=3).predicted_weighted_mean_s == best_paper
    with pytest.raises(InputError, match="time_limit_s: must be a positive"):
        plan_catch_up(problem, 4.0, [200.0] * 3, model, time_limit_s=0)
    with pytest.raises(InputError, match="max_evaluations: must be a whole number"):
        plan_catch_up(problem, 4.0, [200.0] * 3, model, max_evaluations=0)


def test_some_query_never_back_the_search_still_ranks_the_rest():
    """One partition fits on no node (cost 1.0, 0.8 usable): its query is never back under any schedule, and
    the policy still orders the others by their time back."""
    problem = make_problem({"never": (1, ["x"]), "fast": (2, ["a"]), "slow": (1, ["b"])}, {"x": 1.0, "a": 0.8, "b": 0.8})
    model = CatchUpModel(rates=_rates(x=(1, 13, 0), a=(10, 1000, 0), b=(10, 11, 0)), stage_times=[0, 10, 20])
    chosen = plan_catch_up(problem, 0.0, [1.0, 1.0], model)
    assert chosen.unscheduled_partitions == ["x"] and chosen.predicted_back_s["never"] is None
    assert (chosen.predicted_back_s["slow"], chosen.predicted_back_s["fast"]) == (110.0, 20.202)  # slow first, as above
    assert chosen.predicted_weighted_mean_s is None  # the mean over every failed query: never
