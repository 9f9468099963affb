"""The CLI contract of issue 2: ``ftops fidelity``, ``ftops plan replication``, ``ftops topology check``."""

from __future__ import annotations

import json

import pytest


def test_fidelity_json_contract(cli, samples):
    res = cli("fidelity", samples / "fig2-join.json", "--failed", "O2[1]", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert set(doc) == {"output_fidelity", "internal_completeness", "information_loss"}
    assert doc["output_fidelity"] == pytest.approx(0.6)
    assert doc["information_loss"]["O3[0]"] == pytest.approx(0.4)


def test_fidelity_without_failures_and_human_table(cli, samples):
    res = cli("fidelity", samples / "q1-topk.json")
    assert res.code == 0 and "output fidelity 1.0000" in res.out


@pytest.mark.parametrize("algorithm", ["exact", "structure-aware", "greedy"])
def test_plan_replication_json_contract(cli, samples, algorithm):
    res = cli("plan", "replication", samples / "q2-incidents.json", "--budget", "8", "--algorithm", algorithm,
              "--time-limit", "30", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert {"algorithm", "budget", "tasks", "output_fidelity", "optimal", "elapsed_s"} <= set(doc)
    assert doc["algorithm"] == algorithm and doc["budget"] == 8 and len(doc["tasks"]) <= 8
    check = cli("fidelity", samples / "q2-incidents.json", "--json", "--failed",
                ",".join(t for t in _all_tasks(samples) if t not in doc["tasks"]))
    assert check.json()["output_fidelity"] == pytest.approx(doc["output_fidelity"])


def _all_tasks(samples):
    doc = json.loads((samples / "q2-incidents.json").read_text())
    return [f"{op['name']}[{k}]" for op in doc["operators"] for k in range(op["parallelism"])]


def test_exact_reports_optimality(cli, samples):
    doc = cli("plan", "replication", samples / "fig6-recovery.json", "-R", "5", "--algorithm", "exact", "--json").json()
    assert doc["optimal"] is True and doc["output_fidelity"] == pytest.approx(1 / 16)


def test_topology_check_summary(cli, samples):
    res = cli("topology", "check", samples / "fig1.json")
    assert res.code == 0
    assert "4 operators, 10 tasks" in res.out and "16 MC-trees" in res.out


@pytest.mark.parametrize("args, needle", [
    (["fidelity", "FILE", "--failed", "O9[0]"], "'O9[0]' is not a task"),
    (["plan", "replication", "FILE", "--budget", "-3"], "--budget"),
    (["plan", "replication", "FILE", "--budget", "3", "--algorithm", "dp"], "invalid choice"),
    (["topology", "check", "/nonexistent.json"], "does not exist"),
])
def test_bad_input_exits_2_with_a_message(cli, samples, args, needle):
    args = [str(samples / "fig1.json") if a == "FILE" else a for a in args]
    res = cli(*args)
    assert res.code == 2
    assert needle in res.err and "Traceback" not in res.err
    assert res.out == ""


def test_with_json_the_error_is_one_json_document_on_stdout(cli, samples):
    res = cli("plan", "replication", samples / "fig1.json", "--budget", "-3", "--json")
    assert res.code == 2 and res.err == ""
    assert res.json() == {"error": res.json()["error"], "field": "--budget", "kind": "usage", "exit_code": 2}
    assert res.json()["error"].startswith("--budget: Input should be greater than or equal to 0 (got '-3')")


def test_invalid_topology_exits_2(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("operators:\n  - {name: A, parallelism: 2}\n  - {name: B, parallelism: 1}\n"
                   "streams:\n  - {from: A, to: C, partitioning: merge}\n")
    res = cli("topology", "check", bad)
    assert res.code == 2 and "streams.0.to: unknown operator 'C'" in res.err
