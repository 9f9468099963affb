"""Progress through the history store (issue 14, item 5): a driver with ``FTOPS_DATABASE_URL`` writes one row per
micro-batch (spark_jobs.runtime.progress_store), and the drill's waits read the stream there, with the job's
folders out of their reach; a store that does not answer costs rows, never the stream. Real Spark (in-process
local[2]), real PostgreSQL, the drill engine's wait conditions polled in place (no Airflow scheduler is needed)."""

from __future__ import annotations

import time

import pytest

from ft_core.store.migrations import upgrade
from ft_core.store.stream_progress import iso_epoch_s
from spark_jobs.pipeline import sample_input
from spark_jobs.pipeline.input_files import input_watermark
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.metrics import read_metrics
from spark_jobs.pipeline.sink import closed_rows, read_output
from spark_jobs.runtime.stream_lag import file_source_lag
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

STREAM = "ftops-test-progress"


def _run(spark, tmp_path, **kw):
    from spark_jobs.runtime.run_pipeline import JobConfig, run

    config = JobConfig("topk", "primary", tmp_path / "in", tmp_path / "out", checkpoint=tmp_path / "ck",
                       available_now=True, query_name=STREAM, **{"max_files_per_trigger": 4, **kw})
    return run(config, spark=spark)


@pytest.fixture
def streamed(spark, tmp_path, pg_server, pg_conn, monkeypatch):
    """A finished available-now run of topk whose driver wrote its progress to the store; (t0, rows)."""
    upgrade(pg_conn)
    monkeypatch.setenv("FTOPS_DATABASE_URL", pg_server.url())
    sample_input.write_seconds(load_workload("topk", []), tmp_path / "in", 20)
    t0 = time.time()
    _run(spark, tmp_path)
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("""SELECT batch_id, app_id, role, output_rows, input_files, lag_files, watermark_ms,
                              extract(epoch FROM batch_end)::float8, input_watermark_ms
                       FROM ftops_stream_progress WHERE stream = %s ORDER BY batch_id""",
                    (STREAM,))
        rows = cur.fetchall()
    return t0, rows


def test_every_micro_batch_is_a_row_with_its_output_backlog_and_watermark(streamed, tmp_path):
    t0, rows = streamed
    metrics = read_metrics(tmp_path / "out" / "_metrics" / "metrics.jsonl")
    assert [r[0] for r in rows] == [m["batch_id"] for m in metrics] and len(rows) >= 3
    assert {r[1] for r in rows} == {metrics[0]["app_id"]} and {r[2] for r in rows} == {"primary"}
    assert sum(r[3] for r in rows) == len(read_output(tmp_path / "out")) > 0  # rows the sink wrote, per batch
    total = file_source_lag(tmp_path / "ck", tmp_path / "in").input_files
    assert rows[0][5] > 0 and rows[-1][4] == total and rows[-1][5] == 0  # 4 files a batch: the backlog drains
    assert all(t0 < r[7] <= time.time() for r in rows)
    marks = [m["watermark"] for m in metrics]
    assert max(r[6] for r in rows) == max(round(iso_epoch_s(w) * 1000) for w in marks if w)
    # the input's watermark beside the newest row: the whole input was there from the start
    assert rows[-1][8] == input_watermark(load_workload("topk", []), tmp_path / "in")


def test_the_drill_waits_read_the_store_with_the_jobs_folders_out_of_reach(streamed, tmp_path, pg_server):
    from ft_core.store.connection import connect
    from ft_core.store.history import HistoryStore
    from ft_core.store.stream_progress import BatchProgress
    from spark_jobs.drills.engine import Hypothesis
    from spark_jobs.drills.waits import StoreView, condition
    from tests.drill_states import drill_state

    t0, rows = streamed
    gone = tmp_path / "not-shared"  # what a triggerer on another host sees of the job's folders: nothing
    view = StoreView(lambda: HistoryStore(connect(pg_server.url())))
    mark = max(r[6] for r in rows)
    steady = Hypothesis(lag_s=1.0, bound_s=60, lag_files=0, checked_at=t0)

    def state(**ctx):
        return drill_state(gone, ctx={"t_fail": t0, "t_capacity": t0, "backlog_ms": mark, **ctx},
                           probes={"primary_stream": STREAM}, hypothesis=steady)

    caught = condition(state(), "caught_up")
    assert caught(view) == (False, "caught up; waiting for one more micro-batch to confirm it")  # over batches, not polls
    assert caught(view)[0] is False  # the same newest batch again confirms nothing
    HistoryStore(connect(pg_server.url())).record_batch(BatchProgress(
        stream=STREAM, app_id=rows[-1][1], batch_id=rows[-1][0] + 1, role="primary", batch_end=time.time(),
        watermark_ms=mark, input_files=rows[-1][4], lag_files=0))
    ok, seen = caught(view)
    assert ok and seen["source"] == "history store"
    late = condition(state(backlog_ms=mark + 10**9), "caught_up")
    assert f"watermark not yet at {mark + 10**9}" in late(view)[1]
    arrived = condition(state(replica_output=str(gone / "out"), replica_stream=STREAM), "tentative")
    ok, seen = arrived(view)
    first_with_output = min(r[7] for r in rows if r[3] > 0)
    assert ok and seen["source"] == "history store" and seen["first_s"] == pytest.approx(first_with_output - t0, abs=0.01)
    # a stream that has written no progress (a driver without the store's URL) is read from its folders
    folder = condition(state(replica_output=str(tmp_path / "out"), replica_stream="never-reported"), "tentative")
    ok, seen = folder(view)
    assert ok and seen["source"] == "folder"
    view.close()


def test_a_store_that_does_not_answer_costs_the_rows_not_the_stream(spark, tmp_path, monkeypatch, capfd):
    from spark_jobs.runtime.run_pipeline import JobConfig, run

    monkeypatch.setenv("FTOPS_DATABASE_URL", "postgresql://ftops:s3cret-pass@127.0.0.1:1/ftops")  # nothing listens
    sample_input.write_seconds(load_workload("topk", []), tmp_path / "in", 12)
    _run(spark, tmp_path)
    meta = run(JobConfig("topk", "reference", tmp_path / "in", tmp_path / "ref"), spark=spark)
    assert read_output(tmp_path / "out") == closed_rows(read_output(tmp_path / "ref"), meta["closed_until_ms"])
    err = capfd.readouterr().err
    assert err.count("progress not written to the history store") == 1  # once per outage, not per batch
    assert "s3cret-pass" not in err


def test_after_a_database_restart_the_driver_writes_its_progress_again(spark, tmp_path, pg_server, pg_conn, monkeypatch,
                                                                       capfd):
    import threading

    upgrade(pg_conn)
    pg_conn.close()
    monkeypatch.setenv("FTOPS_DATABASE_URL", pg_server.url())
    sample_input.write_seconds(load_workload("topk", []), tmp_path / "in", 30)

    ran = threading.Event()

    def restart_once_rows_arrive() -> None:
        from ft_core.store.connection import connect

        while not ran.is_set():  # the first rows are in: the writer holds a connection now
            with connect(pg_server.url()) as conn, conn.cursor() as cur:
                cur.execute("SELECT count(*) FROM ftops_stream_progress")
                if cur.fetchone()[0] >= 2:
                    break
            time.sleep(0.2)
        else:
            return
        pg_server.stop()
        time.sleep(4)  # a few micro-batches end while the store is down
        pg_server.start()

    restarter = threading.Thread(target=restart_once_rows_arrive)
    restarter.start()
    try:
        _run(spark, tmp_path, max_files_per_trigger=1)
    finally:
        ran.set()
        restarter.join(60)
    from ft_core.store.connection import connect

    with connect(pg_server.url()) as conn, conn.cursor() as cur:
        cur.execute("SELECT max(batch_id), count(*) FROM ftops_stream_progress WHERE stream = %s", (STREAM,))
        last, count = cur.fetchone()
    metrics = read_metrics(tmp_path / "out" / "_metrics" / "metrics.jsonl")
    assert last == metrics[-1]["batch_id"]  # written again after the restart, to the last batch
    assert 2 <= count <= len(metrics)
    err = capfd.readouterr().err
    assert err.count("progress not written to the history store") == 1 and "answers again" in err


def _report(batch_id: int, end_s: float, ran: bool = True):
    """What the listener reads of a ``StreamingQueryProgress`` (these listener tests need no query: Spark's own
    reports are the tests above)."""
    from datetime import datetime, timezone
    from types import SimpleNamespace

    stamp = datetime.fromtimestamp(end_s - 1, timezone.utc).isoformat().replace("+00:00", "Z")
    return SimpleNamespace(name=STREAM, batchId=batch_id, timestamp=stamp, batchDuration=1000, numInputRows=10,
                           eventTime={"watermark": "1970-01-01T00:00:05.000Z"},
                           durationMs={"addBatch": 5, "triggerExecution": 9} if ran else {"triggerExecution": 1})


def test_the_listener_skips_idle_reports_and_counts_the_backlog_for_its_newest_row(tmp_path, pg_server, pg_conn):
    from types import SimpleNamespace

    from spark_jobs.runtime.progress_store import StoreProgressListener

    upgrade(pg_conn)
    (tmp_path / "in").mkdir()
    for i in range(3):
        (tmp_path / "in" / f"f{i}.json").write_text("{}\n")
    listener = StoreProgressListener(pg_server.url(), STREAM, app_id="app-t", role="primary", output_rows=lambda b: 2 * b,
                                     checkpoint=tmp_path / "ck", input_dir=tmp_path / "in")
    now = time.time()
    for report in (_report(0, now - 2), _report(1, now - 1, ran=False), _report(1, now)):
        listener.onQueryProgress(SimpleNamespace(progress=report))  # as Spark's listener bus calls it
    t0 = time.monotonic()
    listener.close(last_batch=0)  # batch 0 was heard: no wait for a timeout
    assert time.monotonic() - t0 < 5
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("SELECT batch_id, output_rows, watermark_ms, input_files, lag_files FROM ftops_stream_progress "
                    "WHERE stream = %s ORDER BY batch_id", (STREAM,))
        rows = cur.fetchall()
    assert [r[:3] for r in rows] == [(0, 0, 5000), (1, 2, 5000)]  # the idle report of batch 1 wrote nothing
    assert rows[-1][3:] == (3, 3)  # no batch committed: all three files are behind


def test_a_store_that_refuses_the_rows_is_told_once_and_not_retried(tmp_path, pg_server, pg_conn, capfd):
    from types import SimpleNamespace

    from spark_jobs.runtime.progress_store import StoreProgressListener

    pg_conn.commit()  # an emptied database, never migrated: no ftops_stream_progress table
    listener = StoreProgressListener(pg_server.url(), STREAM, app_id="app-t", role="primary", output_rows=lambda b: 0)
    for b in range(4):
        listener.onQueryProgress(SimpleNamespace(progress=_report(b, time.time())))
        time.sleep(0.2)
    listener.close(last_batch=3)
    err = capfd.readouterr().err
    assert err.count("the history store refuses progress rows") == 1 and "ftops db upgrade" in err
    assert "not written to the history store" not in err  # not taken for an outage


def test_a_surprise_in_one_batchs_row_costs_that_row_not_the_runs_progress(tmp_path, pg_server, pg_conn, capfd):
    from types import SimpleNamespace

    from spark_jobs.runtime.progress_store import StoreProgressListener

    upgrade(pg_conn)
    calls = []

    def arrival(watermark_ms: int) -> float:  # fails once, as a callback with a bug would
        calls.append(watermark_ms)
        if len(calls) == 1:
            raise RuntimeError("a callback's bug")
        return time.time()

    listener = StoreProgressListener(pg_server.url(), STREAM, app_id="app-t", role="primary", output_rows=lambda b: 1,
                                     watermark_arrival=arrival)
    for b in range(3):
        listener.onQueryProgress(SimpleNamespace(progress=_report(b, time.time())))
        time.sleep(0.3)  # one batch per write, as batches come seconds apart
    listener.close(last_batch=2)
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("SELECT batch_id FROM ftops_stream_progress WHERE stream = %s ORDER BY batch_id", (STREAM,))
        assert [r[0] for r in cur.fetchall()] == [1, 2]  # the writer outlived batch 0's failure
    err = capfd.readouterr().err
    assert err.count("not written (RuntimeError: a callback's bug)") == 1
