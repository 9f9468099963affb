"""The serving view's file handling without Spark (issue 7): sink folders written in the sink's own
format (one atomically renamed file per micro-batch) and a metrics file in the listener's format.
Real runs are in tests/spark/test_serving_view.py; these are the cases a short real run does not
produce on demand: a window the primary closes without rows, and a micro-batch replayed after a
restart."""

from __future__ import annotations

import json
from pathlib import Path

from spark_jobs.pipeline.sink import batch_file, row_key, write_rows
from spark_jobs.serving_view import make_view, read_manifest, read_view, strip_served_fields


def _rows(start: int, pages: list[int]) -> list[dict]:
    """Top-k rows of a window, in the sinks' canonical order (as read_view returns them)."""
    return sorted(({"window_start": start, "window_end": start + 10, "rank": i + 1, "page": p, "count": 9 - i}
                   for i, p in enumerate(pages)), key=row_key)


def _watermark(folder: Path, batch: int, iso: str) -> None:
    metrics = folder / "_metrics" / "metrics.jsonl"
    metrics.parent.mkdir(parents=True, exist_ok=True)
    with metrics.open("a") as fh:
        fh.write(json.dumps({"batch_id": batch, "watermark": iso}) + "\n")


def test_a_window_the_primary_closes_without_rows_loses_its_tentative_rows(tmp_path):
    primary, replica, out = tmp_path / "p", tmp_path / "r", tmp_path / "view"
    write_rows(primary, batch_file(1), _rows(0, [7, 3]))
    write_rows(replica, batch_file(1), _rows(0, [7]) + _rows(10, [5]))
    view = make_view(primary, replica, out, key_fields=("rank",), predicted_of=0.5)
    view.refresh()
    assert [(r["window_start"], r["tentative"]) for r in read_view(out)] == [(0, False), (0, False), (10, True)]
    assert (out / "windows" / "10-20.jsonl").exists()

    _watermark(primary, 2, "1970-01-01T00:00:00.025Z")  # the primary's watermark passed 20 without a row for [10, 20)
    manifest = view.refresh()
    assert strip_served_fields(read_view(out)) == _rows(0, [7, 3])
    assert not (out / "windows" / "10-20.jsonl").exists()
    assert [(e.window_start, e.state) for e in manifest.windows] == [(0, "accurate")]
    assert read_manifest(out).primary_watermark_ms == 25


def test_a_replayed_batch_does_not_duplicate_rows_and_an_unchanged_view_is_not_rewritten(tmp_path):
    primary, out = tmp_path / "p", tmp_path / "view"
    write_rows(primary, batch_file(4), _rows(0, [7, 3]))
    view = make_view(primary, None, out, key_fields=("rank",))
    view.refresh()
    stamp = (out / "windows" / "0-10.jsonl").stat().st_mtime_ns
    write_rows(primary, batch_file(4), _rows(0, [7, 3]))  # the same batch id, re-run after a restart
    manifest = view.refresh()
    assert strip_served_fields(read_view(out)) == _rows(0, [7, 3]) and manifest.refreshes == 2
    assert (out / "windows" / "0-10.jsonl").stat().st_mtime_ns == stamp
