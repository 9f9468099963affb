"""The measures every drill shares (``ftops drill run`` and the engine's drills on running jobs alike,
:mod:`spark_jobs.drills.live`): which windows are failure windows, what the replica wrote for them, and when its
first tentative output after the fault came. The accuracy function itself is the pipeline's (tested with the
pipelines); here a recording stand-in shows what it was given."""

from __future__ import annotations

import json
import os

from spark_jobs.drills.live import failure_window_accuracy, first_tentative_s


class _Recording:
    """Records what the drill asks the pipeline's accuracy function; scores each window 1."""

    def accuracy(self, tentative, accurate, windows):
        self.tentative, self.windows = tentative, windows
        return {w: 1.0 for w in windows}


def _write(folder, name, rows, mtime):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.utime(path, (mtime, mtime))


def _row(start):
    return {"window_start": start, "window_end": start + 10, "key": "k", "value": 1}


def test_failure_windows_end_after_the_last_delivered_and_by_the_backlog_and_read_the_replicas_rows(tmp_path):
    expected = [_row(s) for s in (0, 10, 20, 30, 40)]
    _write(tmp_path / "replica", "batch-00001.jsonl", [_row(20)], 100.0)
    rec = _Recording()
    scores = failure_window_accuracy(rec, expected, tmp_path / "replica", failure_end_ms=20, backlog_ms=40)
    assert rec.windows == [(20, 30), (30, 40)] and sorted(scores) == [(20, 30), (30, 40)]
    assert rec.tentative == [_row(20)]
    failure_window_accuracy(rec, expected, None, failure_end_ms=20, backlog_ms=40)  # no replica: nothing tentative
    assert rec.tentative == [] and rec.windows == [(20, 30), (30, 40)]


def test_first_tentative_output_is_the_first_file_after_the_fault_with_an_undelivered_window(tmp_path):
    replica = tmp_path / "replica"
    _write(replica, "batch-00001.jsonl", [_row(30)], 90.0)  # before the fault
    _write(replica, "batch-00002.jsonl", [_row(10)], 104.0)  # after it, but a window the primary had delivered
    _write(replica, "batch-00003.jsonl", [_row(30)], 107.5)
    assert first_tentative_s(replica, t_fail=100.0, failure_end_ms=20) == 7.5
    assert first_tentative_s(replica, t_fail=110.0, failure_end_ms=20) is None
