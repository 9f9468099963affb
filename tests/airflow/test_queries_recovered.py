"""QueriesRecoveredTrigger reads a staged recovery's progress from the history store when the units' drivers
wrote it there (issue 14, item 5): a triggerer that does not see the deployment's folder still judges each
query's relative latency. Real PostgreSQL; the trigger runs in place (no Airflow scheduler is needed). The
units' drivers writing these rows on real Spark is tests/spark/test_units.py's, the whole DAG
tests/airflow/test_recovery_dag.py's."""

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
