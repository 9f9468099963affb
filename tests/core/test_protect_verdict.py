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
