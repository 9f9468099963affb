"""The total-recovery-time heuristic (paper 004, Eq. 1-5) and the Young/Daly baselines.

Expected values are the digest's worked examples A and C (/work/shared/notes/paper-004-chiron.md)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ft_core.checkpoint.recovery_time import (
    VARIANTS,
    daly_interval,
    geometric_sum,
    reprocess_time,
    series_length,
    total_recovery_time,
    utilisation,
    young_interval,
)
from ft_core.errors import InputError

# Example A: T=10 s, R=5 s, W=5 s, U=0.5, CI=40 s; E = 0 / 20 / 40 s for the min / avg / max case.
T, R, W, U, CI = 10.0, 5.0, 5.0, 0.5, 40.0
EXAMPLE_A = {
    "paper_eq4": (54.375, 94.375, 134.0625),  # units s, eps 1 s
    "eq2": (34.375, 54.375, 74.0625),
    "closed_form": (35.0, 55.0, 75.0),
    "warmup_elapsed": (40.0, 60.0, 80.0),  # closed_form + W
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case_index, case", [(0, "min"), (1, "avg"), (2, "max")])
def test_example_a_in_seconds_with_a_one_second_threshold(variant, case_index, case):
    e = reprocess_time(CI, case)
    assert e == (0.0, 20.0, 40.0)[case_index]
    got = total_recovery_time(e, T, R, W, U, variant=variant, unit="s", eps_ms=1000.0)
    assert got == pytest.approx(EXAMPLE_A[variant][case_index], abs=1e-9)


@pytest.mark.parametrize("e_s, n_s, n_ms, trt_ms", [
    (0.0, 6, 16, 54_999.39), (20.0, 7, 17, 94_999.39), (40.0, 7, 17, 134_999.08)])
def test_example_a_paper_eq4_term_counts_and_the_paper_threshold_of_1_ms(e_s, n_s, n_ms, trt_ms):
    d_s = e_s + T + R + W
    assert series_length(d_s, U, 1.0) == n_s
    assert series_length(d_s * 1000, U, 1.0) == n_ms
    # the paper's "< 1" with every time in ms, i.e. eps = 1 ms (our default)
    got_ms = total_recovery_time(e_s * 1000, T * 1000, R * 1000, W * 1000, U, unit="ms")
    assert got_ms == pytest.approx(trt_ms, abs=0.005)
    assert total_recovery_time(e_s, T, R, W, U, unit="s") * 1000 == pytest.approx(got_ms, rel=1e-12)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    e=st.floats(0, 600), t=st.floats(0, 300), r=st.floats(0, 300), w=st.floats(0, 120),
    u=st.floats(0, 0.99), eps_ms=st.sampled_from([0.5, 1.0, 10.0, 1000.0]), variant=st.sampled_from(VARIANTS),
)
def test_result_does_not_depend_on_the_time_unit(e, t, r, w, u, eps_ms, variant):
    in_s = total_recovery_time(e, t, r, w, u, variant=variant, unit="s", eps_ms=eps_ms)
    in_ms = total_recovery_time(e * 1000, t * 1000, r * 1000, w * 1000, u, variant=variant, unit="ms", eps_ms=eps_ms)
    in_min = total_recovery_time(e / 60, t / 60, r / 60, w / 60, u, variant=variant, unit="min", eps_ms=eps_ms)
    assert in_ms == pytest.approx(in_s * 1000, rel=1e-9, abs=1e-9)
    assert in_min == pytest.approx(in_s / 60, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("u", [1.0, 1.5])
def test_utilisation_at_or_above_one_gives_infinite_recovery(variant, u):
    assert total_recovery_time(10, T, R, W, u, variant=variant) == math.inf


def test_utilisation_is_eq_1():
    assert utilisation(500_000, 1_250_000) == pytest.approx(0.4)
    with pytest.raises(InputError, match="max_ingress_rate"):
        utilisation(1, 0)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(first=st.floats(1e-3, 1e7), ratio=st.floats(0, 0.999), eps=st.floats(1e-3, 1e3))
def test_stopping_rule_is_the_first_term_below_eps_and_eq4_sums_the_eq3_loop(first, ratio, eps):
    n = series_length(first, ratio, eps)
    terms = [first * ratio ** (k - 1) for k in range(1, n + 1)]  # Eq. 3 in a loop
    assert terms[-1] < eps and all(a >= eps for a in terms[:-1])
    assert geometric_sum(first, ratio, n) == pytest.approx(sum(terms), rel=1e-9, abs=1e-9)  # P4


def test_stopping_rule_with_a_first_term_below_eps_is_one_term():
    assert series_length(0.5, 0.9, 1.0) == 1
    assert series_length(0.0, 0.9, 1.0) == 1
    assert series_length(5.0, 0.0, 1.0) == 2


@settings(max_examples=100, deadline=None, derandomize=True)
@given(e=st.floats(0, 600), t=st.floats(0, 300), r=st.floats(0, 300), w=st.floats(0, 120), u=st.floats(0.01, 0.95))
def test_truncated_series_stay_below_their_infinite_sums_and_above_t_plus_r(e, t, r, w, u):
    d = e + t + r + w
    eq4 = total_recovery_time(e, t, r, w, u, variant="paper_eq4")
    eq2 = total_recovery_time(e, t, r, w, u, variant="eq2")
    closed = total_recovery_time(e, t, r, w, u, variant="closed_form")
    assert t + r <= eq4 <= t + r + d / (1 - u) + 1e-9  # P5 for a_1 = D
    assert t + r <= eq2 <= closed + 1e-9  # P5 for a_1 = D*U; closed_form is Eq. 2's infinite sum
    assert closed == pytest.approx(t + r + d * u / (1 - u))
    warm = total_recovery_time(e, t, r, w, u, variant="warmup_elapsed")
    assert warm == pytest.approx(closed + w)  # the warm-up elapses besides adding its backlog


def test_warmup_elapsed_is_the_sum_of_micro_batches_shrinking_by_u():
    # The first batch after the restart reads the E + T + R backlog and takes W + (E + T + R) U; each later
    # batch reads what arrived during the previous one. Summing the batches one by one gives the variant.
    e, t, r, w, u = 8.0, 5.0, 14.5, 8.0, 0.1
    batch, elapsed = w + (e + t + r) * u, t + r
    while batch > 1e-12:
        elapsed += batch
        batch *= u
    assert total_recovery_time(e, t, r, w, u, variant="warmup_elapsed") == pytest.approx(elapsed)


@pytest.mark.parametrize("variant", VARIANTS)
def test_recovery_rises_with_every_component_and_with_utilisation(variant):  # P3
    base = dict(reprocess=20.0, timeout=10.0, recovery=5.0, warmup=5.0, utilisation=0.5)
    ref = total_recovery_time(**base, variant=variant)
    for name in base:
        bigger = {**base, name: base[name] + (0.2 if name == "utilisation" else 30.0)}
        assert total_recovery_time(**bigger, variant=variant) > ref, name


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("ci", [1.0, 17.5, 60.0])
def test_cases_are_ordered_and_avg_is_the_midpoint_for_the_infinite_series(variant, ci):  # P2, P6
    a = {c: total_recovery_time(reprocess_time(ci, c), T, R, W, 0.4, variant=variant) for c in ("min", "avg", "max")}
    assert a["min"] <= a["avg"] <= a["max"]
    if variant == "closed_form":
        assert a["avg"] == pytest.approx((a["min"] + a["max"]) / 2)
        assert a["max"] - a["min"] == pytest.approx(ci * 0.4 / 0.6)


@pytest.mark.parametrize("mtbf_min, young_min, daly_min", [
    (24 * 60, 120.0, 116.69), (6 * 60, 60.0, 56.71), (15, 12.25, 9.14)])
def test_example_c_young_and_daly_with_a_five_minute_checkpoint(mtbf_min, young_min, daly_min):
    assert young_interval(5, mtbf_min) == pytest.approx(young_min, abs=0.005)
    assert daly_interval(5, mtbf_min) == pytest.approx(daly_min, abs=0.005)
    # unit-free: the same in seconds
    assert daly_interval(300, mtbf_min * 60) == pytest.approx(daly_interval(5, mtbf_min) * 60)


def test_daly_falls_back_to_the_mtbf_when_the_checkpoint_is_too_expensive():
    assert daly_interval(30, 10) == 10


@pytest.mark.parametrize("kwargs, field", [
    (dict(reprocess=-1.0), "reprocess"), (dict(timeout=-5.0), "timeout"), (dict(recovery=math.nan), "recovery"),
    (dict(warmup=math.inf), "warmup"), (dict(utilisation=-0.1), "utilisation"), (dict(variant="eq5"), "variant"),
    (dict(unit="fortnight"), "unit"), (dict(eps_ms=0.0), "eps"),
])
def test_bad_arguments_raise_input_error_naming_the_field(kwargs, field):
    args = dict(reprocess=1.0, timeout=1.0, recovery=1.0, warmup=1.0, utilisation=0.5) | kwargs
    with pytest.raises(InputError, match=field):
        total_recovery_time(**args)


def test_bad_case_and_baseline_inputs_raise_input_error():
    with pytest.raises(InputError, match="case"):
        reprocess_time(10, "median")
    with pytest.raises(InputError, match="checkpoint_cost"):
        young_interval(0, 100)
    with pytest.raises(InputError, match="mtbf"):
        daly_interval(1, -3)
