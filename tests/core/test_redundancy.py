"""Thesis 002: Eq. 3.1, Algorithm 1, the Spark speculation mapping, and the Algorithm 2 controller."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ft_core.errors import InputError
from ft_core.redundancy.allocation import (
    load_redundancy_model,
    model_based_allocation,
    parse_redundancy_model,
    plan_allocation,
    replication_fraction,
    speculation_settings,
)
from ft_core.redundancy.controller import (
    ControllerParams,
    ControllerState,
    RedundancyController,
    controller_step,
    load_trace,
    run_trace,
)
from tests.conftest import SAMPLES

# --- Eq. 3.1 ------------------------------------------------------------------------------------------

def test_eq31_fig38_example_is_one_third():
    assert replication_fraction(active_receivers=3, passive_receivers=2, active_senders=1, passive_senders=1) == pytest.approx(1 / 3)


def test_eq31_zero_without_passive_receivers_and_capped_at_one():
    assert replication_fraction(4, 0, 2, 1) == 0.0
    assert replication_fraction(1, 3) == 1.0  # raw 3: one extra copy per tuple at most
    assert replication_fraction(1, 3, cap=None) == 3.0


@given(st.integers(1, 20), st.integers(0, 20), st.integers(1, 20), st.integers(0, 20))
def test_eq31_is_monotone_in_passive_receivers_and_senders(ra, rp, sa, sp):
    f = replication_fraction(ra, rp, sa, sp, cap=None)
    assert replication_fraction(ra, rp + 1, sa, sp, cap=None) > f
    assert replication_fraction(ra, rp, sa, sp + 1, cap=None) <= f
    assert f == pytest.approx((rp / ra) / (1 + sp / sa))


def test_eq31_rejects_empty_active_sets():
    with pytest.raises(InputError, match="active_receivers: must be an integer >= 1"):
        replication_fraction(0, 1)


# --- Algorithm 1 --------------------------------------------------------------------------------------

def test_algorithm1_text_example_200ms_from_two_sources_and_a_300ms_bolt_needs_3():
    assert model_based_allocation([("bolt", 300)], source_period_ms=200, source_parallelism=2) == {"bolt": 3}


def test_algorithm1_chains_the_sender_period_and_keeps_the_aggregator_at_one():
    # detect: 200/2 = 100 ms -> ceil(300/100) = 3; mark: 300/3 = 100 -> ceil(40/100) = 1; write: 40/1 -> ceil(30/40) = 1
    alloc = model_based_allocation([("detect", 300), ("mark", 40), ("write", 30)], 200, 2, aggregator="agg")
    assert alloc == {"detect": 3, "mark": 1, "write": 1, "agg": 1}


def test_algorithm1_exact_multiples_do_not_round_up_through_float_noise():
    # 1.1 / 0.1 = 11.000000000000002 in floating point
    assert model_based_allocation([("b", 1.1)], source_period_ms=0.1, source_parallelism=1) == {"b": 11}


@given(st.lists(st.floats(1, 1000), min_size=1, max_size=5), st.floats(1, 1000), st.integers(1, 8))
def test_algorithm1_counts_are_ceilings_of_latency_over_the_effective_period(latencies, period, parallelism):
    ops = [(f"op{i}", lat) for i, lat in enumerate(latencies)]
    alloc = model_based_allocation(ops, period, parallelism)
    sender_period, sender_par = period, parallelism
    for name, lat in ops:
        n = alloc[name]
        assert n >= 1
        assert n * (sender_period / sender_par) >= lat * (1 - 1e-9)  # enough instances
        assert n == 1 or (n - 1) * (sender_period / sender_par) < lat * (1 + 1e-9)  # not one too many
        sender_period, sender_par = lat, n
    assert alloc == model_based_allocation(ops, period, parallelism)  # deterministic


def test_sample_model_normal_mode_allocation_and_fractions():
    plan = plan_allocation(load_redundancy_model(SAMPLES / "redundancy-model.yaml"))
    assert plan.mode == "normal"
    assert plan.active == {"detectFaces": 3, "imageMark": 1, "imageWrite": 1, "aggBolt": 1}
    assert plan.passive == {"detectFaces": 1, "imageMark": 1, "imageWrite": 1, "aggBolt": 0}
    # source -> detect: (1/3) / (1 + 0/2); detect -> mark: (1/1) / (1 + 1/3); mark -> write: (1/1) / (1 + 1/1)
    assert [e.fraction for e in plan.fractions] == pytest.approx([1 / 3, 0.75, 0.5])
    assert plan.level == pytest.approx(1 / 3) and plan.warnings == []


def test_sample_model_large_images_use_every_detector_so_no_redundancy_at_the_source():
    plan = plan_allocation(load_redundancy_model(SAMPLES / "redundancy-model.yaml"), "large-images")
    assert plan.active["detectFaces"] == 4 and plan.passive["detectFaces"] == 0 and plan.level == 0.0


def test_model_with_too_few_instances_warns_and_has_no_passive():
    model = parse_redundancy_model({"pipeline": ["b"], "source": {"period_ms": 100, "parallelism": 1},
                                    "instances": {"b": 2}, "modes": {"m": {"b": 500}}})
    plan = plan_allocation(model)
    assert plan.passive == {"b": 0} and plan.warnings == ["b: the model needs 5 active instances but only 2 exist; no passive ones"]


@pytest.mark.parametrize("doc, message", [
    ({"pipeline": ["b"], "source": {"period_ms": 100, "parallelism": 1}, "modes": {"m": {}}}, "redundancy model field modes.m: no latency for 'b'"),
    ({"pipeline": ["b"], "source": {"period_ms": 0, "parallelism": 1}, "modes": {"m": {"b": 1}}}, "source.period_ms"),
    ({"pipeline": ["b"], "source": {"period_ms": 1, "parallelism": 1}, "modes": {"m": {"b": 1}}, "extra": 1}, "field extra"),
])
def test_bad_models_name_the_field(doc, message):
    with pytest.raises(InputError, match=message):
        parse_redundancy_model(doc)


# --- Spark speculation mapping --------------------------------------------------------------------------

def test_level_zero_disables_speculation_with_spark_defaults():
    assert speculation_settings(0) == {"spark.speculation": "false", "spark.speculation.quantile": "0.9",
                                       "spark.speculation.multiplier": "3", "spark.speculation.minTaskRuntime": "100ms"}


def test_level_one_is_the_most_eager_spark_gets_and_levels_above_are_capped():
    full = {"spark.speculation": "true", "spark.speculation.quantile": "0", "spark.speculation.multiplier": "1",
            "spark.speculation.minTaskRuntime": "0ms"}
    assert speculation_settings(1.0) == full and speculation_settings(1.97) == full


def test_live_levels_change_only_what_spark_reads_per_task_set():
    """Live: speculation always on and minTaskRuntime fixed (Spark reads both at application start);
    quantile and multiplier follow the level as in a resubmitted run."""
    for level in (0, 0.25, 0.5, 1.0):
        live, static = speculation_settings(level, live=True), speculation_settings(level)
        assert live["spark.speculation"] == "true" and live["spark.speculation.minTaskRuntime"] == "100ms"
        if level > 0:
            assert {k: live[k] for k in QUANTILE_AND_MULTIPLIER} == {k: static[k] for k in QUANTILE_AND_MULTIPLIER}
    assert speculation_settings(0, live=True)["spark.speculation.quantile"] == "1"  # never a copy


QUANTILE_AND_MULTIPLIER = ("spark.speculation.quantile", "spark.speculation.multiplier")


@given(st.floats(0.001, 1), st.floats(0.001, 1))
def test_more_redundancy_never_makes_spark_less_eager(a, b):
    low, high = sorted((a, b))
    s_low, s_high = speculation_settings(low), speculation_settings(high)
    for key in ("spark.speculation.quantile", "spark.speculation.multiplier"):
        assert float(s_high[key]) <= float(s_low[key])
    assert float(s_low["spark.speculation.quantile"]) == pytest.approx(1 - low, abs=1e-4)  # at most `level` of tasks cloned
    assert int(s_high["spark.speculation.minTaskRuntime"][:-2]) <= int(s_low["spark.speculation.minTaskRuntime"][:-2])


def test_bad_levels_are_input_errors():
    with pytest.raises(InputError, match="level"):
        speculation_settings(float("nan"))


# --- Algorithm 2 (corrected) ----------------------------------------------------------------------------

BOUND = ControllerParams(latency_bound_ms=100)  # step 10 points, gains 5, margin 10 ms
TRACE = [250, 180, 120, 95, 70, 70, 85, 130, 140, 160]


def test_corrected_controller_on_a_hand_computed_trace():
    states = run_trace(BOUND, TRACE)
    assert [(s.redundancy_pct, s.movement) for s in states] == [
        (10, "increase"),   # dl 150: first period above -> up by max(10, 1.5 x 5)
        (20, "increase"),   # dl 80 < 150: moving toward the bound, keep going
        (30, "increase"),   # dl 20
        (30, "hold"),       # dl -5: below the bound but within the 10 ms margin
        (20, "decrease"),   # dl -30: outside the margin and changed
        (20, "hold"),       # dl -30 again: unchanged latency
        (10, "decrease"),   # dl -15
        (20, "increase"),   # dl 30: first period above again
        (10, "decrease"),   # dl 40 > 30: the last step moved away from the bound -> reverse
        (20, "increase"),   # dl 60 > 40: reverse again
    ]
    assert [s.last_difference_ms for s in states][:4] == [150, 80, 20, -5] and states[-1].periods == 10


def test_printed_pseudocode_drains_redundancy_inside_the_margin():
    states = run_trace(BOUND.model_copy(update={"rule": "printed"}), TRACE)
    # line 6 as printed decreases *within* the margin and the movement sticks while under the bound
    assert [s.redundancy_pct for s in states][:7] == [10, 20, 30, 20, 10, 0, 0]


def test_a_large_violation_steps_by_the_proportional_gain():
    state = controller_step(BOUND, ControllerState(), 400)  # dl 300 -> 300/100 x 5 = 15 > 10
    assert state.redundancy_pct == 15 and state.movement == "increase"


def test_floor_and_cap_bound_the_redundancy():
    params = ControllerParams(latency_bound_ms=100, min_redundancy_pct=20, max_redundancy_pct=40)
    states = run_trace(params, [300] * 5 + [10, 20, 10, 20])
    assert states[0].redundancy_pct == 30 and max(s.redundancy_pct for s in states) == 40
    assert states[-1].redundancy_pct == 20  # decreases stop at the floor (the thesis's fix for fault-free gaps)


@st.composite
def traces(draw):
    return draw(st.lists(st.floats(0, 1000, allow_nan=False), min_size=1, max_size=40))


@settings(max_examples=300, deadline=None)
@given(traces())
def test_algorithm2_properties(metrics):
    params = BOUND
    state = ControllerState()
    for metric in metrics:
        new = controller_step(params, state, metric)
        dl, prev = metric - 100, state.last_difference_ms
        assert new.redundancy_pct >= 0
        change = new.redundancy_pct - state.redundancy_pct
        if new.movement == "hold":
            assert change == 0 and dl < 0
        elif new.movement == "increase":
            assert change >= params.step_min_pct - 1e-9
        else:  # a decrease is a full step unless it hit 0
            assert -change >= params.step_min_pct - 1e-9 or new.redundancy_pct == 0
        if dl >= 0 and prev is not None and dl != prev and prev >= 0:
            expected = state.movement if abs(prev) > abs(dl) else {"increase": "decrease", "decrease": "increase"}[state.movement]
            assert new.movement == expected
        if dl >= 0 and (prev is None or prev < 0):
            assert new.movement == "increase"  # the first period above the bound increases R
        if dl >= 0 and dl == prev:
            assert new.movement == state.movement  # unchanged latency keeps the direction
        if -params.perf_margin * 100 < dl < 0:
            assert new.movement == "hold"  # held inside the safety margin
        state = new


def _closed_loop(curve, periods=80):
    ctl = RedundancyController(BOUND)
    return [ctl.update(curve(ctl.state.redundancy_pct)) for _ in range(periods)]


def test_u_shaped_curve_crossing_the_bound_settles_at_the_leftmost_crossing():
    # 40 + (R - 100)^2 / 50 meets 100 ms at R = 100 -/+ 54.8: the least redundancy is 45.2
    history = _closed_loop(lambda r: 40 + (r - 100) ** 2 / 50)
    leftmost = 100 - math.sqrt(3000)
    assert all(abs(r - leftmost) <= BOUND.step_min_pct for r in history[-30:])


def test_u_shaped_curve_above_the_bound_settles_at_its_minimum():
    history = _closed_loop(lambda r: 150 + (r - 100) ** 2 / 50)  # best effort: minimum latency at R = 100
    assert all(abs(r - 100) <= 1.5 * BOUND.step_min_pct for r in history[-30:])


def test_state_round_trips_between_runs_and_resumes_identically():
    whole = run_trace(BOUND, TRACE)
    first = RedundancyController(BOUND)
    for metric in TRACE[:5]:
        first.update(metric)
    saved = json.loads(json.dumps(first.to_dict()))  # as stored between Airflow runs
    resumed = RedundancyController.from_dict(saved)
    assert [resumed.update(m) for m in TRACE[5:]] == [s.redundancy_pct for s in whole[5:]]
    assert resumed.state == whole[-1] and resumed.level == whole[-1].redundancy_pct / 100


def test_level_is_capped_at_one_for_spark():
    assert RedundancyController(BOUND, ControllerState(redundancy_pct=160)).level == 1.0


@pytest.mark.parametrize("data, message", [
    ({"params": {"latency_bound_ms": 0}}, "params field latency_bound_ms"),
    ({"params": {"latency_bound_ms": 1, "min_redundancy_pct": 50, "max_redundancy_pct": 10}}, "max_redundancy_pct must be >= min"),
    ({"params": {"latency_bound_ms": 1}, "state": {"movement": "sideways"}}, "state field movement"),
    ({"state": {}}, "expected an object with 'params'"),
])
def test_bad_controller_documents_are_input_errors(data, message):
    with pytest.raises(InputError, match=message):
        RedundancyController.from_dict(data)


def test_sample_trace_ends_at_30_percent():
    trace = load_trace(SAMPLES / "latency-trace.yaml")
    states = run_trace(trace.controller, trace.metric_ms)
    assert [s.redundancy_pct for s in states] == [0, 0, 10, 20, 30, 40, 40, 30, 20, 10, 10, 20, 30, 40, 40, 30]
