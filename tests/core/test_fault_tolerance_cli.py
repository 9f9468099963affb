"""The CLI contract: ``ftops transparency check``, ``ftops plan placement``, ``ftops plan redundancy``,
``ftops faults validate`` and ``ftops faults schedule`` (real subprocesses)."""

from __future__ import annotations

import json

import pytest
import yaml

from ft_core.redundancy.controller import load_trace, run_trace


def _one_line_error(res, prefix="ftops: error:"):
    lines = res.err.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith(prefix) and "Traceback" not in res.err


# --- transparency -------------------------------------------------------------------------------

def test_transparency_check_sample_is_transparent(cli, samples):
    res = cli("transparency", "check", samples / "replica-streams.yaml")
    assert res.code == 0, res.err
    assert "fig1-load: transparent: the merged output equals the unreplicated stream (4 rows, in a different order)" in res.out
    assert "duplicates dropped: 2 by the counters, 1 behind a punctuation" in res.out


def test_transparency_check_json_counts_first_arrivals(cli, samples):
    res = cli("transparency", "check", samples / "replica-streams.yaml", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["transparent"] is True and doc["output_rows"] == doc["reference_rows"] == 4
    assert doc["first_arrivals"] == {"u2,1": 2, "u2,2": 2} and doc["delivered_rows"] == {"u2,1": 4, "u2,2": 3}
    assert doc["duplicates_dropped"] == 2 and doc["late_dropped"] == 1 and doc["missing"] == []


def test_transparency_check_exits_3_and_lists_what_is_missing(cli, samples, tmp_path):
    doc = yaml.safe_load((samples / "replica-streams.yaml").read_text())
    lost = {"ts": "09:00:02", "server": "B", "load": 70}
    doc["reference"].append(lost)  # a row no replica delivered
    path = tmp_path / "lossy.json"
    path.write_text(json.dumps(doc))
    res = cli("transparency", "check", path)
    assert res.code == 3, res.err
    assert "NOT transparent: 1 reference rows missing, 0 unexpected rows" in res.out
    assert 'missing: {"load": 70, "server": "B", "ts": "09:00:02"}' in res.out


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(identity={}), "replicas.u2,1.2.punctuation: needs identity.timestamp"),
    (lambda d: d["replicas"]["u2,2"][2].update(punctuation=5), "a string timestamp cannot be compared with the number"),
    (lambda d: d["replicas"]["u2,1"][0].update(punctuation="09:00:00"), "replicas.u2,1.0: give exactly one of row, punctuation"),
    (lambda d: d["replicas"]["u2,1"][1].update(at=0.05), "replicas.u2,1.1.at: 0.05 is before the previous event's 0.2"),
    (lambda d: d["replicas"]["u2,1"][0]["row"].pop("ts"), "replicas.u2,1.0.row: missing field 'ts'"),
    (lambda d: d.pop("reference"), "reference: Field required"),
])
def test_transparency_check_bad_documents_exit_2_with_one_line(cli, samples, tmp_path, mutate, message):
    doc = yaml.safe_load((samples / "replica-streams.yaml").read_text())
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    res = cli("transparency", "check", path)
    assert res.code == 2 and _one_line_error(res) and message in res.err, res.err


# --- placement ----------------------------------------------------------------------------------

def test_plan_placement_json_prunes_to_the_target(cli, samples):
    res = cli("plan", "placement", samples / "placement-nodes.yaml", "--k-min", "1", "--k-max", "2",
              "--cost-target", "40", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["replicas"] == {"parse": ["b1"], "aggregate": ["b1"]}
    assert [(p["task"], p["node"], p["total_cost_after"]) for p in doc["pruned"]] == [("parse", "s1", 45.0), ("aggregate", "s1", 27.0)]
    assert doc["total_cost"] == 27.0 and doc["baseline_cost"] == 6.0 and doc["target_met"] is True


def test_plan_placement_table_and_unmet_target_warning(cli, samples):
    res = cli("plan", "placement", samples / "placement-nodes.yaml", "--k-min", "1", "--cost-target", "20")
    assert res.code == 0, res.err
    assert "2 replicas (k_min 1, k_max 1); stream cost 27 vs 6 unreplicated (4.50x), 8 streams vs 3" in res.out
    assert "warning: cost target 20 not met: 27 is the cost with k_min replicas kept" in res.out
    assert [line.split()[:3] for line in res.out.splitlines()[3:5]] == [["parse", "b1", "rack-b"], ["aggregate", "b1", "rack-b"]]


def test_plan_placement_infeasible_k_min_exits_3_with_the_possible_count(cli, samples):
    res = cli("plan", "placement", samples / "placement-nodes.yaml", "--k-min", "3")
    assert res.code == 3 and _one_line_error(res, "ftops: infeasible:")
    assert "only 2 possible (rack-b, standby)" in res.err


@pytest.mark.parametrize("args, message", [
    (["--k-min", "2", "--k-max", "1"], "--k-max: must be >= --k-min"),
    (["--k-min", "-1"], "--k-min: Input should be greater than or equal to 0"),
    (["--k-min", "1", "--cost-target", "-5"], "--cost-target"),
    (["--k-min", "x"], "--k-min: Input should be a valid integer"),
])
def test_plan_placement_bad_arguments_exit_2(cli, samples, args, message):
    res = cli("plan", "placement", samples / "placement-nodes.yaml", *args)
    assert res.code == 2 and message in res.err and "Traceback" not in res.err


def test_plan_placement_bad_document_names_the_field(cli, samples, tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_text((samples / "placement-nodes.yaml").read_text().replace("primary: a2", "primary: a9"))
    res = cli("plan", "placement", path, "--k-min", "1")
    assert res.code == 2 and _one_line_error(res)
    assert res.err.strip() == "ftops: error: placement document field tasks.1.primary: unknown node 'a9'"


# --- redundancy ---------------------------------------------------------------------------------

def test_plan_redundancy_from_the_model(cli, samples):
    res = cli("plan", "redundancy", "--model", samples / "redundancy-model.yaml", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["mode"] == "normal" and doc["level"] == pytest.approx(1 / 3)
    assert doc["spark_conf"] == {"spark.speculation": "true", "spark.speculation.quantile": "0.6667",
                                 "spark.speculation.multiplier": "2.3333", "spark.speculation.minTaskRuntime": "67ms"}
    text = cli("plan", "redundancy", "--model", samples / "redundancy-model.yaml", "--mode", "large-images")
    assert text.code == 0 and "--conf spark.speculation=false" in text.out and "detectFaces  4       0" in text.out


def test_plan_redundancy_from_the_trace(cli, samples):
    res = cli("plan", "redundancy", "--trace", samples / "latency-trace.yaml")
    assert res.code == 0, res.err
    assert "redundancy level 0.3 -> Spark speculation (first copy wins):" in res.out
    assert "--conf spark.speculation.quantile=0.7" in res.out and "--conf spark.speculation.multiplier=2.4" in res.out
    assert "16      440.0000   -60.0000   decrease  30.0000" in res.out


def test_plan_redundancy_state_file_carries_the_controller_across_runs(cli, samples, tmp_path):
    state = tmp_path / "controller.json"
    first = cli("plan", "redundancy", "--trace", samples / "latency-trace.yaml", "--state-file", state, "--json")
    second = cli("plan", "redundancy", "--trace", samples / "latency-trace.yaml", "--state-file", state, "--json")
    assert first.code == 0 and second.code == 0, first.err + second.err
    trace = load_trace(samples / "latency-trace.yaml")
    both = run_trace(trace.controller, trace.metric_ms * 2)
    assert first.json()["redundancy_pct"] == both[15].redundancy_pct
    assert second.json()["redundancy_pct"] == both[-1].redundancy_pct and second.json()["states"][-1]["periods"] == 32
    assert json.loads(state.read_text())["state"]["periods"] == 32


def test_plan_redundancy_level(cli):
    res = cli("plan", "redundancy", "--level", "0.25", "--json")
    assert res.code == 0 and res.json()["spark_conf"]["spark.speculation.multiplier"] == "2.5"


@pytest.mark.parametrize("args, message", [
    (["--level", "1.5"], "--level: Input should be less than or equal to 1"),
    (["--level", "0.2", "--mode", "normal"], "--mode: only applies with --model"),
    (["--model", "{S}/redundancy-model.yaml", "--mode", "turbo"], "--mode: unknown mode 'turbo'"),
    (["--trace", "{S}/latency-trace.yaml", "--state-file", "{S}/redundancy-model.yaml"], "controller: expected an object with 'params'"),
    (["--model", "{S}/nothing.yaml"], "does not exist"),
    ([], "one of the arguments --model --trace --level is required"),
])
def test_plan_redundancy_bad_input_exits_2(cli, samples, args, message):
    res = cli("plan", "redundancy", *[a.replace("{S}", str(samples)) for a in args])
    assert res.code == 2 and message in res.err and "Traceback" not in res.err, res.err


# --- faults -------------------------------------------------------------------------------------

def test_faults_validate_sample(cli, samples):
    res = cli("faults", "validate", samples / "fault-profile.yaml")
    assert res.code == 0, res.err
    assert "fault profile 'gc-pauses-and-a-rack' is valid: 5 fault processes" in res.out
    assert "aggregate[1]  slowdown     every 1 s (exp.)   150 +- 37.5 ms" in res.out
    doc = cli("faults", "validate", samples / "fault-profile.yaml", "--json").json()
    assert doc["valid"] is True and doc["processes"] == 5 and doc["profile"]["domains"]["rack-a"]["at_s"] == [300.0]


def test_faults_validate_bad_profile_names_the_field(cli, tmp_path):
    path = tmp_path / "profile.yaml"
    path.write_text("operators:\n  agg:\n    slowdown:\n      every_s: {mean: 1}\n      magnitude_ms: {mean: 150, sd: 30}\n")
    res = cli("faults", "validate", path)
    assert res.code == 2 and _one_line_error(res)
    assert "fault profile field operators.agg.slowdown.magnitude_ms.stddev: Field required" in res.err


def test_faults_schedule_is_deterministic_in_the_seed(cli, samples):
    args = ("faults", "schedule", samples / "fault-profile.yaml", "--duration", "400", "--seed", "7", "--json")
    first, again = cli(*args), cli(*args)
    assert first.code == 0 and first.out == again.out
    doc = first.json()
    times = [e["time_s"] for e in doc["events"]]
    assert times == sorted(times) and all(0 <= t < 400 for t in times) and doc["seed"] == 7
    assert {"time_s": 300.0, "kind": "domain", "target": "rack-a", "magnitude_ms": None, "duration_s": 60.0} in doc["events"]
    other = cli("faults", "schedule", samples / "fault-profile.yaml", "--duration", "400", "--seed", "8", "--json")
    assert other.json()["events"] != doc["events"]


def test_faults_schedule_table_and_bad_duration(cli, samples):
    res = cli("faults", "schedule", samples / "fault-profile.yaml", "--duration", "5", "--seed", "1")
    assert res.code == 0 and res.out.startswith("gc-pauses-and-a-rack: ") and " slowdown" in res.out
    bad = cli("faults", "schedule", samples / "fault-profile.yaml", "--duration", "-3", "--seed", "1")
    assert bad.code == 2 and _one_line_error(bad) and "--duration" in bad.err
