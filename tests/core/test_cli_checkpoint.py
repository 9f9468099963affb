"""The CLI contract of ``ftops plan checkpoint`` (paper 004, Chiron), run as a subprocess.

Example B of the digest (/work/shared/notes/paper-004-chiron.md): CI* = 57.759 s, L* = 1434.45 ms
for C_TRT = 180 s."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

A_COEF = (0.01, 1.5, 60.0)
P_COEF = (0.2, -30.0, 2500.0)


def example_b(tmp_path, *, intervals_s=np.linspace(1.0, 60.0, 11), suffix=".json", mutate=None):
    """A profiles document whose closed_form worst-case TRT is A(CI) and latency P(CI) (3 runs each)."""
    profiles = []
    for ci in map(float, intervals_s):
        a, p = float(np.polyval(A_COEF, ci)), float(np.polyval(P_COEF, ci))
        reps = [{"run_id": f"r{k}", "avg_ingress_rate": 300.0, "max_ingress_rate": 600.0, "avg_latency_ms": p * f,
                 "recovery_time_s": (a - ci - 20) / 2 * f, "warmup_time_s": 0.0} for k, f in enumerate((0.97, 1.0, 1.02))]
        profiles.append({"checkpoint_interval_ms": round(ci * 1000, 6), "repetitions": reps})
    doc = {"detection_timeout_s": 10.0, "profiles": profiles}
    if mutate:
        mutate(doc)
    path = tmp_path / f"profiles{suffix}"
    path.write_text(yaml.safe_dump(doc) if suffix == ".yaml" else json.dumps(doc))
    return path


def test_json_contract_on_the_shipped_sample(cli, samples):
    res = cli("plan", "checkpoint", samples / "profiles-example.json", "--max-recovery-s", "150", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert {"checkpoint_interval_ms", "predicted_latency_ms", "predicted_recovery_s", "r2"} <= set(doc)
    assert set(doc["r2"]) == {"latency", "recovery"} and all(0 < v <= 1 for v in doc["r2"].values())
    assert doc["case"] == "max" and doc["variant"] == "paper_eq4"
    lo, hi = doc["profiled_range_ms"]
    assert lo <= doc["checkpoint_interval_ms"] <= hi and doc["predicted_recovery_s"] <= 150
    assert doc["young_interval_ms"] > doc["daly_interval_ms"] > 0


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_example_b_through_the_cli(cli, tmp_path, suffix):
    path = example_b(tmp_path, suffix=suffix)
    res = cli("plan", "checkpoint", path, "--max-recovery-s", "180", "--variant", "closed_form", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["checkpoint_interval_ms"] == pytest.approx(57_759.0, abs=0.5)
    assert doc["predicted_latency_ms"] == pytest.approx(1434.45, abs=5e-3)
    assert doc["predicted_recovery_s"] == pytest.approx(180.0) and doc["predicted_recovery_s"] <= 180.0
    assert doc["r2"]["latency"] == pytest.approx(1.0) and doc["r2"]["recovery"] == pytest.approx(1.0)
    assert doc["young_interval_ms"] is None  # no checkpoint cost or MTBF in this document


def test_case_and_variant_options_change_the_plan(cli, samples):
    runs = {(c, v): cli("plan", "checkpoint", samples / "profiles-example.json", "--max-recovery-s", "120",
                        "--case", c, "--variant", v, "--json") for c, v in [("max", "paper_eq4"), ("avg", "paper_eq4"),
                                                                          ("max", "eq2")]}
    ci = {k: r.json()["checkpoint_interval_ms"] for k, r in runs.items()}
    assert ci[("max", "paper_eq4")] < ci[("avg", "paper_eq4")]
    assert ci[("max", "paper_eq4")] < ci[("max", "eq2")]
    assert runs[("max", "eq2")].json()["variant"] == "eq2"


def test_human_table(cli, samples):
    res = cli("plan", "checkpoint", samples / "profiles-example.json", "--max-recovery-s", "150")
    assert res.code == 0, res.err
    assert res.out.startswith("checkpoint interval ") and "R^2 latency" in res.out
    assert "interval ms" in res.out and "Young" in res.out
    assert len(res.out.strip().splitlines()) == 3 + 2 + 11


def test_infeasible_bound_exits_3_with_the_smallest_achievable_recovery(cli, tmp_path):
    res = cli("plan", "checkpoint", example_b(tmp_path), "--max-recovery-s", "50", "--variant", "closed_form")
    assert res.code == 3 and res.out == ""
    assert res.err.count("\n") == 1 and "infeasible" in res.err
    assert "smallest predicted recovery time is 61.51 s, at checkpoint_interval_ms=1000" in res.err
    as_json = cli("plan", "checkpoint", example_b(tmp_path), "--max-recovery-s", "50", "--variant", "closed_form", "--json")
    assert as_json.code == 3 and as_json.err == ""
    assert as_json.json()["kind"] == "infeasible" and as_json.json()["exit_code"] == 3
    assert "61.51 s" in as_json.json()["error"]


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(profiles=[]), "no profiles"),
    (lambda d: d.update(profiles=d["profiles"][:1]), "only 1 distinct interval"),
    (lambda d: d["profiles"][2]["repetitions"][0].update(recovery_time_s=-3), "profiles.2.repetitions.0.recovery_time_s"),
    (lambda d: d["profiles"][1]["repetitions"][2].pop("avg_ingress_rate"), "profiles.1.repetitions.2.avg_ingress_rate: Field required"),
])
def test_bad_documents_exit_2_with_one_line(cli, tmp_path, mutate, message):
    res = cli("plan", "checkpoint", example_b(tmp_path, mutate=mutate), "--max-recovery-s", "180")
    assert res.code == 2 and res.out == ""
    assert res.err.count("\n") == 1 and message in res.err and "Traceback" not in res.err


def test_missing_file_and_bad_bound_exit_2(cli, tmp_path, samples):
    missing = cli("plan", "checkpoint", tmp_path / "nope.json", "--max-recovery-s", "180")
    assert missing.code == 2 and "does not exist" in missing.err
    negative = cli("plan", "checkpoint", samples / "profiles-example.json", "--max-recovery-s", "-1")
    assert negative.code == 2 and "--max-recovery-s: Input should be greater than 0" in negative.err
    bad_case = cli("plan", "checkpoint", samples / "profiles-example.json", "--max-recovery-s", "100", "--case", "p99")
    assert bad_case.code == 2


def test_variant_auto_chooses_the_variant_closest_to_the_measured_recovery_times(cli, tmp_path):
    def measured(doc):  # every run measured the closed_form worst case, A(CI)
        for entry in doc["profiles"]:
            for rep in entry["repetitions"]:
                rep["total_recovery_time_s"] = float(np.polyval(A_COEF, entry["checkpoint_interval_ms"] / 1000))

    res = cli("plan", "checkpoint", example_b(tmp_path, mutate=measured), "--max-recovery-s", "180", "--variant", "auto", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["variant"] == doc["variant_choice"]["chosen"] == "closed_form"
    assert doc["variant_choice"]["errors"]["closed_form"] == pytest.approx(0.0, abs=1e-9)
    assert doc["checkpoint_interval_ms"] == pytest.approx(57_759.0, abs=0.5)
    human = cli("plan", "checkpoint", example_b(tmp_path, mutate=measured), "--max-recovery-s", "180", "--variant", "auto")
    assert human.out.startswith("variant closed_form: closed_form has the lowest mean error")


def test_variant_auto_without_measured_recovery_times_exits_2_with_one_line(cli, tmp_path):
    res = cli("plan", "checkpoint", example_b(tmp_path), "--max-recovery-s", "180", "--variant", "auto")
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1 and "no measured total_recovery_time_s" in res.err
