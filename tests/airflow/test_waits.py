"""A drill's deferred waits (ftops_provider.sensors.waits.DrillWaitSensor) defer only a wait that is still on after
their short window: one that ends sooner finishes in its worker slot, out of the reach of Airflow 3.3's lost-resume
race (apache/airflow#71580). The real trigger (DrillWaitTrigger) runs in place against a real history store, where
the drill's job is registered and its lease held; no Airflow scheduler is needed for this."""

from __future__ import annotations

import time

import pytest
from airflow.sdk.exceptions import TaskDeferred

from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from ftops_provider.sensors.waits import SHORT_WAIT_S, DrillAborted, DrillWaitSensor
from tests.drill_states import drill_state
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


class _Run:
    """What a sensor reads of its DAG run here: the XCom of the step before it (the drill's state)."""

    map_index = -1  # the sensor pulls the XCom of its own map index (the job's drill in the DAG's mapped group)

    def __init__(self, state):
        self.state, self.pushed = state.model_dump(mode="json"), {}

    def xcom_pull(self, task_ids: str, key: str = "return_value", map_indexes: int | None = None):
        assert map_indexes == self.map_index
        return self.state

    def xcom_push(self, key: str, value) -> None:
        self.pushed[key] = value


@pytest.fixture
def store(pg_server, pg_conn, monkeypatch):
    upgrade(pg_conn)
    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    s = HistoryStore(pg_conn)
    s.register_job(JobSpec(name="alerts", workload="topk", test_job=True))
    s.acquire_lease("alerts", "drill", "dag run ftops_chaos_drill/test", ttl_s=300)
    return s


def _due_in(tmp_path, seconds: float):
    return {"ti": _Run(drill_state(tmp_path, ctx={"t_fail": time.time()}, capacity_due=time.time() + seconds))}


def _sensor(short_wait_s: float, timeout_s: float = 300) -> DrillWaitSensor:
    return DrillWaitSensor(task_id="due", wait="capacity_due", state_task_id="inject_failure", short_wait_s=short_wait_s,
                           timeout_s=timeout_s, poll_interval_s=0.5)


def test_a_wait_that_ends_within_the_short_window_finishes_without_deferring(store, tmp_path):
    assert SHORT_WAIT_S >= 20  # covers a drill's default 20-30 s replacement delay
    t0 = time.time()
    event = _sensor(10).execute(_due_in(tmp_path, 2))
    assert event["status"] == "ok" and 1.5 <= time.time() - t0 < 10


def test_a_moment_just_past_the_short_window_is_still_waited_for_in_place(store, tmp_path):
    # 3 s away with a 1 s window: deferring would leave a deferral that ends 2 s after it starts
    t0 = time.time()
    event = _sensor(1).execute(_due_in(tmp_path, 3))
    assert event["status"] == "ok" and 2.5 <= time.time() - t0 < 10


def test_a_longer_wait_defers_after_the_short_window_keeping_the_deadline_it_started_with(store, tmp_path):
    t0 = time.time()
    with pytest.raises(TaskDeferred) as deferred:
        _sensor(1).execute(_due_in(tmp_path, 120))
    assert 0.9 <= time.time() - t0 < 10
    trigger = deferred.value.trigger
    assert trigger.wait == "capacity_due" and trigger.state["capacity_due"] == pytest.approx(t0 + 120, abs=2)
    assert trigger.started_at == pytest.approx(t0, abs=2) and trigger.timeout_s == 300  # the in-place second counts
    assert deferred.value.method_name == "execute_complete"


def test_a_halt_aborts_a_drills_wait_and_says_who_halted(store, tmp_path):
    store.halt("game day cancelled", "ops@example")
    context = _due_in(tmp_path, 120)
    with pytest.raises(DrillAborted, match="halted by ops@example: game day cancelled"):
        _sensor(5).execute(context)
    assert context["ti"].pushed["abort_probe"] == "halted"


def test_a_drill_that_lost_its_lease_stops_waiting(store, tmp_path):
    store.release_lease("alerts", "dag run ftops_chaos_drill/test")
    store.acquire_lease("alerts", "recovery", "dag run ftops_incremental_recovery/r1", ttl_s=300)
    context = _due_in(tmp_path, 120)
    with pytest.raises(DrillAborted, match="lost its lease on alerts"):
        _sensor(5).execute(context)
    assert context["ti"].pushed["abort_probe"] == "lease_lost"


def test_a_steady_wait_that_timed_out_hands_its_reason_to_the_drills_finish(store, tmp_path):
    """A new user's first drill was recorded "not drilled: the steady state did not hold (see wait_steady's log)":
    the reason (the replica 70 s behind its input) was only in the task log. The wait now hands it on; the finish
    records it."""
    from ftops_provider.operators.drills import FinishDrillOperator
    from ftops_provider.sensors.waits import WaitTimeout

    context = _due_in(tmp_path, 120)
    steady = DrillWaitSensor(task_id="wait_steady", wait="steady", state_task_id="preflight", timeout_s=180)
    why = "steady state: the replica is 70 s behind its input, more than 60 s: not drilling a job that is not keeping up"
    with pytest.raises(WaitTimeout, match="gave up after 180 s"):
        steady.execute_complete(context, {"status": "timeout", "missing": [why]})
    assert context["ti"].pushed["missing"] == why

    class _Finish(_Run):  # what the finish pulls: the wait's reason
        def xcom_pull(self, task_ids: str, key: str = "return_value", map_indexes: int | None = None):
            return context["ti"].pushed.get(key) if task_ids == "wait_steady" else None

    outcome = FinishDrillOperator(task_id="finish")._outcome(drill_state(tmp_path), {"wait_steady": "failed"},
                                                             _Finish(drill_state(tmp_path)))
    assert outcome.verdict == "aborted" and outcome.reasons == [f"not drilled: the steady state did not hold: {why}"]
