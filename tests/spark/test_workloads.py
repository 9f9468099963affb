"""The sample pipelines on real Spark (local[2], small), through the pipeline API every user's job uses:
topology documents that are true of the jobs, streaming output equal to the batch reference (and to an
independent pure-Python implementation) across a restart, replicas restricted to a plan computing
exactly the replicated MC-trees' contribution, and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from ft_core.topology.document import parse_topology
from spark_jobs.pipeline import sample_input as generator
from spark_jobs.pipeline.keys import key_group, key_group_column
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.metrics import observed_groups, read_metrics, total_counts
from spark_jobs.pipeline.sink import closed_rows, read_output, row_key

ROOT = Path(__file__).resolve().parents[2]
TOPK_PARAMS = ["window_s=5", "watermark_s=1", "rate=100", "n_pages=60"]
INCIDENT_PARAMS = ["window_s=10", "watermark_s=1", "rate=100"]


def _workload_cli(*args: str) -> subprocess.CompletedProcess:
    """``ftops workload ...``: through the ftops entry point once registered, else the module."""
    registered = any(e.name == "workload" for e in entry_points(group="ftops.commands"))
    cmd = [sys.executable, "-m", "ft_core.cli.main", "workload"] if registered else [sys.executable, "-m", "spark_jobs.cli.workload"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def _run(spark, pipeline, role, inp, out, params, **kw):
    from spark_jobs.runtime.run_pipeline import JobConfig, run

    return run(JobConfig(pipeline, role, inp, out, params=params, **kw), spark=spark)


def _sorted(rows):
    return sorted(rows, key=row_key)


def _downstream_sums(topo, totals, target):
    """Per task of ``target``, the sum of its upstream tasks' output counts along the declared streams."""
    sums = {f"{target}[{k}]": 0 for k in range(topo.operator(target).parallelism)}
    for stream in topo.streams:
        if stream.target != target:
            continue
        p_up, p_down = topo.operator(stream.source).parallelism, topo.operator(target).parallelism
        assert stream.partitioning in ("merge", "one_to_one")
        for k in range(p_up):
            sums[f"{target}[{k * p_down // p_up}]"] += totals[f"{stream.source}[{k}]"]["out"]
    return sums


def test_topology_documents_parse_and_follow_the_pipelines():
    topk = load_workload("topk", ["p1=4"]).topology()
    assert [(o.name, o.parallelism) for o in topk.operators] == [("O1", 4), ("O2", 2), ("O3", 1)]
    assert [(s.source, s.target, s.partitioning) for s in topk.streams] == [("O1", "O2", "merge"), ("O2", "O3", "merge")]
    rates = {t: topk.task_rate(t) for t in topk.task_ids()}
    assert rates["O3[0]"] == pytest.approx(200.0)
    assert rates["O2[0]"] == pytest.approx(rates["O1[0]"] + rates["O1[1]"])
    inc = load_workload("incidents", ["p1=8", "p2=4"]).topology()
    assert [(o.name, o.parallelism, o.input_model) for o in inc.operators] == [
        ("O1", 8, "independent"), ("O2", 4, "independent"), ("O3", 4, "correlated"), ("O4", 1, "independent")]
    assert [(s.source, s.target, s.partitioning) for s in inc.streams] == [
        ("O1", "O3", "merge"), ("O2", "O3", "one_to_one"), ("O3", "O4", "merge")]
    assert parse_topology(inc.to_document()) == inc
    with pytest.raises(ValueError, match="p2"):
        load_workload("topk", ["p1=4", "p2=3"])


def test_cli_prints_a_valid_topology_and_rejects_bad_params(tmp_path):
    res = _workload_cli("topology", "topk", "--param", "p1=8", "--json")
    assert res.returncode == 0, res.stderr
    topo = parse_topology(json.loads(res.stdout))
    assert topo.operator("O1").parallelism == 8 and topo.operator("O2").parallelism == 4
    bad = _workload_cli("topology", "topk", "--param", "colour=red")
    assert bad.returncode == 2 and "colour" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    as_json = _workload_cli("topology", "topk", "--param", "colour=red", "--json")  # the error as one document on stdout
    assert as_json.returncode == 2 and as_json.stderr == "" and json.loads(as_json.stdout)["field"] == "--param"


def test_key_groups_are_the_same_in_python_and_spark(spark):
    from pyspark.sql import functions as F

    w = load_workload("incidents", ["p1=8", "p2=4"])
    rows = spark.range(0, 500).select(F.col("id").alias("k"), key_group_column("k", 8, w.key_base).alias("g1"),
                                      key_group_column("k", 4, w.key_base).alias("g3")).collect()
    assert [(r.g1, r.g3) for r in rows] == [(key_group(r.k, 8, w.key_base), key_group(r.k, 4, w.key_base)) for r in rows]
    assert all(r.g3 == r.g1 // 2 for r in rows)  # merge O1[k] -> O3[k // 2] holds for every key
    assert {r.g1 for r in rows} == set(range(8))


def test_generator_is_deterministic_and_resumable(tmp_path):
    spec = load_workload("incidents", INCIDENT_PARAMS)
    generator.write_seconds(spec, tmp_path / "a", 6)
    generator.write_seconds(spec, tmp_path / "b", 3)
    generator.write_seconds(spec, tmp_path / "b", 3, first=3)
    for source in ("locations", "incidents"):
        assert generator.read_records(spec, tmp_path / "a", source) == generator.read_records(spec, tmp_path / "b", source)
    locs = generator.read_records(spec, tmp_path / "a", "locations")
    assert len(locs) == 600 and all(spec.start_ms <= r["ts"] < spec.start_ms + 6000 for r in locs)


def test_topk_stream_across_a_restart_equals_the_reference_and_its_metrics_match_the_topology(spark, tmp_path):
    from spark_jobs.workloads import topk

    spec = load_workload("topk", TOPK_PARAMS)
    inp, out, ckpt, ref = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt", tmp_path / "ref"
    common = dict(checkpoint=ckpt, available_now=True, max_files_per_trigger=10)
    generator.write_seconds(spec, inp, 10)
    _run(spark, "topk", "primary", inp, out, TOPK_PARAMS, **common)
    generator.write_seconds(spec, inp, 10, first=10)  # more input, then a new run from the checkpoint
    _run(spark, "topk", "primary", inp, out, TOPK_PARAMS, **common)
    meta = _run(spark, "topk", "reference", inp, ref, TOPK_PARAMS)

    reference = read_output(ref)
    assert reference == _sorted(topk.python_reference(spec.params, generator.read_records(spec, inp, "requests")))
    streamed = read_output(out)
    assert meta["closed_until_ms"] == max(r["ts"] for r in generator.read_records(spec, inp, "requests")) - 1000
    expected = closed_rows(reference, meta["closed_until_ms"])
    assert len({r["window_start"] for r in expected}) == 3  # windows [0,5) [5,10) [10,15) closed
    assert streamed == expected

    topo = parse_topology(json.loads((out / "_run.json").read_text())["topology"])
    records = read_metrics(out / "_metrics" / "metrics.jsonl")
    assert len(records) >= 3 and all(set(r["tasks"]) == set(topo.task_ids()) for r in records)
    assert observed_groups(records, "in") == {op.name: set(range(op.parallelism)) for op in topo.operators}
    # O1 and O3 keep their key (server; none) in their output, O2 sums pages over servers: no O2.out
    assert observed_groups(records, "out") == {"O1": set(range(4)), "O3": {0}}
    totals = total_counts(records)
    requests = generator.read_records(spec, inp, "requests")
    for k in range(4):
        assert totals[f"O1[{k}]"]["in"] == sum(key_group(r["server"], 4, spec.key_base) == k for r in requests)
    # each O2 task's input is exactly what its declared upstream O1 tasks emitted (merge)
    assert {t: totals[t]["in"] for t in _downstream_sums(topo, totals, "O2")} == _downstream_sums(topo, totals, "O2")
    assert totals["O3[0]"]["out"] == len(streamed)


def test_topk_replica_computes_exactly_the_planned_mc_trees(spark, tmp_path, cli):
    from spark_jobs.workloads import topk

    spec = load_workload("topk", TOPK_PARAMS)
    topo_file = tmp_path / "topk.json"
    topo_file.write_text(json.dumps(spec.topology().to_document()))
    res = cli("plan", "replication", topo_file, "--budget", "3", "--algorithm", "exact", "--json")
    assert res.code == 0, res.err
    plan = res.json()
    (mc_tree,) = [t for t in plan["tasks"] if t.startswith("O1")]
    k = int(mc_tree[3:-1])
    assert {mc_tree, f"O2[{k // 2}]", "O3[0]"} == set(plan["tasks"])  # budget 3 = one complete MC-tree O1 -> O2 -> O3
    plan["tasks"].append("O1[3]" if mc_tree != "O1[3]" else "O1[0]")  # half a tree more: must add nothing
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    inp = tmp_path / "in"
    generator.write_seconds(spec, inp, 12)
    _run(spark, "topk", "replica", inp, tmp_path / "replica", TOPK_PARAMS, checkpoint=tmp_path / "ckpt",
         plan=plan_file, available_now=True)
    meta = _run(spark, "topk", "reference", inp, tmp_path / "ref", TOPK_PARAMS)

    tasks = frozenset(plan["tasks"])
    expected = _sorted(closed_rows(topk.python_reference(spec.params, generator.read_records(spec, inp, "requests"), tasks),
                                   meta["closed_until_ms"]))
    assert expected and read_output(tmp_path / "replica") == expected
    assert expected != closed_rows(read_output(tmp_path / "ref"), meta["closed_until_ms"])  # tentative, not accurate
    records = read_metrics(tmp_path / "replica" / "_metrics" / "metrics.jsonl")
    seen = observed_groups(records, "in")
    assert {f"{op}[{k}]" for op, ks in seen.items() for k in ks} == tasks  # only planned tasks saw input
    # O2 sums over servers (no O2.out); every other planned task emitted rows
    assert {f"{op}[{k}]" for op, ks in observed_groups(records, "out").items() for k in ks} == \
        {t for t in tasks if not t.startswith("O2")}
    assert total_counts(records)[f"O2[{k // 2}]"]["in"] == total_counts(records)[mc_tree]["out"]


def test_incidents_stream_equals_reference_and_replica_keeps_one_mc_tree(spark, tmp_path):
    from spark_jobs.workloads import incidents

    spec = load_workload("incidents", INCIDENT_PARAMS)
    inp = tmp_path / "in"
    generator.write_seconds(spec, inp, 40)
    _run(spark, "incidents", "primary", inp, tmp_path / "out", INCIDENT_PARAMS, checkpoint=tmp_path / "ckpt",
         available_now=True, max_files_per_trigger=20)
    meta = _run(spark, "incidents", "reference", inp, tmp_path / "ref", INCIDENT_PARAMS)
    locations = generator.read_records(spec, inp, "locations")
    reports = generator.read_records(spec, inp, "incidents")
    reference = read_output(tmp_path / "ref")
    assert reference == _sorted(incidents.python_reference(spec.params, locations, reports))
    expected = closed_rows(reference, meta["closed_until_ms"])
    assert len(expected) == 3 and read_output(tmp_path / "out") == expected

    topo = parse_topology(json.loads((tmp_path / "out" / "_run.json").read_text())["topology"])
    records = read_metrics(tmp_path / "out" / "_metrics" / "metrics.jsonl")
    assert observed_groups(records, "in") == {op.name: set(range(op.parallelism)) for op in topo.operators}
    totals = total_counts(records)
    for op in ("O3", "O4"):  # the join's input is the union of its declared substreams
        assert {t: totals[t]["in"] for t in _downstream_sums(topo, totals, op)} == _downstream_sums(topo, totals, op)

    # One complete MC-tree through the join: O1[g], O2[h], O3[h], O4[0] with h = g * p3 // p1.
    tasks = frozenset({"O1[1]", "O2[0]", "O3[0]", "O4[0]"})
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"tasks": sorted(tasks)}))
    _run(spark, "incidents", "replica", inp, tmp_path / "replica", INCIDENT_PARAMS, checkpoint=tmp_path / "rckpt",
         plan=plan_file, available_now=True)
    tentative = _sorted(closed_rows(incidents.python_reference(spec.params, locations, reports, tasks), meta["closed_until_ms"]))
    assert read_output(tmp_path / "replica") == tentative
    assert sum(r["jams"] for r in tentative) < sum(r["jams"] for r in expected)


def test_bad_plan_exits_2_before_spark_starts(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"tasks": ["O1[0]", "O9[0]"]}))
    res = subprocess.run([sys.executable, "-m", "spark_jobs.runtime.run_pipeline", "--pipeline", "topk", "--role", "replica",
                          "--input", tmp_path / "in", "--output", tmp_path / "out", "--checkpoint", tmp_path / "ck",
                          "--plan", plan], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 2
    assert "'O9[0]' is not in the topk topology" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = _workload_cli("run", "topk", "--role", "replica", "--input", str(tmp_path / "in"), "--output",
                        str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"), "--plan", str(plan))
    assert res.returncode == 2 and "O9[0]" in res.stderr


def test_workload_run_submits_the_reference_job(tmp_path):
    spec = load_workload("topk", TOPK_PARAMS)
    generator.write_seconds(spec, tmp_path / "in", 6)
    res = _workload_cli("run", "topk", "--role", "reference", "--input", str(tmp_path / "in"), "--output",
                        str(tmp_path / "ref"), "--master", "local[1]", *[a for p in TOPK_PARAMS for a in ("--param", p)])
    assert res.returncode == 0, res.stderr
    run_doc = json.loads((tmp_path / "ref" / "_run.json").read_text())
    assert run_doc["role"] == "reference" and run_doc["master"] == "local[1]"
    from spark_jobs.workloads import topk

    assert read_output(tmp_path / "ref") == _sorted(topk.python_reference(spec.params, generator.read_records(spec, tmp_path / "in", "requests")))


def test_reference_since_a_moment_reads_only_the_files_holding_it_and_keeps_their_index(spark, tmp_path):
    """A drill's bounded reference (two stream sources, a static table, sliding windows): the windows from
    ``since`` on equal the whole reference's, it reads only the files holding events from then on, and a
    second run reads only files the index does not know (or that changed)."""
    import os

    from spark_jobs.pipeline import event_index
    from spark_jobs.runtime.reference import run_reference

    params = ["window_s=10", "slide_s=5", "watermark_s=1", "rate=100"]
    spec = load_workload("incidents", params)
    inp, index = tmp_path / "in", tmp_path / "event-index.json"
    generator.write_seconds(spec, inp, 40)
    whole = run_reference(spark, spec, inp, tmp_path / "whole")
    start = min(r["window_start"] for r in read_output(tmp_path / "whole"))
    since = start + 20_000
    meta = run_reference(spark, spec, inp, tmp_path / "since", since, index)
    want = [r for r in read_output(tmp_path / "whole") if r["window_start"] >= since]
    assert want and read_output(tmp_path / "since") == want
    assert meta["max_event_ms"] == whole["max_event_ms"] and meta["closed_until_ms"] == whole["closed_until_ms"]
    assert set(meta["files_read"]) == {s.name for s in spec.stream_sources()} and len(meta["files_read"]) == 2
    assert all(0 < n["read"] < n["of"] for n in meta["files_read"].values())

    # the index is trusted for files it knows: a sentinel in an old entry survives, a touched file is read again
    doc = event_index.load(index)
    source = spec.stream_sources()[0].name
    old, touched = sorted(doc[source])[:2]
    doc[source][old]["max_ms"] = doc[source][touched]["max_ms"] = 1
    event_index.save(index, doc)
    os.utime(touched, ns=(os.stat(touched).st_atime_ns, os.stat(touched).st_mtime_ns + 1_000_000))
    generator.write_seconds(spec, inp, 10, first=40)
    whole = run_reference(spark, spec, inp, tmp_path / "whole2")
    meta = run_reference(spark, spec, inp, tmp_path / "since2", since, index)
    assert read_output(tmp_path / "since2") == [r for r in read_output(tmp_path / "whole2") if r["window_start"] >= since]
    assert meta["closed_until_ms"] == whole["closed_until_ms"]
    after = event_index.load(index)[source]
    assert after[old]["max_ms"] == 1 and after[touched]["max_ms"] > 1
    assert len(after) == meta["files_read"][source]["of"] > len(doc[source])


def test_a_reference_since_a_moment_is_refused_without_its_index_or_for_a_pipeline_with_state_across_windows(tmp_path):
    common = ["--role", "reference", "--input", tmp_path / "in", "--output", tmp_path / "out"]

    def run(*args) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "spark_jobs.runtime.run_pipeline", *map(str, args)],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)

    res = run("--pipeline", "topk", *common, "--since-ms", 5)
    assert res.returncode == 2 and "--since-ms and --event-index go together" in res.stderr
    stateful = tmp_path / "stateful.py"  # topk, saying its windows are not window-local
    stateful.write_text("import dataclasses\nfrom spark_jobs.workloads.topk import pipeline as topk\n"
                        "pipeline = topk\npipeline.output = dataclasses.replace(topk.output, window_local=False)\n")
    res = run("--pipeline", stateful, *common, "--since-ms", 5, "--event-index", tmp_path / "index.json")
    assert res.returncode == 2 and "is not window-local" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "index.json").exists()
