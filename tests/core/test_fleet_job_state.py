"""A job's state at a glance (ft_core.fleet.job_state): the first rule that holds, in the documented order."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ft_core.fleet.job_state import LAGGING_AFTER_S, STALE_AFTER_S, STATES, job_state

NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)


@pytest.mark.parametrize(("experiment", "ago_s", "lag_s", "state"), [
    ("drill", 10, 500, "experiment"),  # the experiment's lag is its own doing
    ("recovery", None, None, "experiment"),
    (None, None, None, "no progress"),
    (None, STALE_AFTER_S + 1, 1, "down"),
    (None, STALE_AFTER_S + 1, 10_000, "down"),  # no batch runs: down before behind
    (None, STALE_AFTER_S, 1, "running"),  # at the limit: not yet
    (None, 5, LAGGING_AFTER_S + 0.001, "lagging"),
    (None, 5, LAGGING_AFTER_S, "running"),
    (None, 5, None, "running"),  # no watermark (a stateless stream): its batches are all there is to judge
    (None, 5, -3, "running"),  # output ahead of input by the clock's grain
])
def test_each_rule_in_its_order(experiment, ago_s, lag_s, state):
    last = None if ago_s is None else NOW - timedelta(seconds=ago_s)
    lag_ms = None if lag_s is None else lag_s * 1000
    assert job_state(experiment, last, lag_ms, NOW) == state


def test_the_thresholds_are_the_callers_to_change():
    last = NOW - timedelta(seconds=60)
    assert job_state(None, last, 10_000, NOW, stale_after_s=30) == "down"
    assert job_state(None, last, 10_000, NOW, lagging_after_s=5) == "lagging"
    assert set(STATES) == {"experiment", "no progress", "down", "lagging", "running"}
