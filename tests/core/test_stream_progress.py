"""Streams' micro-batch progress in the history store (ft_core.store.stream_progress), on a real PostgreSQL:
what the drivers write and what the triggers read back (issue 14, item 5)."""

from __future__ import annotations

import time

import pytest

from ft_core.store.history import HistoryStore
from ft_core.store.migrations import upgrade
from ft_core.store.stream_progress import BatchProgress, StreamSince
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

T0 = 1_800_000_000.0


def _store(conn) -> HistoryStore:
    upgrade(conn)
    return HistoryStore(conn)


def _batch(batch_id: int, end: float, **kw) -> BatchProgress:
    return BatchProgress(**{"stream": "ftops-topk-primary", "app_id": "app-1", "batch_id": batch_id, "role": "primary",
                            "batch_end": end, "input_rows": 100, "input_files": 10 + batch_id, "lag_files": 3, **kw})


def test_the_rows_since_a_moment_say_batches_backlog_watermark_and_first_output(pg_conn):
    store = _store(pg_conn)
    store.record_batch(_batch(0, T0 - 10, watermark_ms=1000, output_rows=5))  # before the moment: not counted
    store.record_batch(_batch(1, T0 + 2, watermark_ms=4000, lag_files=9))
    store.record_batch(_batch(2, T0 + 4, watermark_ms=3000, output_rows=7, lag_files=1, input_watermark_ms=9500))
    store.record_batch(_batch(0, T0 + 1, stream="ftops-topk-replica-p1", output_rows=2))  # another stream
    since = store.progress_since("ftops-topk-primary", T0)
    assert since == StreamSince(batches=2, last_end=pytest.approx(T0 + 4), lag_files=1, input_files=12, watermark_ms=4000,
                                first_output_end=pytest.approx(T0 + 4), input_watermark_ms=9500)
    assert since.lag_s() == 5.5  # the input's watermark less the highest output watermark
    assert store.progress_since("ftops-topk-primary", T0 + 5).batches == 0


def test_lag_marks_are_each_units_batches_with_their_watermarks_arrival_in_time_order(pg_conn):
    """What a staged recovery's wait reads: per unit (batch end, arrival of its watermark's input), across the
    unit's applications (a restart is a new app id), and nothing from rows without an arrival."""
    store = _store(pg_conn)
    unit = {"stream": "/d/units#peaks[0]", "role": "unit", "input_files": None, "lag_files": None}
    store.record_batch(_batch(7, T0 + 8, app_id="app-2", watermark_ms=5000, watermark_arrived=T0 + 6, **unit))
    store.record_batch(_batch(3, T0 + 2, watermark_ms=1000, watermark_arrived=T0 + 1, **unit))
    store.record_batch(_batch(4, T0 + 4, **unit))  # no watermark yet: no arrival
    store.record_batch(_batch(0, T0 - 50, watermark_ms=1, watermark_arrived=T0 - 51, **unit))  # before the moment
    store.record_batch(_batch(1, T0 + 3, watermark_ms=2000))  # the primary writes no arrivals
    marks = store.lag_marks(["/d/units#peaks[0]", "ftops-topk-primary", "/d/units#enrich[0]"], T0 - 10)
    assert marks == {"/d/units#peaks[0]": [(pytest.approx(T0 + 2), pytest.approx(T0 + 1)),
                                           (pytest.approx(T0 + 8), pytest.approx(T0 + 6))],
                     "ftops-topk-primary": [], "/d/units#enrich[0]": []}


def test_a_batch_replayed_after_a_restart_rewrites_its_row(pg_conn):
    store = _store(pg_conn)
    store.record_batch(_batch(5, T0 + 1, output_rows=0, lag_files=4))
    store.record_batch(_batch(5, T0 + 3, output_rows=6, lag_files=0))
    since = store.progress_since("ftops-topk-primary", T0)
    assert (since.batches, since.lag_files, since.first_output_end) == (1, 0, pytest.approx(T0 + 3))


def test_rows_older_than_the_retention_are_pruned_in_every_stream(pg_conn):
    from ft_core.store.retention import Retention

    store, now = _store(pg_conn), time.time()
    store.record_batch(_batch(0, now - 8 * 86400))
    store.record_batch(_batch(1, now - 60))
    store.record_batch(_batch(0, now - 8 * 86400, stream="other"))  # a stream nothing writes any more
    assert store.prune(Retention()).progress_rows == 2
    assert store.progress_since("ftops-topk-primary", 0).batches == 1
    assert store.progress_since("other", 0).batches == 0


def test_bad_rows_are_refused_before_the_database():
    with pytest.raises(ValueError, match="batch_id"):
        _batch(-1, T0)
    with pytest.raises(ValueError, match="lag_files"):
        _batch(1, T0, lag_files=-2)


@pytest.mark.parametrize(("since", "caught", "says"), [
    (StreamSince(2, T0, 1, 40, 5000, None), True, ""),
    (StreamSince(0, None, None, None, None, None), False, "no batch ended since"),
    (StreamSince(2, T0, 6, 40, 5000, None), False, "6 input files not processed (steady: 2)"),
    (StreamSince(2, T0, 1, 40, 3000, None), False, "watermark not yet at 4000"),
    (StreamSince(2, T0, None, None, 5000, None), False, "? input files"),  # no backlog counted: not caught up
])
def test_caught_up_needs_a_batch_since_the_backlog_back_and_the_watermark(since, caught, says):
    ok, missing = since.caught_up(max_lag_files=2, watermark_ms=4000)
    assert ok is caught and says in missing


def test_db_status_names_the_streams_writing_progress(pg_server, pg_conn, cli):
    store = _store(pg_conn)
    store.record_batch(_batch(7, time.time() - 3))
    store.record_batch(_batch(0, time.time() - 3600, stream="ftops-old-primary"))  # not recent: not listed
    status = cli("db", "status", "--json", env={"FTOPS_DATABASE_URL": pg_server.url()})
    assert status.code == 0
    [stream] = status.json()["streams_reporting"]
    assert stream["stream"] == "ftops-topk-primary" and stream["batches"] == 1 and 2 <= stream["last_batch_s_ago"] < 60
    text = cli("db", "status", env={"FTOPS_DATABASE_URL": pg_server.url()})
    assert "streams writing progress (last 10 min): ftops-topk-primary (1 batch, the last" in text.out
