"""The deferred waits (ftops_provider.sensors.waits) defer only a wait that is still on after their short
window: one that ends sooner finishes in its worker slot, out of the reach of Airflow 3.3's lost-resume race
(apache/airflow#71580). Real triggers (MomentTrigger) run in place; no Airflow scheduler is needed for this."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from airflow.sdk.exceptions import TaskDeferred

from ftops_provider.sensors.waits import SHORT_WAIT_S, WaitUntilSensor


def _in(seconds: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).isoformat()


def test_a_wait_that_ends_within_the_short_window_finishes_without_deferring():
    assert SHORT_WAIT_S >= 20  # covers a drill's default 20-30 s replacement delay
    t0 = time.time()
    event = WaitUntilSensor(task_id="due", moment=_in(2), short_wait_s=10).execute({})
    assert event["status"] == "ok" and 1.5 <= time.time() - t0 < 10


def test_a_moment_just_past_the_short_window_is_still_waited_for_in_place():
    # 3 s away with a 1 s window: deferring would leave a deferral that ends 2 s after it starts
    t0 = time.time()
    event = WaitUntilSensor(task_id="due", moment=_in(3), short_wait_s=1).execute({})
    assert event["status"] == "ok" and 2.5 <= time.time() - t0 < 10


def test_a_longer_wait_defers_after_the_short_window_with_its_deadline_kept():
    t0 = time.time()
    with pytest.raises(TaskDeferred) as deferred:
        WaitUntilSensor(task_id="due", moment=_in(120), short_wait_s=1).execute({})
    assert 0.9 <= time.time() - t0 < 10
    assert deferred.value.trigger.moment == pytest.approx(t0 + 120, abs=2)
    assert deferred.value.method_name == "execute_complete"


def test_a_wait_that_defers_keeps_the_deadline_it_started_with():
    from ftops_provider.sensors.waits import OutputArrivalSensor

    t0 = time.time()
    with pytest.raises(TaskDeferred) as deferred:
        OutputArrivalSensor(task_id="tentative", folder="/nonexistent-ftops-test", timeout_s=300, short_wait_s=1).execute({})
    trigger = deferred.value.trigger
    assert trigger.started_at == pytest.approx(t0, abs=2) and trigger.timeout_s == 300  # the in-place second counts
