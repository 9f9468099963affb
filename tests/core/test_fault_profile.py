"""Fault profiles (thesis 002's fault model) and their seeded schedules."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from statistics import NormalDist

import pytest

from ft_core.errors import InputError
from ft_core.redundancy.fault_profile import (
    Exponential,
    Gaussian,
    fault_schedule,
    load_fault_profile,
    parse_fault_profile,
)
from tests.conftest import SAMPLES

LISTING_31 = {"operators": {"bolt1": {"instances": [0, 1], "slowdown": {
    "every_s": {"mean": 1.0, "min": 0.0001, "max": 900},
    "magnitude_ms": {"mean": 150, "stddev": 37.5, "min": 75, "max": 300}}}}}


def test_sample_profile_validates_with_its_fault_processes():
    profile = load_fault_profile(SAMPLES / "fault-profile.yaml")
    assert set(profile.operators) == {"aggregate", "parse"} and set(profile.domains) == {"rack-a"}
    assert profile.operators["aggregate"].slowdown.magnitude_ms.stddev == 37.5


def test_schedule_is_deterministic_sorted_and_inside_the_duration():
    profile = load_fault_profile(SAMPLES / "fault-profile.yaml")
    events = fault_schedule(profile, 600, seed=11)
    assert events == fault_schedule(profile, 600, seed=11)
    assert events != fault_schedule(profile, 600, seed=12)
    assert [e.time_s for e in events] == sorted(e.time_s for e in events)
    assert all(0 <= e.time_s < 600 for e in events)
    assert {e.target for e in events if e.kind == "slowdown"} == {"aggregate[0]", "aggregate[1]"}
    domain = [e for e in events if e.kind == "domain"]
    assert [(e.target, e.time_s, e.duration_s) for e in domain] == [("rack-a", 300.0, 60.0)]


def test_adding_a_target_leaves_the_other_schedules_unchanged():
    base = parse_fault_profile(LISTING_31)
    more = parse_fault_profile({**LISTING_31, "domains": {"rack-b": {"rate_per_hour": 30}}})
    slowdowns = [e for e in fault_schedule(more, 120, 3) if e.kind == "slowdown"]
    assert slowdowns == fault_schedule(base, 120, 3)


def test_listing31_distributions_match_the_thesis_model():
    # one instance, a long run: exponential gaps (mean 1 s, truncated to [100 us, 900 s]) and
    # Gaussian magnitudes (150 +- 37.5 ms, truncated to [75, 300] ms)
    doc = {"operators": {"bolt1": {**LISTING_31["operators"]["bolt1"], "instances": [0]}}}
    events = fault_schedule(parse_fault_profile(doc), 20_000, seed=5)
    gaps = [b.time_s - (a.time_s + a.magnitude_ms / 1000) for a, b in zip(events, events[1:])]
    assert min(gaps) >= 0.0001 - 1e-12 and max(gaps) <= 900
    assert statistics.mean(gaps) == pytest.approx(1.0, rel=0.03)
    magnitudes = [e.magnitude_ms for e in events]
    assert 75 <= min(magnitudes) and max(magnitudes) <= 300
    # the truncated normal's mean: 150 + 37.5 (phi(-2) - phi(4)) / (Phi(4) - Phi(-2))
    z = NormalDist()
    truncated_mean = 150 + 37.5 * (z.pdf(-2) - z.pdf(4)) / (z.cdf(4) - z.cdf(-2))
    assert statistics.mean(magnitudes) == pytest.approx(truncated_mean, rel=0.01)
    assert len(events) == pytest.approx(20_000 / (1.0 + truncated_mean / 1000), rel=0.03)


def test_faults_of_one_target_never_overlap():
    doc = {"operators": {"parse": {"link_outage": {"every_s": {"mean": 2}, "duration_ms": {"mean": 1500, "stddev": 500}},
                                   "crash": {"rate_per_hour": 600, "down_s": {"mean": 5, "stddev": 1}}}}}
    events = fault_schedule(parse_fault_profile(doc), 3600, seed=1)
    by_kind = defaultdict(list)
    for e in events:
        by_kind[e.kind].append(e)
    assert by_kind["link_outage"] and by_kind["crash"]
    for series in by_kind.values():
        assert all(b.time_s >= a.time_s + a.duration_s for a, b in zip(series, series[1:]))


def test_rate_per_hour_is_an_exponential_with_mean_3600_over_the_rate():
    doc = {"domains": {"rack-a": {"rate_per_hour": 60}}}  # one a minute, no downtime
    events = fault_schedule(parse_fault_profile(doc), 600_000, seed=2)
    gaps = [b.time_s - a.time_s for a, b in zip(events, events[1:])]
    assert statistics.mean(gaps) == pytest.approx(60, rel=0.05) and all(e.duration_s is None for e in events)


def test_fixed_times_are_used_as_given_within_the_duration():
    doc = {"operators": {"agg[2]": {"slowdown": {"at_s": [30, 5, 90], "magnitude_ms": {"mean": 200, "stddev": 0}}}}}
    events = fault_schedule(parse_fault_profile(doc), 60, seed=0)
    assert [(e.time_s, e.target, e.magnitude_ms) for e in events] == [(5.0, "agg[2]", 200.0), (30.0, "agg[2]", 200.0)]


def test_truncated_samplers_stay_in_range_and_handle_a_zero_stddev():
    import random

    rng = random.Random(0)
    g = Gaussian(mean=-50, stddev=100)  # truncated at 0: only the upper tail remains
    assert all(x >= 0 for x in (g.sample(rng) for _ in range(2000)))
    e = Exponential(mean=10, min=5, max=6)
    assert all(5 <= x <= 6 for x in (e.sample(rng) for _ in range(2000)))
    assert Gaussian(mean=7, stddev=0).sample(rng) == 7


@pytest.mark.parametrize("doc, message", [
    ({"operators": {"a": {"slowdown": {"every_s": {"mean": 1}}}}}, "operators.a.slowdown.magnitude_ms: Field required"),
    ({"operators": {"a": {"slowdown": {"every_s": {"mean": 1}, "rate_per_hour": 3, "magnitude_ms": {"mean": 1, "stddev": 1}}}}},
     "operators.a.slowdown: give exactly one of every_s, rate_per_hour, at_s"),
    ({"operators": {"a": {"slowdown": {"every_s": {"mean": 0}, "magnitude_ms": {"mean": 1, "stddev": 1}}}}},
     "operators.a.slowdown.every_s.mean: Input should be greater than 0"),
    ({"operators": {"a": {"slowdown": {"every_s": {"mean": 1}, "magnitude_ms": {"mean": 1, "stddev": -1}}}}},
     "operators.a.slowdown.magnitude_ms.stddev"),
    ({"operators": {"a": {"slowdown": {"every_s": {"mean": 1}, "magnitude_ms": {"mean": 100, "stddev": 1, "min": 500}}}}},
     "operators.a.slowdown.magnitude_ms: \\[500, inf\\] has no probability"),
    ({"operators": {"a": {"slowdown": {"every_s": {"mean": 1}, "magnitude_ms": {"mean": 9, "stddev": 0, "max": 5}}}}},
     "with stddev 0 the mean"),
    ({"operators": {"a": {"crash": {"rate_per_hour": 1}, "timing": {}}}}, "operators.a.timing: Extra inputs are not permitted"),
    ({"operators": {"a[0]": {"instances": [1], "crash": {"rate_per_hour": 1}}}}, "operators.a\\[0\\].instances: 'a\\[0\\]' is already a task"),
    ({"operators": {"a": {"instances": [1, 1], "crash": {"rate_per_hour": 1}}}}, "instance ids must be distinct"),
    ({"operators": {"a": {}}}, "operators.a: no fault given"),
    ({"domains": {"rack-a": {"at_s": [-1]}}}, "domains.rack-a.at_s.0: Input should be greater than or equal to 0"),
    ([1, 2], "fault profile: expected an object"),
])
def test_bad_profiles_name_the_field(doc, message):
    with pytest.raises(InputError, match=message):
        parse_fault_profile(doc)


def test_bad_schedule_arguments():
    profile = parse_fault_profile(LISTING_31)
    with pytest.raises(InputError, match="duration"):
        fault_schedule(profile, -1, 0)
    with pytest.raises(InputError, match="duration"):
        fault_schedule(profile, math.inf, 0)
    with pytest.raises(InputError, match="seed"):
        fault_schedule(profile, 1, 1.5)
    assert fault_schedule(profile, 0, 0) == []
