"""A streaming query that fails starts again from its checkpoint (spark_jobs.runtime.query_restarts):
the failed micro-batch is replayed, the output has every window exactly once, and ``_run.json`` lists
the restart; a query that keeps failing ends the run once its restart budget is spent. Real Spark
(local[2]: a failed task fails its job, as an executor lost mid-batch does on Spark 4.3 when the
re-run stage is found indeterminate)."""

from __future__ import annotations

import json

import pytest

from spark_jobs.pipeline import sample_input
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.sink import closed_rows, read_output
from spark_jobs.runtime.query_restarts import RestartPolicy, error_summary
from tests.conftest import ROOT

PIPELINE = str(ROOT / "tests" / "spark" / "failing_pipeline.py")


def _run(spark, tmp_path, params, **kw):
    from spark_jobs.runtime.run_pipeline import JobConfig, run

    config = JobConfig(PIPELINE, "primary", tmp_path / "in", tmp_path / "out", checkpoint=tmp_path / "ck",
                       params=params, available_now=True, max_files_per_trigger=2, **kw)
    return run(config, spark=spark)


def test_a_failed_query_is_started_again_and_its_output_is_exact(spark, tmp_path):
    marker = tmp_path / "failed-once"
    params = [f"marker={marker}", "fail_after_s=4"]
    sample_input.write_seconds(load_workload(PIPELINE, params), tmp_path / "in", 10)
    _run(spark, tmp_path, params)
    assert marker.exists()  # the failure did happen
    restarts = json.loads((tmp_path / "out" / "_run.json").read_text())["restarts"]
    assert len(restarts) == 1 and restarts[0]["error"] == "RuntimeError: injected failure of failing_pipeline"

    from spark_jobs.runtime.run_pipeline import JobConfig, run

    meta = run(JobConfig(PIPELINE, "reference", tmp_path / "in", tmp_path / "ref", params=params), spark=spark)
    expected = closed_rows(read_output(tmp_path / "ref"), meta["closed_until_ms"])
    assert len({r["window_start"] for r in expected}) >= 8
    assert read_output(tmp_path / "out") == expected  # the replayed batch is neither lost nor doubled


def test_a_query_that_keeps_failing_ends_the_run_after_its_restarts(spark, tmp_path):
    params = [f"marker={tmp_path / 'marker'}", "always=true", "fail_after_s=2"]
    sample_input.write_seconds(load_workload(PIPELINE, params), tmp_path / "in", 4)
    with pytest.raises(RuntimeError, match=r"failed \(2 times within 600 s, --max-restarts 1\): RuntimeError: injected"):
        _run(spark, tmp_path, params, max_restarts=1)
    run = json.loads((tmp_path / "out" / "_run.json").read_text())
    assert len(run["restarts"]) == 1
    assert run["failed"]["error"] == "RuntimeError: injected failure of failing_pipeline"
    assert run["failed"]["why"] == "2 times within 600 s, --max-restarts 1"


def test_the_policy_counts_restarts_within_its_window():
    policy = RestartPolicy(max_restarts=2, window_s=10)
    assert policy.allow(0) and policy.allow(1) and not policy.allow(2)
    assert policy.allow(11.5)  # the first restart has left the window
    assert not RestartPolicy(max_restarts=0).allow(0)
    lost = ("org.apache.spark.SparkException: Job aborted due to stage failure: A shuffle map stage with "
            "indeterminate output was failed and retried.\n SQLSTATE: 39000\n=== Streaming Query ===\nLogical Plan:")
    assert error_summary(lost).endswith("Job aborted due to stage failure: A shuffle map stage with indeterminate "
                                        "output was failed and retried.")
    assert error_summary("\n  Something odd\n=== Streaming Query ===\nplan") == "Something odd"


def test_a_failure_while_the_run_ends_is_not_restarted():
    import threading
    import time
    from pathlib import Path

    from spark_jobs.runtime.run_pipeline import JobConfig, _no_restart

    config = JobConfig(PIPELINE, "primary", Path("in"), Path("out"), max_restarts=1)
    stop, soon = threading.Event(), time.monotonic() + 60
    assert _no_restart(config, RestartPolicy(1, delay_s=0.01), stop, soon) is None
    assert _no_restart(config, RestartPolicy(1, delay_s=0.01), stop, time.monotonic() - 1) == "the run was ending"
    spent = RestartPolicy(1, delay_s=0.01)
    assert spent.allow()
    assert _no_restart(config, spent, stop, None) == "2 times within 600 s, --max-restarts 1"
    threading.Timer(0.2, stop.set).start()  # a stop during the delay before the restart
    assert _no_restart(config, RestartPolicy(1, delay_s=30), stop, None) == "the run was ending"
    assert _no_restart(JobConfig(PIPELINE, "primary", Path("in"), Path("out"), max_restarts=0),
                       RestartPolicy(0), threading.Event(), None) == "--max-restarts 0"
