"""The self-chaos bench's verdict and report (issue 35, item 4): a scenario counts as restored only when the job
came back whole, with the domains it had, and its output lost and duplicated nothing; the report says so per row,
names every error and the scenarios it did not run. The scenarios themselves run on the local stack
(``ftops bench self-chaos``, docs/benchmarks/self-chaos.md)."""

from __future__ import annotations

import argparse

import pytest

from ftops_provider.self_chaos import NOT_RUN, SCENARIOS, ChaosResult, ChaosRow, self_chaos_report
from ftops_provider.stack_cli import _scenario_list

WHOLE = dict(whole_after_s=61.4, domains_before={"rack-a": 1, "rack-b": 1}, domains_after={"rack-a": 1, "rack-b": 1},
             lost_windows=0, duplicated_windows=0, recorded="aborted", drill_id=3, repaired_by="safety net (dag run x)")


@pytest.mark.parametrize("change, restored", [
    ({}, True),
    ({"domains_after": {"rack-a": 1, "rack-c": 1}}, False),  # capacity back in another domain
    ({"lost_windows": 1}, False), ({"duplicated_windows": 2}, False),
    ({"whole_after_s": None}, False), ({"error": "the job whole again: timed out"}, False),
])
def test_a_scenario_is_restored_only_when_whole_in_its_domains_with_nothing_lost_or_duplicated(change, restored):
    assert ChaosRow(scenario="drill-command-killed", **{**WHOLE, **change}).restored is restored


def test_the_report_counts_restored_scenarios_and_names_errors_and_what_it_did_not_run():
    rows = [ChaosRow(scenario="drill-command-killed", **WHOLE),
            ChaosRow(scenario="postgres-down-60s", **{**WHOLE, "lost_windows": None, "whole_after_s": None,
                                                      "error": "drill #4 to be recorded: timed out"})]
    text = self_chaos_report(ChaosResult(command="ftops bench self-chaos", started_at=0, elapsed_s=600, rows=rows))
    assert "**1 of 2 restored**" in text and "`ftops bench self-chaos`" in text
    assert "- postgres-down-60s: drill #4 to be recorded: timed out" in text
    line = next(t for t in text.splitlines() if t.startswith("drill-command-killed"))
    assert "61" in line and "safety net" in line and line.split()[-2:] == ["yes", "-"]  # restored; not timed
    assert all(name in text for name in NOT_RUN)


def test_the_scenario_flag_takes_known_names_in_order_and_refuses_others():
    assert _scenario_list("postgres-down-60s, drill-command-killed") == ["postgres-down-60s", "drill-command-killed"]
    for bad in ("", "drill-command-killed,rack-on-fire"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected some of " + SCENARIOS[0]):
            _scenario_list(bad)


def test_a_scenario_run_again_replaces_its_row_and_keeps_the_others():
    from ftops_provider.self_chaos import merged

    first = ChaosResult(command="ftops bench self-chaos", started_at=100, elapsed_s=1500, rows=[
        ChaosRow(scenario=name, **{**WHOLE, "measured_at": 100 + i}) for i, name in enumerate(SCENARIOS)])
    again = ChaosResult(command="ftops bench self-chaos --scenarios postgres-down-60s", started_at=5000, elapsed_s=300,
                        rows=[ChaosRow(scenario="postgres-down-60s", **{**WHOLE, "whole_after_s": 80.0, "measured_at": 5300})])
    whole = merged(first, again)
    assert [r.scenario for r in whole.rows] == list(SCENARIOS)
    by = {r.scenario: r for r in whole.rows}
    assert by["postgres-down-60s"].whole_after_s == 80.0 and by["drill-command-killed"].measured_at == 100
    assert whole.command == "ftops bench self-chaos, then ftops bench self-chaos --scenarios postgres-down-60s"
    assert merged(None, again) is again


def test_the_partition_scenario_runs_only_on_a_namespace_stack_and_is_refused_before_anything_starts():
    from ft_core.errors import InputError
    from ftops_provider.self_chaos import NAMESPACES_ONLY, scenarios_for

    assert "airflow-master-partition" in NAMESPACES_ONLY
    assert scenarios_for("namespaces", None) == list(SCENARIOS)
    assert scenarios_for("loopback", None) == [n for n in SCENARIOS if n != "airflow-master-partition"]
    assert scenarios_for("namespaces", ["airflow-master-partition"]) == ["airflow-master-partition"]
    with pytest.raises(InputError, match="--scenarios: airflow-master-partition needs the stack on a namespace network"):
        scenarios_for("loopback", ["postgres-down-60s", "airflow-master-partition"])


def test_the_report_shows_each_rows_network_and_lists_as_not_run_only_scenarios_without_a_row():
    rows = [ChaosRow(scenario="postgres-down-60s", **WHOLE),
            ChaosRow(scenario="airflow-master-partition", network="namespaces", **WHOLE)]
    text = self_chaos_report(ChaosResult(command="ftops bench self-chaos", started_at=0, elapsed_s=600, rows=rows))
    line = next(t for t in text.splitlines() if t.startswith("airflow-master-partition"))
    assert line.split()[1] == "namespaces"
    assert next(t for t in text.splitlines() if t.startswith("postgres-down-60s")).split()[1] == "loopback"
    not_run = next(t for t in text.splitlines() if t.startswith("Not run: "))
    assert "airflow-master-partition" not in not_run and "recovery-worker-killed-between-stages" in not_run
