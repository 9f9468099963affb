"""``ftops bench partitions``: its schedule of faults and how its report judges and writes the drills
(spark_jobs.drills.partitions_bench). The drills themselves run real Spark across network namespaces
(tests/spark/test_drill.py and test_multi_host.py run one of each fault; the benchmark runs ten)."""

from __future__ import annotations

from pathlib import Path

from spark_jobs.drills.documents import DrillReport
from spark_jobs.drills.partitions_bench import PartitionRow, PartitionsConfig, PartitionsResult, render, schedule
from tests.conftest import assert_plot

GOOD = dict(workload="topk", plan_tasks=["a"], predicted_output_fidelity=0.9, tentative_accuracy=0.88,
            tentative_accuracy_per_window=[0.88], time_to_first_tentative_s=3.0, time_to_caught_up_s=140.0,
            lost_windows=0, duplicated_windows=0, output_equals_reference=True, predicted_internal_completeness=0.5,
            failure_window_starts_ms=[0], lost_window_starts_ms=[], duplicated_window_starts_ms=[], windows_expected=10,
            fail_domain="rack-a", network="namespaces", subnet=3, killed=[], kill_driver=False, recovery="restart",
            primary_driver_restarts=0, detection_s=7.0, new_capacity_after_s=30.0, capacity_alive_s=35.0, params={},
            budget=4, algorithm="sa", work_dir="/tmp/x", elapsed_s=300.0)


def _row(i: int, fault: str, **changes) -> PartitionRow:
    return PartitionRow(drill=i, domain="rack-a", fault=fault, took_s=300.0,
                        report=DrillReport(**{**GOOD, "fault": fault, **changes}))


def _result(rows: list[PartitionRow], drills: int) -> PartitionsResult:
    return PartitionsResult(command="ftops bench partitions --drills 2", rows=rows, started="2026-11-26 10:00 UTC",
                            load_at_start=1.0, config=PartitionsConfig(drills=drills, work_dir=Path("/tmp/x")))


def test_the_schedule_alternates_the_fault_and_changes_rack_every_two_drills():
    assert schedule(6) == [("rack-a", "host-down"), ("rack-a", "partition"), ("rack-b", "host-down"),
                           ("rack-b", "partition"), ("rack-a", "host-down"), ("rack-a", "partition")]


def test_a_drill_passes_only_with_no_lost_or_duplicated_window_and_the_reference_output():
    assert _row(1, "partition").passed()
    for flaw in (dict(lost_windows=1), dict(duplicated_windows=1), dict(output_equals_reference=False)):
        assert not _row(1, "partition", **flaw).passed()
    assert not PartitionRow(drill=1, domain="rack-a", fault="partition", error="timed out", took_s=1.0).passed()


def test_the_report_meets_the_target_only_when_every_planned_drill_passed():
    met = render(_result([_row(1, "host-down"), _row(2, "partition", detection_s=9.5)], drills=2))
    assert "**2 of 2 passed**" in met and ": met." in met
    assert "Detection by fault: host-down: 7.0-7.0 s; partition: 9.5-9.5 s." in met
    assert "Produced by `ftops bench partitions --drills 2`" in met
    short = render(_result([_row(1, "host-down")], drills=2))  # one drill of two ran: not met
    assert "**1 of 1 passed**" in short and "not met" in short
    failed = render(_result([_row(1, "host-down"), PartitionRow(drill=2, domain="rack-a", fault="partition",
                                                                 error="the primary never caught up", took_s=600.0)],
                            drills=2))
    assert "**1 of 2 passed**" in failed and "no: the primary never caught up" in failed


def test_written_to_a_file_the_report_links_its_plot_of_times_per_drill(tmp_path):
    out = tmp_path / "partitions.md"
    report = render(_result([_row(1, "host-down"), _row(2, "partition")], drills=2), out=out)
    assert_plot(out.with_name("partitions-times.svg"), report, "detected", "first tentative", "caught up")
