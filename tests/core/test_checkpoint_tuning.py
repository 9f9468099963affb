"""Chiron's models and optimiser (paper 004, Sec. IV-B/C) and the profiles document.

Expected values are the digest's Example B (/work/shared/notes/paper-004-chiron.md): with
A = 0.01 CI^2 + 1.5 CI + 60 (s) and P = 0.2 CI^2 - 30 CI + 2500 (ms) sampled at 11 intervals from
1 s to 60 s, C_TRT = 180 s gives CI* = 57.759 s and L* = 1434.45 ms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml

from ft_core.checkpoint.profiles import load_profiles, parse_profiles, summarise
from ft_core.checkpoint.tuning import (
    best_interval,
    feasible_ranges,
    fit_quadratic,
    plan_checkpoint,
    r_squared,
    recovery_points,
)
from ft_core.errors import InfeasibleError, InputError
from ft_core.samples import SAMPLES_DIR

A_COEF = (0.01, 1.5, 60.0)
P_COEF = (0.2, -30.0, 2500.0)
GRID_S = np.linspace(1.0, 60.0, 11)
CI_STAR_S = (-1.5 + math.sqrt(1.5**2 + 4 * 0.01 * 120)) / (2 * 0.01)  # root of A = 180


def example_b_document(noise=(1.0, 0.98, 1.03)) -> dict:
    """Profiles whose medians make the closed_form heuristic's worst case equal A(CI) exactly.

    With U = 0.5, T = 10 s, W = 0 and E = CI: TRT = T + R + (CI + T + R + W) = 20 + 2R + CI, so
    R = (A(CI) - CI - 20) / 2; latency is P(CI). The repetitions scale each value by ``noise`` so
    that the median (not the mean) is the exact value."""
    profiles = []
    for ci in GRID_S:
        ci, a, p = float(ci), float(np.polyval(A_COEF, ci)), float(np.polyval(P_COEF, ci))
        reps = [{"avg_ingress_rate": 400_000.0, "max_ingress_rate": 800_000.0, "avg_latency_ms": p * k,
                 "recovery_time_s": (a - ci - 20) / 2 * k, "warmup_time_s": 0.0} for k in noise]
        profiles.append({"checkpoint_interval_ms": round(ci * 1000, 6), "repetitions": reps})
    return {"job": "example-b", "detection_timeout_s": 10.0, "profiles": profiles}


def test_example_b_polyfit_recovers_the_curves_with_r2_one():  # P9
    a = fit_quadratic(GRID_S, np.polyval(A_COEF, GRID_S))
    p = fit_quadratic(GRID_S, np.polyval(P_COEF, GRID_S))
    assert a.coefficients == pytest.approx(A_COEF, rel=1e-9)
    assert p.coefficients == pytest.approx(P_COEF, rel=1e-9)
    assert a.r2 == pytest.approx(1.0) and p.r2 == pytest.approx(1.0)


def test_example_b_optimiser_returns_the_root_of_a_equals_c_trt():
    a = fit_quadratic(GRID_S, np.polyval(A_COEF, GRID_S))
    p = fit_quadratic(GRID_S, np.polyval(P_COEF, GRID_S))
    ranges = feasible_ranges(a, 1.0, 60.0, 180.0)
    assert ranges == [(1.0, pytest.approx(CI_STAR_S, rel=1e-12))]
    ci = best_interval(p, a, ranges)
    assert ci == pytest.approx(57.759, abs=5e-4)
    assert float(p.predict(ci)) == pytest.approx(1434.45, abs=5e-3)


def test_example_b_end_to_end_from_a_profiles_document():
    plan = plan_checkpoint(parse_profiles(example_b_document()), 180.0, case="max", variant="closed_form")
    assert plan.checkpoint_interval_ms == pytest.approx(57_759.0, abs=0.5)
    assert plan.predicted_latency_ms == pytest.approx(1434.45, abs=5e-3)
    assert plan.predicted_recovery_s <= 180.0 and plan.predicted_recovery_s == pytest.approx(180.0)
    assert plan.r2 == {"latency": pytest.approx(1.0), "recovery": pytest.approx(1.0)}
    assert plan.recovery_model.coefficients == pytest.approx(A_COEF, rel=1e-9)
    assert plan.latency_model.coefficients == pytest.approx(P_COEF, rel=1e-9)
    assert plan.profiled_range_ms == (1000.0, 60000.0)


def test_medians_over_repetitions_feed_the_models():  # P8
    rows = summarise(parse_profiles(example_b_document()))
    assert [r.repetitions for r in rows] == [3] * 11
    assert rows[0].avg_latency_ms == pytest.approx(np.polyval(P_COEF, 1.0))
    assert rows[0].utilisation == 0.5 and rows[0].detection_timeout_s == 10.0


def test_grid_is_the_papers_equidistant_eleven_intervals():  # P7
    ms = [r.checkpoint_interval_ms for r in summarise(parse_profiles(example_b_document()))]
    assert ms[0] == 1000 and ms[-1] == 60000 and np.allclose(np.diff(ms), 5900)


@pytest.mark.parametrize("bound", [70.0, 100.0, 140.0, 180.0])
def test_chosen_interval_is_in_range_feasible_and_beats_a_fine_grid(bound):  # P10
    doc = load_profiles(SAMPLES_DIR / "profiles-example.json")
    plan = plan_checkpoint(doc, bound, variant="eq2")
    lo, hi = plan.profiled_range_ms
    ci_s = plan.checkpoint_interval_ms / 1000
    assert lo <= plan.checkpoint_interval_ms <= hi
    assert plan.predicted_recovery_s <= bound
    assert plan.predicted_latency_ms == pytest.approx(float(plan.latency_model.predict(ci_s)))
    grid = np.linspace(lo / 1000, hi / 1000, 20_001)
    feasible = grid[plan.recovery_model.predict(grid) <= bound]
    assert plan.predicted_latency_ms <= float(np.min(plan.latency_model.predict(feasible))) + 1e-9


def test_relaxing_the_bound_never_shortens_the_interval_while_a_rises_and_p_falls():  # P11
    doc = parse_profiles(example_b_document())
    chosen = [plan_checkpoint(doc, b, variant="closed_form").checkpoint_interval_ms for b in (70, 100, 140, 180)]
    assert chosen == sorted(chosen)
    for bound, ci_ms in zip((70, 100, 140, 180), chosen):
        assert np.polyval(A_COEF, ci_ms / 1000) == pytest.approx(bound)


def test_a_u_shaped_latency_model_picks_its_vertex_not_the_root():
    doc = load_profiles(SAMPLES_DIR / "profiles-example.json")
    plan = plan_checkpoint(doc, 180.0)  # feasible up to ~57 s, latency minimum inside
    c2, c1, _ = plan.latency_model.coefficients
    assert c2 > 0
    assert plan.checkpoint_interval_ms == pytest.approx(-c1 / (2 * c2) * 1000)
    assert plan.feasible_ranges_ms[0][1] > plan.checkpoint_interval_ms


def test_worst_case_is_the_default_and_cases_are_ordered():  # P2 on the models' input
    doc = load_profiles(SAMPLES_DIR / "profiles-example.json")
    assert plan_checkpoint(doc, 150.0).case == "max"
    rows = summarise(doc)
    trt = {c: recovery_points(rows, c, "paper_eq4") for c in ("min", "avg", "max")}
    assert all(a <= b <= c for a, b, c in zip(trt["min"], trt["avg"], trt["max"]))
    plans = {c: plan_checkpoint(doc, 120.0, case=c) for c in ("min", "avg", "max")}
    assert plans["max"].checkpoint_interval_ms < plans["avg"].checkpoint_interval_ms


def test_plan_reports_young_and_daly_from_the_checkpoint_cost_and_mtbf():
    doc = load_profiles(SAMPLES_DIR / "profiles-example.json")
    plan = plan_checkpoint(doc, 150.0)
    cost_ms, mtbf_ms = plan.checkpoint_cost_ms, doc.mtbf_s * 1000
    assert plan.young_interval_ms == pytest.approx(math.sqrt(2 * cost_ms * mtbf_ms))
    assert plan.daly_interval_ms < plan.young_interval_ms
    override = plan_checkpoint(doc, 150.0, mtbf_s=24 * 3600)
    assert override.young_interval_ms == pytest.approx(2 * plan.young_interval_ms)
    no_cost = plan_checkpoint(parse_profiles(example_b_document()), 150.0, variant="closed_form")
    assert no_cost.young_interval_ms is None and no_cost.daly_interval_ms is None


def test_infeasible_bound_names_the_smallest_achievable_recovery_and_where():
    doc = parse_profiles(example_b_document())
    with pytest.raises(InfeasibleError) as exc:
        plan_checkpoint(doc, 50.0, variant="closed_form")
    smallest = np.polyval(A_COEF, 1.0)  # A rises on [1, 60] s: smallest at 1000 ms
    assert f"{smallest:.2f} s" in str(exc.value) and "checkpoint_interval_ms=1000" in str(exc.value)


def test_infeasible_search_never_extrapolates_beyond_the_profiled_range():
    a = fit_quadratic(GRID_S, np.polyval(A_COEF, GRID_S))
    root_62 = (-1.5 + math.sqrt(2.25 + 4 * 0.01 * 2)) / 0.02  # A = 62 at 1.32 s
    assert feasible_ranges(a, 1.0, 60.0, 62.0) == [(1.0, pytest.approx(root_62))]
    assert feasible_ranges(a, 1.0, 60.0, 61.0) == []  # A = 61 at 0.66 s, outside the profiled range


def test_feasible_set_of_a_falling_then_rising_model_is_one_middle_interval():
    dip = fit_quadratic([0, 10, 20, 30, 40], [(x - 20) ** 2 + 50 for x in (0, 10, 20, 30, 40)])
    (a, b), = feasible_ranges(dip, 0.0, 40.0, 150.0)
    assert (a, b) == (pytest.approx(10.0), pytest.approx(30.0))
    hump = fit_quadratic([0, 10, 20, 30, 40], [-(x - 20) ** 2 + 500 for x in (0, 10, 20, 30, 40)])
    assert feasible_ranges(hump, 0.0, 40.0, 400.0) == [(0.0, pytest.approx(10.0)), (pytest.approx(30.0), 40.0)]


def test_r_squared_matches_its_definition_and_is_one_for_constant_data():
    y, f = [1.0, 2.0, 4.0], [1.5, 2.0, 3.5]
    assert r_squared(y, f) == pytest.approx(1 - 0.5 / (14 / 3))
    flat = fit_quadratic([1, 2, 3, 4], [7.0] * 4)
    assert flat.r2 == 1.0 and flat.coefficients == pytest.approx((0, 0, 7), abs=1e-9)


def test_three_intervals_fit_exactly_and_warn():
    doc = example_b_document()
    doc["profiles"] = doc["profiles"][::5]
    plan = plan_checkpoint(parse_profiles(doc), 180.0, variant="closed_form")
    assert plan.r2["latency"] == pytest.approx(1.0) and any("only 3" in w for w in plan.warnings)


def test_utilisation_of_one_or_more_is_rejected_with_the_interval_named():
    doc = example_b_document()
    for rep in doc["profiles"][2]["repetitions"]:
        rep["avg_ingress_rate"] = rep["max_ingress_rate"]
    with pytest.raises(InputError, match=r"checkpoint_interval_ms=12800.*utilisation.*>= 1"):
        plan_checkpoint(parse_profiles(doc), 180.0)


def _without(data: dict, *path):
    *head, last = path
    node = data
    for key in head:
        node = node[key]
    del node[last]
    return data


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(profiles=[]), r"field profiles: no profiles; .*at least 3 distinct"),
    (lambda d: d.update(profiles=d["profiles"][:1]), r"field profiles: only 1 distinct interval\(s\) \(1000 ms\)"),
    (lambda d: d.update(profiles=d["profiles"][:2]), r"only 2 distinct interval"),
    (lambda d: d["profiles"][1].update(checkpoint_interval_ms=1000), r"profiles.1.checkpoint_interval_ms: duplicate"),
    (lambda d: d["profiles"][3]["repetitions"][1].update(avg_latency_ms=-4), r"profiles.3.repetitions.1.avg_latency_ms: .*greater than or equal to 0"),
    (lambda d: d["profiles"][0].update(checkpoint_interval_ms=-1000), r"profiles.0.checkpoint_interval_ms: .*greater than 0"),
    (lambda d: d["profiles"][0]["repetitions"][0].update(max_ingress_rate=0), r"max_ingress_rate: .*greater than 0"),
    (lambda d: d["profiles"][0]["repetitions"][0].update(warmup_time_s=float("nan")), r"warmup_time_s: .*finite"),
    (lambda d: _without(d, "profiles", 4, "repetitions", 2, "recovery_time_s"), r"profiles.4.repetitions.2.recovery_time_s: Field required"),
    (lambda d: _without(d, "profiles"), r"field profiles: Field required"),
    (lambda d: d["profiles"][0]["repetitions"][0].update(recovery_time_ms=1), r"recovery_time_ms: Extra inputs"),
    (lambda d: d["profiles"][0].update(repetitions=[]), r"profiles.0.repetitions: .*at least 1"),
    (lambda d: _without(d, "detection_timeout_s"), r"profiles.0.repetitions.0.detection_timeout_s: missing"),
])
def test_bad_documents_raise_input_error_naming_the_field(mutate, message):
    doc = example_b_document()
    mutate(doc)
    with pytest.raises(InputError, match=message):
        parse_profiles(doc)


def test_per_repetition_detection_timeout_overrides_the_document():
    doc = _without(example_b_document(), "detection_timeout_s")
    for profile in doc["profiles"]:
        for k, rep in enumerate(profile["repetitions"]):
            rep["detection_timeout_s"] = (8.0, 12.0, 10.0)[k]
    assert {r.detection_timeout_s for r in summarise(parse_profiles(doc))} == {10.0}


@pytest.mark.parametrize("bound, field", [(0.0, "max_recovery_s"), (-5.0, "max_recovery_s"), (math.inf, "max_recovery_s")])
def test_bad_bound_raises_input_error(bound, field):
    with pytest.raises(InputError, match=field):
        plan_checkpoint(parse_profiles(example_b_document()), bound)


def test_fit_needs_three_distinct_intervals():
    with pytest.raises(InputError, match="at least 3 distinct"):
        fit_quadratic([1, 1, 2, 2], [1, 2, 3, 4])


def test_json_and_yaml_documents_load_the_same(tmp_path):
    data = example_b_document()
    (tmp_path / "p.json").write_text(json.dumps(data))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    assert load_profiles(tmp_path / "p.json") == load_profiles(tmp_path / "p.yaml")
    with pytest.raises(InputError, match="does not exist"):
        load_profiles(tmp_path / "missing.json")


def test_sample_document_is_realistic():
    doc = load_profiles(SAMPLES_DIR / "profiles-example.json")
    assert len(doc.profiles) >= 5 and all(len(p.repetitions) >= 3 for p in doc.profiles)
    assert all(0 < r.utilisation < 1 for r in summarise(doc))
