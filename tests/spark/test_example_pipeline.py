"""The example of a user's own job (examples/sensor_alerts.py, loaded from its file like a user's) on real
Spark: a stream-static join, a shuffle to another key (a ``full`` stream) and an output operator with
two tasks. Its topology, its streaming output against its batch reference, and a replica of one
site task computing exactly that site's alerts."""

from __future__ import annotations

import json

from spark_jobs.pipeline import sample_input
from spark_jobs.pipeline.keys import key_group
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.metrics import observed_groups, read_metrics
from spark_jobs.pipeline.sink import closed_rows, read_output
from tests.conftest import ROOT

EXAMPLE = str(ROOT / "examples" / "sensor_alerts.py")
PARAMS = ["rate=200", "spike_prob=0.05", "window_s=2"]


def _run(spark, role, inp, out, **kw):
    from spark_jobs.runtime.run_pipeline import JobConfig, run

    return run(JobConfig(EXAMPLE, role, inp, out, params=PARAMS, **kw), spark=spark)


def test_the_example_has_a_join_a_full_stream_and_two_queries():
    work = load_workload(EXAMPLE, PARAMS)
    topo = work.topology()
    assert [(o.name, o.parallelism) for o in topo.operators] == [("enrich", 4), ("peaks", 4), ("alerts", 2)]
    assert [(s.source, s.target, s.partitioning) for s in topo.streams] == [
        ("enrich", "peaks", "one_to_one"), ("peaks", "alerts", "full")]
    assert work.queries() == {"alerts[0]": 2.0, "alerts[1]": 2.0}
    assert work.ref == f"{EXAMPLE}:pipeline"


def test_stream_equals_reference_and_a_replica_of_one_site_task_keeps_that_sites_alerts(spark, tmp_path):
    work = load_workload(EXAMPLE, PARAMS)
    inp = tmp_path / "in"
    sample_input.write_seconds(work, inp, 16)
    assert (inp / "sensors" / "part-000000.jsonl").exists()  # the static table, written once
    _run(spark, "primary", inp, tmp_path / "out", checkpoint=tmp_path / "ck", available_now=True, max_files_per_trigger=4)
    meta = _run(spark, "reference", inp, tmp_path / "ref")
    expected = closed_rows(read_output(tmp_path / "ref"), meta["closed_until_ms"])
    assert len({r["window_start"] for r in expected}) >= 5 and {r["site"] for r in expected} == set(range(8))
    assert read_output(tmp_path / "out") == expected

    records = read_metrics(tmp_path / "out" / "_metrics" / "metrics.jsonl")
    assert observed_groups(records, "in") == {"enrich": set(range(4)), "peaks": set(range(4)), "alerts": {0, 1}}

    # The replica keeps every sensor task and one of the two site tasks: exactly that site group's rows.
    plan = tmp_path / "plan.json"
    tasks = ["enrich[0]", "enrich[1]", "enrich[2]", "enrich[3]", "peaks[0]", "peaks[1]", "peaks[2]", "peaks[3]", "alerts[1]"]
    plan.write_text(json.dumps({"tasks": tasks}))
    _run(spark, "replica", inp, tmp_path / "replica", checkpoint=tmp_path / "rck", plan=plan, available_now=True)
    kept = [r for r in expected if key_group(r["site"], 2, work.key_base) == 1]
    assert kept and len(kept) < len(expected)
    assert read_output(tmp_path / "replica") == kept
    accuracy = work.accuracy(read_output(tmp_path / "replica"), expected)
    assert 0 < min(accuracy.values()) and max(accuracy.values()) <= 1
