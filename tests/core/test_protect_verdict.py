"""``ftops job protect``'s exit code (issue 37, item 2): on the local stack the job counts as protected when the plan
run succeeded, its replica runs (or the plan replicates nothing) and a requested first drill passed; elsewhere
what follows is the DAG's, and said. The paths themselves run on real Spark and Airflow in
tests/airflow/test_safety_net.py."""

from __future__ import annotations

import pytest

from ftops_provider.protect_cli import NEXT_ELSEWHERE, _protected

RUNS = {"local_stack": True, "plan_run": "success", "plan": {"tasks": ["a[0]"]}, "replica": {"state": "RUNNING"}}


@pytest.mark.parametrize("change, drilled, protected", [
    ({}, False, True),
    ({"replica": {"state": "WAITING", "why": "the standby has 0 free of 1 cores"}}, False, False),
    ({"plan_run": "failed"}, False, False),
    ({"plan": None, "replica": None}, False, False),  # the run stored no plan
    ({"plan": {"tasks": []}, "replica": None}, False, True),  # nothing to replicate: nothing waits
    ({"drill": {"status": "passed"}}, True, True),
    ({"drill": {"status": "failed"}}, True, False),
    ({"drill": {"status": "not run", "why": "job busy"}}, True, False),  # refused before it started
    ({"standby": "the standby has 0 of 1 cores free"}, False, False),  # stopped before starting the job
    ({"local_stack": False}, False, True),
])
def test_protected_when_planned_replicated_and_drilled_as_asked(change, drilled, protected):
    assert _protected({**RUNS, **change}, drilled) is protected


def test_every_apply_mode_says_what_waits_for_whom():
    assert set(NEXT_ELSEWHERE) == {"auto", "approve", "recommend"}
    assert "Required actions" in NEXT_ELSEWHERE["approve"] and "nothing is applied" in NEXT_ELSEWHERE["recommend"]


def test_a_plan_below_the_default_target_from_a_chosen_budget_says_how_to_choose_one():
    from ftops_provider.protect_cli import _budget_hint

    said: list[str] = []
    for plan, budget in (({"output_fidelity": 0.125}, 3), ({"output_fidelity": 0.6}, 3), ({"output_fidelity": 0.1}, "auto"),
                         (None, 3)):
        _budget_hint(plan, budget, said.append)
    assert said == ["budget 3 keeps OF 0.125 under a worst-case correlated failure: `--budget auto --target-accuracy A` "
                    "picks the smallest budget reaching A (`ftops plan budget` lists what each budget buys)"]


def test_the_wait_for_the_job_to_keep_up_before_the_drill_is_a_flag():
    from ft_core.cli.main import UsageError, build_parser

    base = ["job", "protect", "--name", "j", "--pipeline", "p.py", "--input", "in", "--drill"]
    assert build_parser().parse_args(base).steady_timeout_s == 900.0
    assert build_parser().parse_args([*base, "--steady-timeout-s", "1800"]).steady_timeout_s == 1800.0
    with pytest.raises(UsageError, match="--steady-timeout-s: Input should be greater than 0"):
        build_parser().parse_args([*base, "--steady-timeout-s", "0"])


def test_a_drills_verdict_comes_with_its_measurements_predicted_beside_measured():
    """Trial 4: protect printed only "drill #2: passed"; the numbers were in experiment.json alone."""
    from ft_core.store.experiments import ExperimentReport
    from ftops_provider.protect_cli import _measurements, measurements_text

    assert _measurements(None) == {}  # no report stored (a drill refused before it started)
    measured = {"predicted_output_fidelity": 0.5, "predicted_accuracy": 0.4175, "tentative_accuracy": 0.4086,
                "predicted_caught_up_s": 91.8, "time_to_caught_up_s": 222.2, "caught_up_error": -0.587,
                "lost_windows": 0, "duplicated_windows": 0}
    report = ExperimentReport(kind="drill", job="payments", experiment_id=2, verdict="passed", measurements=measured)
    assert _measurements(report) == measured
    text = measurements_text(measured)
    row = next(line for line in text.splitlines() if line.startswith("tentative accuracy"))
    assert "0.417 (OF 0.500)" in row and "0.409" in row
    assert "222.2 s after the failure (forecast 59% short)" in text and "windows lost" in text


def test_progress_lines_carry_the_time_since_the_command_started(capsys):
    from ftops_provider.protect_cli import _say

    _say(False)("1/4 registered j")
    _say(True)("not printed with --json")
    assert capsys.readouterr().out == "[ 0:00] 1/4 registered j\n"


@pytest.mark.parametrize("params, delay, held", [
    (["window_s=4", "slide_s=2"], 30.0, 14),   # short windows: the default outage holds many
    (["window_s=30"], 61.0, 2),                # trial 4's 30-s windows: none sure at 30 s, two at 61 s
    (["window_s=60", "slide_s=20"], 41.0, 2),  # a slide shorter than the window: the slide counts
])
def test_the_first_drills_outage_holds_two_of_the_jobs_windows(params, delay, held):
    """Trial 4: a job of 30-s windows was drilled with the default 30-s outage, which is sure of no window (it
    measured some only because the capacity came back late under load)."""
    from types import SimpleNamespace

    from ftops_provider.protect_cli import drill_outage
    from spark_jobs.drills.design import sure_windows

    got, why = drill_outage(SimpleNamespace(pipeline="topk", params=params))
    assert got == delay and sure_windows(got, 1.0, float(params[-1].split("=")[1])) == held
    assert f"{held} of topk's windows" in why and ("longer than the default" in why) == (delay > 30)
