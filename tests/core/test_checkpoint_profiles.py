"""The profiles document's interval count: three for the planner (the default), fewer for a
profiling run that measured fewer intervals (``min_intervals``)."""

from __future__ import annotations

import pytest

from ft_core.checkpoint.profiles import MIN_INTERVALS, parse_profiles, summarise
from ft_core.errors import InputError


def _doc(*intervals_ms: float) -> dict:
    rep = {"avg_ingress_rate": 100, "max_ingress_rate": 400, "avg_latency_ms": 900, "recovery_time_s": 8,
           "warmup_time_s": 3}
    return {"detection_timeout_s": 5, "profiles": [{"checkpoint_interval_ms": ci, "repetitions": [rep]}
                                                   for ci in intervals_ms]}


def test_default_still_needs_three_intervals_for_the_planner():
    assert MIN_INTERVALS == 3
    with pytest.raises(InputError, match="only 2 distinct interval.*needs at least 3"):
        parse_profiles(_doc(2000, 5000))
    assert len(parse_profiles(_doc(2000, 5000, 10000)).profiles) == 3


def test_a_two_interval_profiling_run_is_valid_with_min_intervals_two():
    doc = parse_profiles(_doc(5000, 2000), min_intervals=2)
    assert [s.checkpoint_interval_ms for s in summarise(doc)] == [2000.0, 5000.0]
    assert summarise(doc)[0].utilisation == 0.25


def test_min_intervals_still_rejects_too_few_duplicates_and_nonsense():
    with pytest.raises(InputError, match="only 1 distinct interval.*at least 2"):
        parse_profiles(_doc(2000), min_intervals=2)
    with pytest.raises(InputError, match="no profiles"):
        parse_profiles(_doc(), min_intervals=1)
    with pytest.raises(InputError, match="duplicate interval 2000"):
        parse_profiles(_doc(2000, 2000), min_intervals=1)
    with pytest.raises(InputError, match="min_intervals: must be at least 1"):
        parse_profiles(_doc(2000), min_intervals=0)
