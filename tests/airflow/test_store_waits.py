"""Waits that read the history store when the triggerer does not see the job's folders (issue 14, item 5):
QueriesRecoveredTrigger judges a staged recovery's queries from the progress the units' drivers wrote, and a
drill's abort probe bounds the primary's lag from its driver's rows. Real PostgreSQL; the triggers run in
place (no Airflow scheduler is needed). The drivers writing these rows on real Spark are tested in
tests/spark/test_units.py and tests/spark/test_progress_store.py, the whole DAGs in tests/airflow/."""

from __future__ import annotations

import time

from ft_core.store.history import HistoryStore
from ft_core.store.migrations import upgrade
from ft_core.store.stream_progress import BatchProgress
from ftops_provider.sensors.waits import first_event
from ftops_provider.triggers.queries_recovered import QueriesRecoveredTrigger
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


def _write(store: HistoryStore, stream: str, marks: list[tuple[float, float]]) -> None:
    for i, (end, arrived) in enumerate(marks):
        store.record_batch(BatchProgress(stream=stream, app_id="app", batch_id=i, batch_end=end, role="unit",
                                         watermark_ms=1000 + i, watermark_arrived=arrived))


def test_a_query_is_back_from_the_stores_rows_with_the_deployment_out_of_reach(pg_server, pg_conn, monkeypatch, tmp_path):
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    f = time.time() - 200  # the failure
    steady = [(f - 40 + 2 * k, f - 43 + 2 * k) for k in range(20)]  # a batch every 2 s, 3 s behind its input
    # the query unit: stalled by the failure, then 32 s, 12 s and 3 s behind again from f + 30 on
    after = [(f + 30, f - 2), (f + 32, f + 20)] + [(f + 34 + 2 * k, f + 31 + 2 * k) for k in range(10)]
    _write(store, "/d#q", steady + after)
    _write(store, "/d#u", steady + [(f + 28 + 2 * k, f + 20 + 2 * k) for k in range(10)])  # the failed unit: back at f + 28
    trigger = QueriesRecoveredTrigger(str(tmp_path / "not-shared"), timeout_s=20, poll_interval_s=0.5,
                                      watch={"failure_time": f, "failed_upstream": {"q": ["u"]}},
                                      streams={"q": "/d#q", "u": "/d#u"}, ftops_db_conn_id="ftops_db")
    event = first_event(trigger, within_s=20)
    # steady lag 4 s (time-averaged); at f + 34 the lag is 3 s and the next 3 intervals average 4 s: back
    assert event == {"status": "ok", "query_recovered_s": {"q": 34.0}, "source": "history store"}

    # a unit that wrote nothing to the store (a driver without the URL): the folders are asked, and here they
    # are out of reach, so the wait times out naming the query and what the store lacked
    trigger = QueriesRecoveredTrigger(str(tmp_path / "not-shared"), timeout_s=1, poll_interval_s=0.5,
                                      watch={"failure_time": f, "failed_upstream": {"q": ["u", "v"]}},
                                      streams={"q": "/d#q", "u": "/d#u", "v": "/d#v"}, ftops_db_conn_id="ftops_db")
    event = first_event(trigger, within_s=20)
    assert event["status"] == "timeout" and "no progress of /d#v in the history store" in event["missing"][0]


def test_the_lag_probe_reads_the_primarys_rows_when_its_folders_are_out_of_reach(pg_server, pg_conn, tmp_path):
    from ft_core.store.connection import connect
    from ft_core.store.history import JobSpec
    from spark_jobs.drills.waits import DrillWatch, StoreView
    from tests.drill_states import drill_state

    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name="j", workload="topk", test_job=True))
    store.acquire_lease("j", "drill", "dag run ftops_chaos_drill/test", ttl_s=300)
    now = time.time()
    for i, (mark, input_mark) in enumerate([(1_000, 20_000), (2_000, 62_000)]):  # 18 s, then 60 s behind
        store.record_batch(BatchProgress(stream="ftops-j-primary", app_id="app", batch_id=i, batch_end=now - 5 + i,
                                         role="primary", watermark_ms=mark, input_watermark_ms=input_mark))
    gone = tmp_path / "not-shared"
    probes = {"max_lag_s": 30, "lag_after": now - 50, "pipeline": "topk", "input_dir": str(gone / "in"),
              "primary_output": str(gone / "out"), "primary_stream": "ftops-j-primary"}

    def poll(**changes):
        state = drill_state(gone, job="j", ctx={"t_fail": now - 100}, probes={**probes, **changes},
                            capacity_due=now + 600)
        return DrillWatch(state, "capacity_due", StoreView(lambda: HistoryStore(connect(pg_server.url())))).poll()

    fired = poll()
    assert (fired.status, fired.probe, fired.reason) == (
        "aborted", "too_far_behind", "the primary is 60 s behind its input, more than the bound of 30 s")
    assert poll(max_lag_s=90).status == "pending"  # within its bound
    assert poll(primary_stream=None).status == "pending"  # nothing to read: unknown, no abort


def test_a_wait_polls_through_a_history_store_it_cannot_reach(pg_server, pg_conn, tmp_path):
    """A database restart mid-drill costs polls, not the drill (the self-chaos bench's postgres-down-60s: the wait
    failed at its first poll when the store refused the connection, and the safety net had to repair the job)."""
    from ft_core.store.connection import connect
    from ft_core.store.history import JobSpec
    from spark_jobs.drills.waits import DrillWatch, StoreView
    from tests.drill_states import drill_state

    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name="j", workload="topk", test_job=True))
    store.acquire_lease("j", "drill", "dag run ftops_chaos_drill/test", ttl_s=300)
    up = {"now": False}
    down_url = pg_server.url().replace(f":{pg_server.port}/", ":1/")  # nothing listens on port 1

    view = StoreView(lambda: HistoryStore(connect(pg_server.url() if up["now"] else down_url)))
    now = time.time()
    state = drill_state(tmp_path, job="j", ctx={"t_fail": now - 100}, capacity_due=now - 1)
    watch = DrillWatch(state, "capacity_due", view)
    away = watch.poll()
    assert away.status == "pending" and view.problem.startswith("history store not reachable")
    up["now"] = True  # the database is back
    assert watch.poll().status == "ok" and view.problem is None


def test_the_store_watches_fire_on_their_answer_time_out_on_none_and_outlast_a_store_that_does_not_answer(
        pg_server, pg_conn, monkeypatch):
    """The safety net's and the fleet watch's triggers (one StoreWatchTrigger each): an orphaned fault fires the first
    at once; a fleet with no job lost times the second out, saying so; a store that does not answer costs polls, not
    the watch; each serializes to its own class, as the triggerer reloads it."""
    from ft_core.store.history import JobSpec
    from ftops_provider.triggers.fleet_loss import FleetLossTrigger
    from ftops_provider.triggers.orphaned_faults import OrphanedFaultsTrigger

    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name="j", workload="topk", test_job=True))
    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    lost = FleetLossTrigger(timeout_s=1, poll_interval_s=0.2)
    assert first_event(lost, within_s=20) == {"status": "timeout", "missing": ["no job lost"], "timeout_s": 1}
    path, kwargs = lost.serialize()
    assert path == "ftops_provider.triggers.fleet_loss.FleetLossTrigger" and kwargs["ftops_db_conn_id"] == "ftops_db"

    store.acquire_lease("j", "drill", "a drill that died", ttl_s=1)
    store.open_fault("j", "drill", 1, "a drill that died", "domain_down", "rack-a", {"kind": "give_back"},
                     undo_within_s=60)
    time.sleep(1.5)  # its holder's lease lapsed: the fault is orphaned
    orphaned = OrphanedFaultsTrigger(timeout_s=20, poll_interval_s=0.2)
    assert first_event(orphaned, within_s=20) == {"status": "ok", "orphaned": 1}
    assert orphaned.serialize()[0] == "ftops_provider.triggers.orphaned_faults.OrphanedFaultsTrigger"

    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", "postgresql://ftops:x@127.0.0.1:9/ftops")  # nothing listens there
    started = time.monotonic()
    away = OrphanedFaultsTrigger(timeout_s=1, poll_interval_s=0.2)
    assert first_event(away, within_s=30)["status"] == "timeout" and time.monotonic() - started < 30
