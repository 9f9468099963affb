"""The history store's retention (ft_core.store.retention) on the real PostgreSQL store: old stream progress rows and
rates profiles go (and a stream's newest micro-batch that old: nothing writes it), the progress around a drill (what the
next drills' forecasts learn from), each job's newest profile and checkpoint profiles stay; a bad FTOPS_RETENTION is
refused, naming it."""

from __future__ import annotations

import time

import pytest

from ft_core.errors import InputError
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from ft_core.store.retention import Retention
from ft_core.store.stream_progress import BatchProgress
from tests.conftest import run_cli
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

DAY = 86_400.0


def _batch(store: HistoryStore, stream: str, batch_id: int, end: float, job: str | None = None) -> None:
    store.record_batch(BatchProgress(stream=stream, app_id="app-1", batch_id=batch_id, role="primary", batch_end=end,
                                     input_rows=10, watermark_ms=1_000, input_watermark_ms=2_000, job=job))


def _ages(store: HistoryStore, stream: str) -> list[int]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute("""SELECT round(extract(epoch FROM now() - batch_end) / 86400)::int FROM ftops_stream_progress
                       WHERE stream = %s ORDER BY batch_end""", (stream,))
        return [r[0] for r in cur.fetchall()]


def _profiles(store: HistoryStore, job: str) -> list[tuple[str, int]]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute("""SELECT p.kind, round(extract(epoch FROM now() - p.created_at) / 86400)::int FROM ftops_profile p
                       JOIN ftops_job j USING (job_id) WHERE j.name = %s ORDER BY p.created_at""", (job,))
        return cur.fetchall()


def _aged_profile(store: HistoryStore, job: str, kind: str, days: float) -> None:
    profile_id = store.save_profile(job, kind, {"rates": {}, "age_days": days})  # distinct documents: stored apart
    with store.conn, store.conn.cursor() as cur:
        cur.execute("UPDATE ftops_profile SET created_at = now() - %s * interval '1 day' WHERE profile_id = %s",
                    (days, profile_id))


@pytest.fixture
def store(pg_conn):
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    for name in ("alerts", "old", "clicks"):
        store.register_job(JobSpec(name=name, workload="topk"))
    return store


def test_old_progress_and_profiles_go_and_what_forecasts_and_pages_read_stays(store):
    now = time.time()
    for i, days in enumerate((40, 20, 10, 9, 3, 0)):
        _batch(store, "ftops-alerts-primary", i, now - days * DAY)
    _batch(store, "ftops-old-primary", 0, now - 30 * DAY)  # a stopped job: its newest batch is old
    for i, days in enumerate((12, 2)):  # an attached job's query: its stream says its job
        _batch(store, "ftops-clicks-eu", i, now - days * DAY, job="clicks")
    drill = store.start_drill("alerts", None, {})  # a drill 10 days ago: the batches around it stay
    with store.conn, store.conn.cursor() as cur:
        cur.execute("""UPDATE ftops_drill SET started_at = now() - interval '10 days' - interval '5 minutes',
                                              finished_at = now() - interval '10 days' + interval '5 minutes'
                       WHERE drill_id = %s""", (drill,))
    for days in (90, 45, 35):
        _aged_profile(store, "alerts", "rates", days)
    _aged_profile(store, "alerts", "checkpoint", 60)  # Chiron's record: never pruned
    _aged_profile(store, "alerts", "rates", 1)
    _aged_profile(store, "old", "rates", 100)  # its only profile: its newest stays however old

    pruned = store.prune(Retention(progress_days=7, profile_days=30))
    assert (pruned.progress_rows, pruned.profiles) == (5, 3) and pruned.streams == 3 and pruned.jobs == 3
    assert _ages(store, "ftops-alerts-primary") == [10, 3, 0]  # 40, 20, 9 gone; 10 was during the drill
    assert _ages(store, "ftops-old-primary") == [] and _ages(store, "ftops-clicks-eu") == [2]
    assert _profiles(store, "alerts") == [("checkpoint", 60), ("rates", 1)] and _profiles(store, "old") == [("rates", 100)]
    newest = {r["job"]: r["last_batch_at"] for r in store.fleet_states()}
    assert pruned.streams_gone == 1 and newest["old"] is None and newest["alerts"] is not None  # nothing writes it
    again = store.prune(Retention(progress_days=7, profile_days=30))
    assert (again.progress_rows, again.profiles) == (0, 0)  # idempotent


def test_a_bad_retention_is_refused_naming_the_setting_and_the_cli_prunes(store, pg_server, monkeypatch):
    for text, says in (("progress=0", "progress: Input should be greater than or equal to 1"),
                       ("weeks=2", "'weeks=2' is not progress=DAYS or profiles=DAYS"),
                       ("profiles=many", "profiles: Input should be a valid number")):
        with pytest.raises(InputError, match=f"FTOPS_RETENTION: {says}"):
            Retention.from_text(text)
    _batch(store, "ftops-alerts-primary", 0, time.time() - 9 * DAY)
    monkeypatch.setenv("FTOPS_DATABASE_URL", pg_server.url())
    monkeypatch.setenv("FTOPS_RETENTION", "progress=0.5")
    refused = run_cli("db", "prune")
    assert refused.code == 2 and "FTOPS_RETENTION: progress: Input should be greater than or equal to 1" in refused.err
    assert _ages(store, "ftops-alerts-primary") == [9]  # nothing deleted
    monkeypatch.setenv("FTOPS_RETENTION", "progress=30")
    kept = run_cli("db", "prune", "--json")
    assert kept.code == 0 and kept.json()["progress_rows"] == 0 and kept.json()["retention"]["progress_days"] == 30
    done = run_cli("db", "prune", "--progress-days", "8")  # the flag over the environment
    assert done.code == 0 and "deleted 1 stream progress rows older than 8 days" in done.out
    assert _ages(store, "ftops-alerts-primary") == []
    bad = run_cli("db", "prune", "--progress-days", "0")
    assert bad.code == 2 and "--progress-days" in bad.err
