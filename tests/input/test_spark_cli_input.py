"""Hostile input to the spark_jobs commands (issue 18): refused before anything starts, no Spark needed.

Only the paths that reject input run here. Every base command line carries a *poison*: an argument
that is checked after parsing and before anything starts (a missing deployment, a parameter of 0),
so if a generated value were ever accepted by mistake the command would still stop with a different
message (and the test would fail on the needle) instead of starting a cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ft_core.input.limits import current_limits
from tests.conftest import SAMPLES
from tests.input.harness import rejected, run, write_document
from tests.input.test_hostile_documents import _JSON, GARBAGE, SETTINGS, _garbage
from tests.input.test_hostile_flags import refuse_a_bad_number

LIMITS = current_limits()
NOWHERE = "/nonexistent/ftops-input-test"

# command -> (argv with a poison, {flag: (kind, limit)})
FLAGS = {
    "workload run": (["workload", "run", "topk", "--role", "replica", "--input", f"{NOWHERE}/in", "--output", f"{NOWHERE}/out",
                      "--checkpoint", f"{NOWHERE}/ck"],  # poison: a replica without --plan
                     {"--trigger-s": ("positive", LIMITS.max_duration_s), "--duration-s": ("positive", LIMITS.max_duration_s),
                      "--shuffle-partitions": ("count1", LIMITS.max_tasks), "--executor-cores": ("count1", LIMITS.max_nodes),
                      "--redundancy-level": ("fraction", None), "--driver-memory": ("memory", None),
                      "--executor-memory": ("memory", None)}),
    "workload generate": (["workload", "generate", "topk", "--input", f"{NOWHERE}/in", "--param", "p1=0"],
                          {"--seconds": ("positive", LIMITS.max_duration_s), "--speedup": ("positive", None)}),
    "workload retune": (["workload", "retune", "--state-file", f"{NOWHERE}/state.json"],  # poison: no run arguments
                        {"--bound-ms": ("positive", LIMITS.max_duration_s * 1000), "--min-batches": ("count1", LIMITS.max_tasks),
                         "--warmup-batches": ("count0", LIMITS.max_tasks)}),
    "units deploy": (["units", "deploy", "--placement", f"{NOWHERE}/p.json", "--deployment-dir", NOWHERE],
                     {"--trigger-s": ("positive", LIMITS.max_duration_s), "--backlog-s": ("nonnegative", LIMITS.max_duration_s),
                      "--timeout-s": ("positive", LIMITS.max_duration_s)}),
    "units recover": (["units", "recover", "--schedule", f"{NOWHERE}/s.json", "--deployment-dir", NOWHERE],
                {"--timeout-s": ("positive", LIMITS.max_duration_s), "--wait-recovered-s": ("nonnegative", LIMITS.max_duration_s)}),
    "profile checkpoint": (["profile", "checkpoint", "--workload", "nope", "--duration", "10", "--intervals", "1,2,3"],
                           {"--duration": ("positive", LIMITS.max_duration_s), "--failures": ("count1", LIMITS.max_tasks),
                            "--repetitions": ("count1", LIMITS.max_tasks), "--parallel": ("count1", LIMITS.max_nodes),
                            "--detection-timeout-s": ("nonnegative", LIMITS.max_duration_s),
                            "--intervals": ("positive list", LIMITS.max_duration_s), "--mtbf-s": ("positive", None)}),
    "drill run": (["drill", "run", "--workload", "topk", "--budget", "1", "--param", "p1=0"],
                  {"--new-capacity-after": ("nonnegative", LIMITS.max_duration_s), "--primary-workers": ("count1", LIMITS.max_nodes),
                   "--trigger-s": ("positive", LIMITS.max_duration_s), "--speedup": ("positive", None),
                   "--timeout-s": ("positive", LIMITS.max_duration_s), "--port-base": ("port base", None)}),
    "faults inject": (["faults", "inject", f"{NOWHERE}/profile.yaml", "--output", NOWHERE, "--seed", "1"],
                      {"--duration": ("positive", LIMITS.max_duration_s)}),
    "transparency serve": (["transparency", "serve", "--primary", NOWHERE, "--out", f"{NOWHERE}/view"],
              {"--poll-s": ("positive", LIMITS.max_duration_s), "--duration-s": ("positive", LIMITS.max_duration_s),
               "--predicted-of": ("fraction", None)}),
    "cluster up": (["cluster", "up", "--workers", "", "--state-dir", NOWHERE],
                   {"--cores": ("count1", LIMITS.max_nodes), "--standby-workers": ("count0", LIMITS.max_nodes),
                    "--memory": ("memory", None), "--primary-port": ("port", None), "--standby-ui": ("port", None)}),
    "cluster add-worker": (["cluster", "add-worker", "--state-dir", NOWHERE],  # poison: no --domain
                           {"--cores": ("count1", LIMITS.max_nodes), "--memory": ("memory", None)}),
    "bench drills": (["bench", "drills", "--workloads", "nope"], {"--ratios": ("share", None), "--port-base": ("port base", None),
                                                               "--timeout-s": ("positive", LIMITS.max_duration_s)}),
    "bench redundancy": (["bench", "redundancy", "--controller-modes", "nope", "--work-dir", f"{NOWHERE}/bench"],
                         {"--port-base": ("port base", None), "--batches": ("count1", LIMITS.max_tasks),
                          "--executors": ("count1", LIMITS.max_nodes), "--deadline-ms": ("positive", LIMITS.max_duration_s * 1000)}),
    "bench recovery-runtime": (["bench", "recovery-runtime", "--pipeline", "no.such.module:pipeline"],  # poison: no --placement
                               {"--repetitions": ("count1", LIMITS.max_tasks), "--port-base": ("port base", None)}),
    "profile topology": (["profile", "topology"],  # poison: no --spark-ui
                         {"--timeout-s": ("positive", LIMITS.max_duration_s), "--last-batches": ("count1", LIMITS.max_tasks)}),
    "job register": (["job", "register", "--spark-ui", "http://127.0.0.1:9"],  # poison: no --name
                     {"--timeout-s": ("positive", LIMITS.max_duration_s), "--last-batches": ("count1", LIMITS.max_tasks),
                      "--budget": ("count0", LIMITS.max_tasks)}),
    "units problem": (["units", "problem", "--deployment-dir", NOWHERE], {"--cost": ("unit cost", None)}),
    "job set": (["job", "set", "poisoned"],  # poison: nothing to set
                {"--priority": ("positive", 1_000_000)}),
    "faults domain-down": (["faults", "domain-down", "--output", NOWHERE, "--domain", "rack-a", "--hosts", "h"],  # poison: no run
                           {"--timeout-s": ("positive", LIMITS.max_duration_s)}),
    "stack status": (["stack", "status", "--poison"], {"--airflow-port": ("port", None)}),
    "bench soak": (["bench", "soak", "--poison"], {"--airflow-port": ("port", None), "--drills": ("count1", 1000)}),
}
CASES = sorted((command, flag) for command, (_, flags) in FLAGS.items() for flag in flags)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile-spark-cli")


def test_every_poison_stops_its_command_before_anything_starts(work):
    """Without a bad flag, each base command line fails on its poison, so the property below is safe."""
    for command, (argv, _) in FLAGS.items():
        res = run(argv, work)
        assert res.code == 2 and res.err.count("\n") == 1, (command, res.err)


@pytest.mark.parametrize("new", ["units recover", "transparency serve"])
def test_an_old_command_name_runs_the_moved_command_and_says_where_it_went(work, new):
    """``ftops recover`` and ``ftops serve`` moved into their groups; the old names stay for one release."""
    argv = FLAGS[new][0]
    moved, old = run(argv, work), run(argv[1:], work)
    assert old.code == moved.code == 2
    note, error = old.err.splitlines()
    assert note == f"ftops: note: `ftops {argv[1]}` is now `ftops {new}`; the old name goes away in the next release"
    assert error == moved.err.strip()


@settings(max_examples=100, **SETTINGS)
@given(data=st.data(), case=st.sampled_from(CASES))
def test_a_bad_number_on_a_spark_flag_exits_2_naming_it(work, data, case):
    refuse_a_bad_number(FLAGS, case, data, work)


# command -> (argv around the document, what the message names, a valid sample or None)
DOCUMENTS = {
    "workload run --plan": (lambda p: ["workload", "run", "topk", "--role", "replica", "--plan", p, "--input", f"{NOWHERE}/in",
                                       "--output", f"{NOWHERE}/out", "--checkpoint", f"{NOWHERE}/ck"], "--plan"),
    "drill run --plan": (lambda p: ["drill", "run", "--workload", "topk", "--plan", p, "--work-dir", f"{NOWHERE}/drill"], "--plan"),
    "units deploy --placement": (lambda p: ["units", "deploy", "--placement", p, "--deployment-dir", NOWHERE], "--placement"),
    "faults inject": (lambda p: ["faults", "inject", p, "--output", NOWHERE, "--duration", "10", "--seed", "1"], "fault profile"),
    "profile validate --profiles": (lambda p: ["profile", "validate", "--workload", "topk", "--profiles", p,
                                               "--max-recovery-s", "10", "--duration", "10", "--work-dir", f"{NOWHERE}/v"],
                                    "profiles"),
    "workload topology --rates-from": (lambda p: ["workload", "topology", "topk", "--rates-from", p], "--rates-from"),
    "faults domain-down --domains": (lambda p: ["faults", "domain-down", "--output", NOWHERE, "--domain", "rack-a",
                                                "--domains", p], "--domains"),
    "units recover --schedule": (lambda p: ["units", "recover", "--schedule", p, "--deployment-dir", NOWHERE], "--schedule"),
    "bench recovery-runtime --placement": (lambda p: ["bench", "recovery-runtime", "--placement", p, "--pipeline",
                                                      "no.such.module:pipeline"], "--placement"),
}
DOC_NAMES = sorted(DOCUMENTS)


@settings(max_examples=40, **SETTINGS)
@given(name=st.sampled_from(DOC_NAMES), kind=st.sampled_from(GARBAGE), noise=st.binary(min_size=1, max_size=64))
def test_unreadable_documents_are_refused_before_anything_starts(work, name, kind, noise):
    argv, what = DOCUMENTS[name]
    data, needle = _garbage(noise, kind, (SAMPLES / "fault-profile.yaml").read_text())
    if name.endswith("--rates-from") and "yaml" in kind:
        needle = "is not valid JSON"  # JSON lines are never YAML
    path = work / ("garbage.yaml" if "yaml" in kind else "garbage.json")
    path.write_bytes(data)
    res = rejected(argv(path), work, needle)
    assert what in res.err, res.err


@settings(max_examples=30, **SETTINGS)
@given(name=st.sampled_from(DOC_NAMES), doc=_JSON.filter(lambda d: d != {} and d != []))
def test_documents_of_the_wrong_shape_are_refused(work, name, doc):
    argv, what = DOCUMENTS[name]
    # any mapping of non-empty names to non-empty names is a well-formed failure-domain map (then --domain is refused)
    assume(not (name.endswith("--domains") and isinstance(doc, dict) and doc
                and all(isinstance(k, str) and k.strip() and isinstance(v, str) and v.strip() for k, v in doc.items())))
    rejected(argv(write_document(work, "shape.json", doc)), work, what)


def test_a_metrics_file_with_a_bad_line_names_the_line(work):
    good = {"timestamp": "2026-01-01T00:00:00.000Z", "batch_duration_ms": 5, "tasks": {"O1[0]": {"in": 3, "out": 3}}}
    path = work / "metrics.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "batch_duration_ms": -5}) + "\n")
    rejected(["workload", "topology", "topk", "--rates-from", path], work, "--rates-from line 2 field batch_duration_ms")
    path.write_text(json.dumps(good) + "\n" + "{" * 100 + "\n")
    rejected(["workload", "topology", "topk", "--rates-from", path], work, "line 2: nested deeper than the limit of 64 levels (set")
    path.write_text(json.dumps(good) + "\n")
    assert run(["workload", "topology", "topk", "--rates-from", path, "--json"], work).code == 0


@pytest.mark.parametrize("param, needle", [("p1=10000000", "--param p1: exceeds the limit of 100000 tasks"),
                                           ("rate=inf", "--param rate: Input should be a finite number"),
                                           ("n_pages=1e18", "--param n_pages"), ("window_s=99999999999", "--param window_s")])
def test_workload_parameters_are_bounded(work, param, needle):
    rejected(["workload", "topology", "topk", "--param", param], work, needle)


def test_a_failure_domain_map_with_an_empty_host_or_domain_is_refused(work):
    """An empty host matches no executor and an empty domain names none: the map is refused as ``--domains``
    (Hypothesis found ``{"": ""}`` reported as a missing ``--domain`` instead)."""
    for doc in ({"": "rack-a"}, {"10.0.0.5": " "}):
        path = write_document(work, "domains.json", doc)
        rejected(["faults", "domain-down", "--output", NOWHERE, "--domain", "rack-a", "--domains", path], work,
                 "--domains: ")
