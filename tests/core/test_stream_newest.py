"""Each stream's newest micro-batch (migration 014) on the real PostgreSQL history store: a job attached to unchanged
code shows its queries' progress in the fleet's states (they write ``ftops-<job>-<query>``, not the primary's stream),
a job whose name another job's name starts with keeps its own, a replayed batch never moves the newest back, and a
store migrated from version 13 finds its streams' newest batches and its attached jobs' queries."""

from __future__ import annotations

import shutil
import time
from datetime import datetime, timezone

from ft_core.fleet.job_state import states_of
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import sql_dir, upgrade
from ft_core.store.stream_progress import BatchProgress
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


def _batch(stream: str, batch_id: int, ago_s: float, *, role: str = "attached", job: str | None = None,
           lag_ms: int = 1000) -> BatchProgress:
    return BatchProgress(stream=stream, app_id="app-1", batch_id=batch_id, role=role, batch_end=time.time() - ago_s,
                         watermark_ms=50_000, input_watermark_ms=50_000 + lag_ms, job=job)


def _states(store: HistoryStore) -> dict[str, tuple]:
    return {r["job"]: (r["last_batch_at"] is not None, r["lag_ms"]) for r in store.fleet_states()}


def test_an_attached_jobs_queries_give_its_state_and_a_longer_named_job_keeps_its_own(pg_conn):
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    for name in ("clicks", "clicks-eu", "topk"):
        store.register_job(JobSpec(name=name, workload="w"))
    assert _states(store) == {"clicks": (False, None), "clicks-eu": (False, None), "topk": (False, None)}

    store.record_batch(_batch("ftops-clicks-per-region", 1, 10, job="clicks", lag_ms=4000))
    store.record_batch(_batch("ftops-clicks-totals", 1, 30, job="clicks", lag_ms=150_000))  # its other query, behind
    store.record_batch(_batch("ftops-clicks-eu-per-region", 1, 600, job="clicks-eu", lag_ms=2000))
    store.record_batch(_batch("ftops-topk-primary", 3, 5, role="primary", lag_ms=500))
    store.record_batch(_batch("ftops-topk-replica-p1", 3, 1, role="replica", lag_ms=99_000))  # not the job's state
    rows = {r["job"]: r for r in store.fleet_states()}
    assert rows["clicks"]["lag_ms"] == 150_000 and time.time() - rows["clicks"]["last_batch_at"].timestamp() < 60
    assert rows["clicks-eu"]["lag_ms"] == 2000 and time.time() - rows["clicks-eu"]["last_batch_at"].timestamp() > 500
    assert rows["topk"]["lag_ms"] == 500
    states = states_of(store.fleet_states(), datetime.now(timezone.utc))
    assert states["clicks"] == "lagging" and states["clicks-eu"] == "down" and states["topk"] == "running"
    assert {r["job"]: r["lag_ms"] for r in store.fleet_overview(["clicks"])} == {"clicks": 150_000}

    # a batch written late (it ended before the newest) is recorded, and the stream's newest stays the newest
    store.record_batch(_batch("ftops-topk-primary", 2, 3000, role="primary", lag_ms=70_000))
    assert {r["job"]: r["lag_ms"] for r in store.fleet_states()}["topk"] == 500
    assert store.progress_since("ftops-topk-primary", 0).batches == 2
    # a restarted application counts its batches from 0 again: its batch is the newest, by its end
    store.record_batch(BatchProgress(stream="ftops-topk-primary", app_id="app-2", batch_id=0, role="primary",
                                     batch_end=time.time() - 1, watermark_ms=1000, input_watermark_ms=1300))
    assert {r["job"]: r["lag_ms"] for r in store.fleet_states()}["topk"] == 300
    # before a stream's first window closes Spark reports its watermark as the epoch: no lag, not 56 years of it
    store.record_batch(BatchProgress(stream="ftops-topk-primary", app_id="app-2", batch_id=1, role="primary",
                                     batch_end=time.time(), watermark_ms=0, input_watermark_ms=1_795_000_000_000))
    assert {r["job"]: r["lag_ms"] for r in store.fleet_states()}["topk"] is None
    assert [b["lag_s"] for b in store.job_batches("topk", time.time() - 60)["ftops-topk-primary"]] == [0.5, 0.3, None]

    # a query renamed (or its checkpoint reset) leaves its stream behind, with its last lag: the queries that ran in the
    # last 5 minutes decide the lag, and nothing else
    store.record_batch(_batch("ftops-clicks-eu-old-name", 9, 1800, job="clicks-eu", lag_ms=900_000))
    store.record_batch(_batch("ftops-clicks-eu-per-region", 2, 5, job="clicks-eu", lag_ms=3000))
    assert {r["job"]: r["lag_ms"] for r in store.fleet_states()}["clicks-eu"] == 3000
    # once none ran lately, the newest one's lag is the job's (it is down: its lag is what it was)
    store.record_batch(_batch("ftops-gauges-a", 1, 900, job="gauges", lag_ms=7000))
    store.record_batch(_batch("ftops-gauges-b", 1, 1200, job="gauges", lag_ms=99_000))
    store.register_job(JobSpec(name="gauges", workload="w"))
    assert {r["job"]: r["lag_ms"] for r in store.fleet_states()}["gauges"] == 7000

    # the store's retention prunes rows older than a week, and every stream's newest that old (the renamed query's
    # stream has no writer any more)
    from ft_core.store.retention import Retention

    store.record_batch(_batch("ftops-gone-primary", 1, 30 * 86400, role="primary"))
    assert store.prune(Retention()).streams_gone >= 1
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("SELECT stream FROM ftops_stream ORDER BY stream")
        assert "ftops-gone-primary" not in [r[0] for r in cur.fetchall()]


def test_rows_of_writers_older_than_the_table_keep_it_current(pg_conn):
    """Drivers started before version 14 go on writing ftops_stream_progress alone, without the job: the store keeps
    each stream's newest (its triggers) and finds an attached stream's job by name."""
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    for name in ("clicks", "clicks-eu"):
        store.register_job(JobSpec(name=name, workload="w"))
    now = time.time()
    with pg_conn, pg_conn.cursor() as cur:  # version 13's record_batch, as such a driver runs it
        for batch, ago in ((1, 40), (2, 10)):
            cur.execute("INSERT INTO ftops_stream_progress (stream, app_id, batch_id, role, batch_end, watermark_ms, "
                        "input_rows, output_rows, input_files, lag_files, watermark_arrived, input_watermark_ms) "
                        "VALUES (%s, 'app-1', %s, 'attached', to_timestamp(%s), 1000, 5, 0, NULL, NULL, NULL, %s) "
                        "ON CONFLICT (stream, app_id, batch_id) DO UPDATE SET batch_end = EXCLUDED.batch_end",
                        ("ftops-clicks-eu-totals", batch, now - ago, 1000 + 150_000 * batch))
    rows = {r["job"]: r for r in store.fleet_states()}
    assert rows["clicks-eu"]["lag_ms"] == 300_000 and rows["clicks"]["last_batch_at"] is None
    assert states_of(store.fleet_states(), datetime.now(timezone.utc))["clicks-eu"] == "lagging"
    assert list(store.job_batches("clicks-eu", now - 3600)) == ["ftops-clicks-eu-totals"]


def test_a_store_migrated_from_version_13_finds_its_streams_newest_batches(pg_conn, tmp_path, monkeypatch):
    older = tmp_path / "sql"
    older.mkdir()
    for path in sorted(sql_dir().glob("*.sql"))[:13]:
        shutil.copy(path, older / path.name)
    monkeypatch.setenv("FTOPS_SQL_DIR", str(older))
    assert upgrade(pg_conn)[-1] == 13
    store = HistoryStore(pg_conn)
    for name in ("clicks", "clicks-eu"):
        store.register_job(JobSpec(name=name, workload="w"))
    now = time.time()
    with pg_conn, pg_conn.cursor() as cur:  # rows as version 13's writers wrote them (no job, no newest table)
        for stream, batch, ago, role in (("ftops-clicks-per-region", 1, 50, "attached"),
                                         ("ftops-clicks-per-region", 2, 20, "attached"),
                                         ("ftops-clicks-primary", 9, 60, "primary"),  # before its application restarted
                                         ("ftops-clicks-eu-totals", 1, 40, "attached"),
                                         ("ftops-other-q1234abcd", 1, 40, "attached"),  # no such job: none
                                         ("ftops-clicks-primary", 4, 30, "primary")):
            cur.execute("INSERT INTO ftops_stream_progress (stream, app_id, batch_id, role, batch_end, watermark_ms, "
                        "input_watermark_ms) VALUES (%s, 'app-1', %s, %s, to_timestamp(%s), 1000, %s)",
                        (stream, batch, role, now - ago, 1000 + batch))
    monkeypatch.delenv("FTOPS_SQL_DIR")
    assert upgrade(pg_conn)[0] == 14  # and any later version
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("SELECT stream, job, batch_id FROM ftops_stream ORDER BY stream")
        assert cur.fetchall() == [("ftops-clicks-eu-totals", "clicks-eu", 1), ("ftops-clicks-per-region", "clicks", 2),
                                  ("ftops-clicks-primary", None, 4), ("ftops-other-q1234abcd", None, 1)]
    # clicks: its primary's and its attached query's newest; the larger lag (2 ms against 4 ms: the primary's)
    assert {r["job"]: r["lag_ms"] for r in store.fleet_states()} == {"clicks": 4, "clicks-eu": 1}
