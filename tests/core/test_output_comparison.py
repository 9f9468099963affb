"""A streaming sink against its batch reference (spark_jobs.pipeline.sink.compare_output) on real micro-batch files:
each window is lost, duplicated, not expected, written with other rows, or equal; only the first two are the exactly-once
failures the drills and benchmarks count, the others are said apart."""

from __future__ import annotations

import json

from spark_jobs.pipeline.sink import compare_output


def _rows(start: int, *counts: int) -> list[dict]:
    return [{"window_start": start, "window_end": start + 1000, "key": f"k{i}", "count": c} for i, c in enumerate(counts)]


def _batch(folder, n: int, rows: list[dict]) -> None:
    (folder / f"batch-{n:09d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_every_window_is_told_lost_duplicated_unexpected_changed_or_equal(tmp_path):
    expected = _rows(0, 3, 4) + _rows(1000, 5) + _rows(2000, 6) + _rows(3000, 7)
    _batch(tmp_path, 1, _rows(0, 3, 4) + _rows(1000, 9))  # window 0 equal, 1000 with another count
    _batch(tmp_path, 2, _rows(3000, 7) + _rows(5000, 1))  # 2000 lost, 5000 not expected
    _batch(tmp_path, 3, _rows(3000, 7))  # 3000 written by two micro-batches
    c = compare_output(tmp_path, expected)
    assert (c.lost_windows, c.duplicated_windows, c.unexpected_windows, c.changed_windows) == ([2000], [3000], [5000], [1000])
    assert not c.equal and c.expected_windows == 4
    same = tmp_path / "same"
    same.mkdir()
    _batch(same, 1, list(reversed(expected)))  # order inside or across files does not matter
    assert compare_output(same, expected).equal and compare_output(same, expected).changed_windows == []
