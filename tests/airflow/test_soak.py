"""The soak's verdict and report (ftops_provider.soak): a drill passes only when every part of it held.
The soak itself runs the stack's real Airflow and Spark (``ftops bench soak``, docs/benchmarks/soak.md);
these tests check how its measurements are judged and written."""

from __future__ import annotations

import pytest

from ftops_provider.soak import SoakDrill, SoakResult, soak_report
from tests.conftest import assert_plot

GOOD = dict(dag_state="success", drill_id=1, status="passed", lost_windows=0, duplicated_windows=0,
            output_equals_reference=True, tentative_accuracy=0.8, time_to_first_tentative_s=4.0,
            time_to_caught_up_s=60.0, steady_after_s=12.0, elapsed_s=200.0)


def _drill(index: int, **changes) -> SoakDrill:
    return SoakDrill(index=index, domain="rack-a" if index % 2 else "rack-b", dag_run_id=f"manual__{index}",
                     **{**GOOD, **changes})


@pytest.mark.parametrize("flaw", [dict(dag_state="failed"), dict(status="aborted"), dict(lost_windows=1),
                                  dict(duplicated_windows=2), dict(output_equals_reference=False),
                                  dict(steady_after_s=None), dict(status=None, lost_windows=None),
                                  dict(capacity_after={"rack-b": 1, "rack-c": 1})])
def test_a_drill_passes_only_when_run_record_windows_output_steady_state_and_domains_all_hold(flaw):
    kept = {"capacity_after": {"rack-a": 1, "rack-b": 1}, "capacity_expected": {"rack-a": 1, "rack-b": 1}}
    assert _drill(1, **kept).passed
    assert not _drill(1, **{**kept, **flaw}).passed


def test_the_report_shows_the_workers_per_domain_each_drill_left():
    expected = {"rack-a": 1, "rack-b": 1}
    result = SoakResult(command="c", job="topk", elapsed_s=1, drills=[
        _drill(1, capacity_after=expected, capacity_expected=expected),
        _drill(2, capacity_after={"rack-b": 1, "rack-c": 1}, capacity_expected=expected)])
    report = soak_report(result)
    assert "those before the first drill (rack-a 1, rack-b 1)" in report
    rows = [line for line in report.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert "rack-a 1, rack-b 1" in rows[0] and rows[0].split()[-1] == "yes"
    assert "rack-b 1, rack-c 1" in rows[1] and rows[1].split()[-1] == "no"


def test_the_report_counts_and_names_what_failed():
    result = SoakResult(command="ftops bench soak --drills 3", job="topk", elapsed_s=600,
                        drills=[_drill(1), _drill(2, status="aborted", error="another domain was lost"),
                                _drill(3, duplicated_windows=2, lost_windows=1)])
    report = soak_report(result)
    assert "Produced by `ftops bench soak --drills 3`" in report
    assert "**1 of 3 passed**; 1 aborted, 0 failed; 1 lost and 2 duplicated windows in all" in report
    assert "Target (every drill passes, 0 lost, 0 duplicated): not met" in report
    assert "- drill 2: another domain was lost" in report
    rows = [line.split() for line in report.splitlines() if line.split()[:1] in (["1"], ["2"], ["3"])]
    assert [r[1] for r in rows] == ["rack-a", "rack-b", "rack-a"] and [r[-1] for r in rows] == ["yes", "no", "no"]


def test_all_passed_meets_the_target_and_an_empty_soak_does_not():
    assert SoakResult(command="c", job="topk", elapsed_s=1, drills=[_drill(1), _drill(2)]).target_met
    assert not SoakResult(command="c", job="topk", elapsed_s=1, drills=[]).target_met


def test_written_to_a_file_the_report_links_its_plot_of_times_per_drill(tmp_path):
    result = SoakResult(command="c", job="topk", elapsed_s=1, drills=[_drill(1, failed_domain="rack-b"), _drill(2)])
    table = tmp_path / "soak.md"
    report = soak_report(result, table)
    assert_plot(table.with_name("soak-times.svg"), report, "first tentative output", "primary caught up", "1 (rack-b)")
    assert "soak-times.svg" not in soak_report(result)  # printed only: no plot


def test_a_report_written_before_every_drill_ran_says_it_is_unfinished_not_met_or_passed():
    so_far = SoakResult(command="c", job="topk", elapsed_s=1, drills=[_drill(1), _drill(2)])
    partial = soak_report(so_far, planned=20)
    assert "**2 of 2 passed**" in partial and "Unfinished: 2 of the 20 drills asked for ran" in partial
    assert "Target (every drill passes" not in partial
    assert "Target (every drill passes, 0 lost, 0 duplicated): met" in soak_report(so_far, planned=2)


def test_the_report_sets_each_drills_catch_up_forecast_beside_its_measurement_and_counts_those_within_25_percent():
    result = SoakResult(command="c", job="topk", elapsed_s=1, drills=[
        _drill(1, predicted_caught_up_s=70.0), _drill(2, predicted_caught_up_s=90.0), _drill(3),
        _drill(4, predicted_caught_up_s=45.0)])  # measured 60 s each: +17 %, +50 %, no forecast, -25 %
    assert [d.forecast_error for d in result.drills] == [pytest.approx(1 / 6), pytest.approx(0.5), None, pytest.approx(-0.25)]
    assert result.forecasts_within() == (2, 3)
    report = soak_report(result)
    rows = [line.split() for line in report.splitlines() if line.split()[:1] in (["1"], ["2"], ["3"])]
    assert rows[0][9:12] == ["70.0", "60.0", "+17%"] and rows[2][9:12] == ["-", "60.0", "-"]
    assert "**2 of 3 within 25%** of the measured time caught up (median error 25%)" in report
    assert "Catch-up forecasts" not in soak_report(SoakResult(command="c", job="topk", elapsed_s=1, drills=[_drill(1)]))
