"""The CLI contract: ``ftops plan recovery``, ``ftops plan stages``, ``ftops bench recovery``."""

from __future__ import annotations

import json

import pytest

from tests.conftest import assert_plot


@pytest.mark.parametrize("algorithm", ["exact", "best-density", "operator-centric"])
def test_plan_recovery_json_contract(cli, samples, algorithm):
    res = cli("plan", "recovery", samples / "recovery-fig1.json", "--budget", "1.6", "--algorithm", algorithm,
              "--time-limit", "30", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert {"algorithm", "budget", "partitions", "recovered_queries", "recovered_priority", "cost", "optimal",
            "elapsed_s"} <= set(doc)
    assert doc["algorithm"] == algorithm and doc["budget"] == 1.6 and doc["cost"] <= 1.6 + 1e-9
    assert isinstance(doc["recovered_priority"], float) and isinstance(doc["optimal"], bool)
    if algorithm == "best-density":
        assert doc["recovered_queries"] == ["Q1"] and doc["partitions"] == ["p3", "p5", "p7", "p9"]
    if algorithm == "exact":  # Q1 and Q2 tie (priority 1, four partitions each); HiGHS may return either
        assert (doc["recovered_queries"], doc["partitions"]) in [(["Q1"], ["p3", "p5", "p7", "p9"]),
                                                                 (["Q2"], ["p4", "p5", "p7", "p10"])]
    if algorithm == "exact":
        assert doc["optimal"] is True and doc["gap"] == 0


def test_plan_recovery_topology_form_and_human_table(cli, samples):
    res = cli("plan", "recovery", samples / "recovery-fig1-topology.json", "--budget", "0.8", "--algorithm", "exact")
    assert res.code == 0, res.err
    assert "recovers 1 of 2 failed queries, priority 2 of 3 (optimal)" in res.out
    assert "O5[0]" in res.out and "query" in res.out.splitlines()[1]


def test_plan_stages_json_contract(cli, samples):
    res = cli("plan", "stages", samples / "recovery-fig1.json", "--capacity", "0", "--arrivals", "1,1,1,1,1", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    stages = doc["stages"]
    assert len(stages) == 6 and stages[0]["capacity"] == 0 and stages[1]["capacity"] == 1
    assert stages[1]["placement"] == {"p3": "n1", "p5": "n1"} and stages[2]["recovered_queries"] == ["Q1"]
    assert all({"capacity", "partitions", "placement", "recovered_queries"} <= set(s) for s in stages)
    assert doc["mode"] == "incremental" and stages[0]["global_rollback"] is True


def test_plan_stages_options_and_table(cli, samples):
    res = cli("plan", "stages", samples / "recovery-fig1.json", "--capacity", "0.4,0.4", "--arrivals", "1",
              "--node-cap", "0.4", "--policy", "per-stage", "--failures", "3")
    assert res.code == 0, res.err
    assert "incremental recovery, policy per-stage, node cap 40%" in res.out
    assert "node n1 arrives" in res.out


@pytest.mark.parametrize("args", [
    ["plan", "recovery", "{P}", "--budget", "-1"],
    ["plan", "recovery", "{P}", "--budget", "nan"],
    ["plan", "recovery", "{P}", "--budget", "1", "--algorithm", "exact", "--time-limit", "0"],
    ["plan", "recovery", "{BAD}", "--budget", "1"],
    ["plan", "recovery", "missing.json", "--budget", "1"],
    ["plan", "stages", "{P}", "--capacity", "x", "--arrivals", "1"],
    ["plan", "stages", "{P}", "--capacity", "0", "--arrivals", "1,-2"],
    ["plan", "stages", "{P}", "--capacity", "0", "--node-cap", "2"],
    ["plan", "recovery", "{P}", "--budget", "1", "--algorithm", "dp"],
])
def test_bad_input_exits_2_with_one_line(cli, samples, tmp_path, args):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"queries": {"Q1": {"partitions": ["p1"]}}, "cost": {"p1": 1, "zz": 2}}))
    args = [a.replace("{P}", str(samples / "recovery-fig1.json")).replace("{BAD}", str(bad)) for a in args]
    res = cli(*args)
    assert res.code == 2
    assert res.err.strip().splitlines()[-1].startswith("ftops: error:") and "Traceback" not in res.err


def test_bad_document_message_names_field(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"queries": {"Q1": {"priority": -3, "partitions": ["p1"]}}}))
    res = cli("plan", "recovery", bad, "--budget", "1")
    assert res.code == 2 and res.err.strip() == "ftops: error: queries.Q1.priority: must be >= 0, got -3"


def test_quick_benchmark_writes_the_table(cli, tmp_path):
    out = tmp_path / "recovery.md"
    res = cli("bench", "recovery", "--quick", "--out", out, timeout=300)
    assert res.code == 0, res.err
    text = out.read_text()
    assert "Produced by `ftops bench recovery --quick --out" in text
    assert "cores, Python" in text and "UTC" in text
    for heading in ("## 1. Fig. 16 style", "### Summary per setting", "## 2. Fig. 2", "## 3. Scale"):
        assert heading in text
    assert "| order-then-pack | {p3, p5} -> - | {p7, p9} -> Q1 | {p4, p10} -> Q2 | {p6, p8} -> - | {p11, p12} -> Q3, Q4 |" in text
    assert "| (a) max sharing 3 (uniform, random prt) | 30% |" in text
    assert_plot(tmp_path / "recovery-quality.svg", text, "Recovered priority relative to the optimum (paper 003, Fig. 16)",
                "best-density (BD)", "operator-centric (OC)", "(a) max sharing 3 (uniform, random prt)",
                "(c) prt rising with cost (max 3)")
    assert_plot(tmp_path / "recovery-schedules.svg", text, "Fig. 2 instance: recovered priority as nodes arrive",
                "operator-centric", "order-then-pack", "per-stage", "nodes arrived")


def test_report_without_a_path_has_no_plots(tmp_path, monkeypatch):
    """--quick without --out prints the report only: no picture is written or linked."""
    from ft_core.bench.recovery import SETTINGS, BenchConfig, run_benchmark

    monkeypatch.chdir(tmp_path)
    tiny = BenchConfig(instances_per_setting=1, budgets=(0.5,), exact_time_limit=5.0, scale_sizes=(100,),
                       scale_instances=1, workers=1, settings=(next(iter(SETTINGS)),))
    report = run_benchmark(tiny, "ftops bench recovery --quick")
    assert "## 2. Fig. 2" in report and ".svg" not in report and not list(tmp_path.rglob("*.svg"))
