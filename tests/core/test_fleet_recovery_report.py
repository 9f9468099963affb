"""The report of ``ftops bench fleet-recovery`` states each target from its rows: staged best in every run, and every
job's output over the whole benchmark equal to the batch reference (0 lost, 0 duplicated windows)."""

from __future__ import annotations

from spark_jobs.fleet_recovery.bench import FleetRecoveryBenchConfig, OutputCheck, RunResult
from spark_jobs.fleet_recovery.bench_report import render

CONFIG = FleetRecoveryBenchConfig(jobs=2, runs=1)


def _run(policy: str, back: dict[str, float]) -> RunResult:
    return RunResult(policy=policy, run=1, back_s=back, restarted_s={}, planned_back_s={},
                     weighted_mean_s=(back["fleet-1"] + 2 * back["fleet-2"]) / 3)


RESULTS = [_run("all-at-once", {"fleet-1": 50.0, "fleet-2": 90.0}), _run("fifo", {"fleet-1": 50.0, "fleet-2": 80.0}),
           _run("staged", {"fleet-1": 70.0, "fleet-2": 40.0})]


def test_the_report_says_the_output_target_is_met_only_when_every_job_equals_the_reference():
    clean = {"fleet-1": OutputCheck(lost_windows=0, duplicated_windows=0, windows_compared=900, equal=True),
             "fleet-2": OutputCheck(lost_windows=0, duplicated_windows=0, windows_compared=900, equal=True)}
    report = render(RESULTS, clean, CONFIG, "ftops bench fleet-recovery --jobs 2 --runs 1", None)
    assert "**Target: staged recovery has the best weighted mean in every run: met** (1 of 1 runs)" in report
    assert "| fleet-1 | 900 | 0 | 0 | 0 | 0 | yes |" in report and "(3 losses of `rack-a`" in report
    assert "**Target: 0 lost and 0 duplicated windows: met**; every output equal to the reference: yes." in report
    duplicated = {**clean, "fleet-2": OutputCheck(lost_windows=0, duplicated_windows=2, windows_compared=900, equal=False)}
    report = render(RESULTS, duplicated, CONFIG, "cmd", None)
    assert "| fleet-2 | 900 | 0 | 2 | 0 | 0 | no |" in report and "0 duplicated windows: not met**" in report
    changed = {**clean, "fleet-2": OutputCheck(lost_windows=0, duplicated_windows=0, windows_compared=900, equal=False,
                                               changed_windows=[2000, 4000, 6000, 8000])}
    report = render(RESULTS, changed, CONFIG, "cmd", None)  # other rows in some windows: neither lost nor duplicated
    assert "| fleet-2 | 900 | 0 | 0 | 0 | 4 (2000, 4000, 6000, 8000) | no |" in report
    extra = {**clean, "fleet-2": OutputCheck(lost_windows=0, duplicated_windows=0, windows_compared=900, equal=False,
                                             unexpected_windows=[0, 10, 20, 30, 40],
                                             reference_span_ms=(50, 9000))}
    report = render(RESULTS, extra, CONFIG, "cmd", None)  # windows the reference lacks: before its first, here
    assert "| fleet-2 | 900 (50 to 9000) | 0 | 0 | 5 (0, 10, ..., 30, 40) | 0 | no |" in report
    assert "windows: met**; every output equal to the reference: no." in report
    assert "windows: not checked** (the batch reference failed" in render(RESULTS, {}, CONFIG, "cmd", None)
