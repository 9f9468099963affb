"""Checkpoint-interval profiling runs (issue 5, paper 004): two small copies on real Spark produce a
valid profiles document with plausible values, the injected kill really stopped the job, the restarted
job resumed from its checkpoint and its output equals the workload's Python reference; bad input
exits 2 before anything starts. The measures' definitions are checked on hand-made samples.
Nothing here depends on how fast the machine is."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from ft_core.checkpoint.profiles import load_profiles
from ft_core.errors import InputError
from spark_jobs.pipeline import sample_input as generator
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.sink import closed_rows, compare_output
from spark_jobs.profiling import (
    CheckpointVector,
    ProfileConfig,
    check_intervals,
    lineage_check,
    pinned_settings,
    run_profiling,
)
from spark_jobs.profiling.measures import InputTimeline, kill_margin_s, kill_time, recovered_batch, window_latencies_ms
from spark_jobs.profiling.reports import BatchSample, FeedMark, ProfileRaw
from spark_jobs.workloads import topk
from tests.conftest import test_port

# Small: 50 records/s, 2-second windows, 4 tasks.
PARAMS = ["rate=50", "window_s=2", "watermark_s=1", "n_pages=40", "p1=2"]
UI_BASE = test_port(14000)  # ports of these tests only


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (cmdline.parent / "stat").read_text()
        except OSError:
            continue
        if text in args and ") Z" not in stat:
            found.append(args[:200])
    return found


# --- definitions on hand-made samples -------------------------------------------------------------

def _batch(run, bid, start, end, wm=None, lag=None, rows=10):
    return BatchSample(run=run, batch_id=bid, start=start, end=end, rows=rows, watermark_ms=wm, lag_s=lag)


def test_kill_falls_just_before_the_next_wall_clock_aligned_trigger():
    # Spark starts batches at multiples of the interval: after a batch started at 100.0 s and ended
    # at 100.6 s, the next starts at 102.0 s; the kill falls one margin before it.
    at, overrunning = kill_time(_batch(0, 5, 100.0, 100.6), 2.0, 0.6)
    assert (at, overrunning) == (pytest.approx(102.0 - kill_margin_s(2.0)), False)
    # A batch that overran the interval: the next one starts at once; kill before it commits.
    at, overrunning = kill_time(_batch(0, 5, 100.0, 103.0), 2.0, 3.0)
    assert (at, overrunning) == (pytest.approx(106.0 - 0.2), True)
    assert kill_margin_s(1.0) == 0.2 and kill_margin_s(5.0) == 0.5 and kill_margin_s(60.0) == 1.0


def test_recovery_is_the_first_of_two_batches_back_at_the_steady_lag():
    after = [_batch(1, 6, 10, 20, lag=40.0), _batch(1, 7, 20, 24, lag=9.0), _batch(1, 8, 26, 27, lag=12.0),
             _batch(1, 9, 28, 29, lag=5.5), _batch(1, 10, 30, 31, lag=6.0)]
    # Steady lag was at most 5 s, tolerance 1 s: batch 7 is back but batch 8 is not; 9 and 10 are.
    assert recovered_batch(after, 5.0, 1.0).batch_id == 9
    assert recovered_batch(after[:4], 5.0, 1.0) is None


def test_window_latency_counts_from_the_input_that_closed_it_within_one_steady_period():
    marks = [FeedMark(index=i, wall=1000.0 + i, watermark_ms=5000 + 1000 * i) for i in range(10)]
    timeline = InputTimeline(marks)
    assert timeline.available_at(7000) == 1002.0 and timeline.available_at(7001) == 1003.0
    periods = [(1000.0, 1005.0), (1007.0, 1020.0)]
    windows = [(6000, 1002.5),   # closed at 1001, written 1.5 s later: 1500 ms
               (9000, 1006.0),   # written between the periods (recovery): excluded
               (12000, 1008.0),  # closed at 1007, written 1 s later: 1000 ms
               (7000, 1008.0)]   # closed in the first period, written in the second: excluded
    assert window_latencies_ms(windows, timeline, periods) == [pytest.approx(1500.0), pytest.approx(1000.0)]


def test_intervals_are_checked():
    assert check_intervals([5.0, 2.0]) == [2.0, 5.0]
    for bad, message in (([], "at least 1"), ([2.0, -1.0], "positive"), ([2.0, 2.0], "twice"), ([0.0004], "milliseconds")):
        with pytest.raises(InputError, match=message):
            check_intervals(bad)


def test_a_plan_changing_a_pinned_setting_needs_a_new_checkpoint_lineage(tmp_path):
    offsets = tmp_path / "ckpt" / "offsets"
    offsets.mkdir(parents=True)
    vector = CheckpointVector(trigger_s=2.0)
    conf = {**vector.pinned(), "spark.sql.streaming.aggregation.stateFormatVersion": "2"}
    (offsets / "3").write_text("v1\n" + json.dumps({"batchWatermarkMs": 0, "conf": conf}) + '\n{"logOffset":3}\n')
    (offsets / "12").write_text("v1\n" + json.dumps({"batchWatermarkMs": 0, "conf": conf}) + '\n{"logOffset":12}\n')
    pinned = pinned_settings(tmp_path / "ckpt")
    assert pinned == vector.pinned()
    same = lineage_check(CheckpointVector(trigger_s=10.0, min_deltas_for_snapshot=5), pinned)
    assert not same.needs_new_lineage and same.changes == []
    moved = lineage_check(CheckpointVector(trigger_s=2.0, shuffle_partitions=8, state_store="rocksdb"), pinned)
    assert moved.needs_new_lineage
    assert [c.setting for c in moved.changes] == ["spark.sql.shuffle.partitions", "spark.sql.streaming.stateStore.providerClass"]
    assert "new checkpoint lineage" in moved.message
    with pytest.raises(InputError, match="no offset log"):
        pinned_settings(tmp_path)


# --- a real profiling run -------------------------------------------------------------------------

def test_two_intervals_produce_a_valid_profiles_document_on_spark(tmp_path, cli):
    config = ProfileConfig(pipeline="topk", params=PARAMS, intervals_s=[2.0, 4.0], failures=1, duration_s=8.0,
                           parallel=2, detection_timeout_s=1.0, work_dir=tmp_path / "run", timeout_s=300)
    report = run_profiling(config)

    doc = load_profiles(report.profiles, min_intervals=2)
    assert [p.checkpoint_interval_ms for p in doc.profiles] == [2000.0, 4000.0]
    with pytest.raises(InputError, match="needs at least 3"):
        load_profiles(report.profiles)  # the planner's own minimum still holds
    planned = cli("plan", "checkpoint", report.profiles, "--max-recovery-s", "100", "--json")
    assert planned.code == 2 and "only 2 distinct interval(s)" in json.loads(planned.out)["error"]  # --json: errors too

    raw = ProfileRaw.model_validate_json(Path(report.raw).read_text())
    workload = load_workload("topk", PARAMS)
    reference = topk.python_reference(workload.params, generator.read_records(workload, tmp_path / "run" / "input", "requests"))
    for copy, profile in zip(raw.copies, doc.profiles):
        rep = profile.repetitions[0]
        assert copy.vector.trigger_s * 1000 == profile.checkpoint_interval_ms and rep.run_id == copy.copy_id
        assert rep.avg_latency_ms > 0 and rep.recovery_time_s > 0 and rep.warmup_time_s >= 0
        assert 0 < rep.avg_ingress_rate < rep.max_ingress_rate
        (failure,) = copy.failures
        # The kill really stopped the job: nothing completed between the kill and the relaunch, and
        # it fell near the end of a checkpoint interval (within one interval of the last trigger).
        assert not any(failure.t_kill < b.end < failure.t_restart for b in copy.batches)
        assert failure.detection_s >= 1.0 and failure.t_restart > failure.t_kill
        assert 0 < failure.since_last_trigger_s <= max(copy.vector.trigger_s, 2 * failure.first_batch_s)
        # The relaunched job resumed from its checkpoint (it did not start over at batch 0) on the
        # same lineage, and recovered: its lag came back only after the restart.
        assert failure.resumed_batch_id in (failure.killed_after_batch + 1, failure.killed_after_batch + 2)
        assert failure.lineage_unchanged
        assert failure.recovery_time_s > failure.detection_s + failure.restore_s > 0
        assert {b.run for b in copy.batches} == {0, 1}
        # Output across the restart equals the Python reference, window for window.
        assert copy.output.equals_reference and copy.output.lost_windows == copy.output.duplicated_windows == 0
        direct = compare_output(copy.output_dir, closed_rows(reference, copy.output.final_watermark_ms))
        assert direct.equal and direct.expected_windows == copy.output.windows > 0
    assert _processes_mentioning(str(tmp_path)) == []


@pytest.mark.parametrize("args, message", [
    (["--workload", "wordcount", "--intervals", "2,4"], "workload 'wordcount': expected one of topk, incidents"),
    (["--pipeline", "no_such_module:pipeline", "--intervals", "2,4"], "--pipeline: cannot import module 'no_such_module'"),
    (["--workload", "topk", "--intervals", ","], "--intervals: at least 1 interval"),
    (["--workload", "topk", "--intervals", "2,0"], "--intervals: item 2 ('0'): Input should be greater than 0"),
    (["--workload", "topk", "--intervals", "2,5,2"], "--intervals: 2 s is listed twice"),
    (["--workload", "topk", "--intervals", "2", "--out", "missing-folder/p.json"], "--out: folder"),
    (["--workload", "topk", "--intervals", "2", "--param", "colour=red"], "colour"),
])
def test_bad_input_exits_2_with_one_line_and_starts_nothing(tmp_path, cli, args, message):
    work = tmp_path / "run"
    res = cli("profile", "checkpoint", *args, "--failures", "1", "--duration", "5", "--work-dir", work)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1 and message in res.err
    assert not work.exists() and _processes_mentioning(str(tmp_path)) == []


def test_port_in_use_and_missing_profiles_exit_2(tmp_path, cli):
    work = tmp_path / "run"
    with socket.socket() as blocker:
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("127.0.0.1", UI_BASE + 1))
        blocker.listen()
        res = cli("profile", "checkpoint", "--workload", "topk", "--intervals", "2,4", "--failures", "1",
                  "--duration", "5", "--parallel", "2", "--ui-port-base", UI_BASE, "--work-dir", work)
    assert res.code == 2 and f"port {UI_BASE + 1} on 127.0.0.1 is in use" in res.err
    res = cli("profile", "validate", "--workload", "topk", "--profiles", tmp_path / "nope.json", "--max-recovery-s", "60",
              "--duration", "5", "--work-dir", work)
    assert res.code == 2 and "--profiles: file" in res.err and len(res.err.strip().splitlines()) == 1
    res = cli("bench", "checkpoint", "--intervals", "2,4,6", "--work-dir", work, "--out", tmp_path / "checkpoint.md")
    assert res.code == 2 and "at least 5 intervals" in res.err and not (tmp_path / "checkpoint.md").exists()
    assert not work.exists() and _processes_mentioning(str(tmp_path)) == []
