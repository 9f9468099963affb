"""The Spark side of adaptive redundancy without Spark (issue 7): which batches a controller period
reads, the latency metric, and the command-line checks that run before any job is submitted."""

from __future__ import annotations

import json

from spark_jobs.redundancy.runtime import percentile, period_batches


def _metrics(path, runs: list[tuple[str, list[int]]]) -> None:
    with path.open("w") as fh:
        for run, batches in runs:
            for b in batches:
                fh.write(json.dumps({"run_id": run, "batch_id": b, "batch_duration_ms": 100 + b}) + "\n")


def test_a_period_skips_consumed_batches_and_each_submissions_first_batches(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    _metrics(metrics, [("a", [0, 1, 2, 3, 4, 5]), ("b", [6, 7, 8, 9])])  # resubmitted after batch 5
    assert [r["batch_id"] for r in period_batches(metrics, -1, 2)] == [2, 3, 4, 5, 8, 9]
    assert [r["batch_id"] for r in period_batches(metrics, 3, 2)] == [4, 5, 8, 9]
    assert [r["batch_id"] for r in period_batches(metrics, 3, 0)] == [4, 5, 6, 7, 8, 9]


def test_a_query_restarted_inside_its_driver_is_not_a_new_submission(tmp_path):
    """Its run id changes (Spark starts a new query run), its application does not: no warm-up is dropped."""
    metrics = tmp_path / "metrics.jsonl"
    with metrics.open("w") as fh:
        for run, app, batches in (("r1", "app-1", [0, 1, 2, 3]), ("r2", "app-1", [3, 4, 5]), ("r3", "app-2", [6, 7, 8])):
            for b in batches:
                fh.write(json.dumps({"run_id": run, "app_id": app, "batch_id": b, "batch_duration_ms": 100}) + "\n")
    assert [r["batch_id"] for r in period_batches(metrics, -1, 2)] == [2, 3, 3, 4, 5, 8]


def test_percentile_is_an_observed_value_by_nearest_rank():
    values = [float(v) for v in range(1, 11)]
    assert (percentile(values, 90), percentile(values, 50), percentile(values, 99), percentile([7.0], 90)) == (9.0, 5.0, 10.0, 7.0)


def test_redundancy_level_maps_to_speculation_confs_and_bad_input_exits_2_before_submitting(tmp_path):
    from spark_jobs.runtime.launch import run_args, submit_command

    base = ["topk", "--role", "primary", "--input", tmp_path / "in", "--output", tmp_path / "out", "--checkpoint", tmp_path / "ck"]
    cmd = submit_command(run_args([*base, "--redundancy-level", "0.5"]))
    confs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--conf"]
    assert {"spark.speculation=true", "spark.speculation.quantile=0.5", "spark.speculation.multiplier=2",
            "spark.speculation.minTaskRuntime=50ms"} <= set(confs)
    assert not any(c.startswith("spark.speculation") for c in submit_command(run_args(base)))
    for extra, message in ((["--redundancy-level", "1.5"], "--redundancy-level: Input should be less than or equal to 1"),
                           (["--redundancy-level", "0.5", "--conf", "spark.speculation.quantile=0.1"], "give one or the other")):
        res = _workload("run", *base, *extra)
        assert res.returncode == 2 and message in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    res = _workload("retune", "--state-file", tmp_path / "state.json")
    assert res.returncode == 2 and "needs --bound-ms and -- RUN ARGS" in res.stderr


def test_a_live_run_starts_with_speculation_on_follows_its_level_file_and_needs_a_level(tmp_path):
    from spark_jobs.redundancy.live import level_of_batch, read_level, write_level
    from spark_jobs.runtime.launch import run_args, submit_command

    base = ["topk", "--role", "primary", "--input", tmp_path / "in", "--output", tmp_path / "out", "--checkpoint", tmp_path / "ck"]
    cmd = submit_command(run_args([*base, "--redundancy-level", "0", "--live-redundancy"]))
    confs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--conf"]
    assert {"spark.speculation=true", "spark.speculation.quantile=1", "spark.speculation.minTaskRuntime=100ms"} <= set(confs)
    assert "--live-redundancy" in cmd[cmd.index("--pipeline"):]  # passed to the driver, which follows the level file
    res = _workload("run", *base, "--live-redundancy")
    assert res.returncode == 2 and "--live-redundancy: give the starting level" in res.stderr

    assert read_level(tmp_path / "out") is None
    write_level(tmp_path / "out", 0.5)
    assert read_level(tmp_path / "out") == 0.5
    changes = [{"after_batch": -1, "level": 0.0}, {"after_batch": 7, "level": 0.5}]
    assert [level_of_batch(changes, b) for b in (0, 7, 8)] == [0.0, 0.0, 0.5]
    assert level_of_batch([], 3) is None


def _workload(*args):
    """``ftops workload ...`` through its module (the entry point may not be installed)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "spark_jobs.cli.workload", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_bench_redundancy_refuses_an_unknown_controller_mode_before_starting_anything(tmp_path):
    from tests.conftest import run_cli

    work = tmp_path / "bench"
    res = run_cli("bench", "redundancy", "--controller-modes", "resubmit,fast", "--work-dir", work)
    assert res.code == 2 and "--controller-modes: expected a comma-separated list of resubmit, live" in res.err
    assert len(res.err.strip().splitlines()) == 1 and not work.exists()
