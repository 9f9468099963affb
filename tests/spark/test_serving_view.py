"""The serving view over real sink folders (issue 7, paper 001's replication transparency): a real
primary that stops part-way (its failure), a real replica restricted to a plan that runs on, the
view carrying the replica's rows flagged tentative with the plan's predicted OF for the windows the
primary has not delivered, then the primary recovering from its checkpoint and its accurate rows
replacing the tentative ones per window, until the view equals the failure-free output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ft_core.replication.fidelity import replicated_fidelity
from ft_core.topology.task_graph import build_task_graph
from spark_jobs.pipeline import sample_input as generator
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.sink import closed_rows, read_output, row_key
from spark_jobs.serving_view import make_view, read_view, strip_served_fields
from spark_jobs.workloads import topk

ROOT = Path(__file__).resolve().parents[2]
PARAMS = ["window_s=2", "watermark_s=1", "rate=60", "n_pages=40", "p1=2"]
PLAN = ["O1[0]", "O2[0]", "O3[0]"]  # one MC-tree of the 4 tasks


def _run(spark, role: str, tmp: Path, **kw) -> None:
    from spark_jobs.runtime.run_pipeline import JobConfig, run

    run(JobConfig("topk", role, tmp / "in", tmp / role, checkpoint=tmp / f"{role}-ckpt", params=PARAMS,
                  available_now=True, max_files_per_trigger=4, **kw), spark=spark)


def _windows(rows: list[dict]) -> set[tuple[int, int]]:
    return {(r["window_start"], r["window_end"]) for r in rows}


def test_tentative_rows_fill_the_failure_and_accurate_rows_replace_them_per_window(spark, tmp_path):
    spec = load_workload("topk", PARAMS)
    (tmp_path / "plan.json").write_text(json.dumps({"tasks": PLAN}))
    generator.write_seconds(spec, tmp_path / "in", 8)
    _run(spark, "primary", tmp_path)  # the primary delivers the first seconds, then "fails"
    generator.write_seconds(spec, tmp_path / "in", 8, first=8)
    _run(spark, "replica", tmp_path, plan=tmp_path / "plan.json")  # the replica keeps going

    view = make_view(tmp_path / "primary", tmp_path / "replica", tmp_path / "view")
    manifest = view.refresh()
    graph = build_task_graph(spec.topology())
    predicted = replicated_fidelity(graph, graph.indices(PLAN))
    assert 0 < predicted < 1 and manifest.predicted_of == pytest.approx(predicted)  # from the replica's own plan

    primary_rows, replica_rows = read_output(tmp_path / "primary"), read_output(tmp_path / "replica")
    served = read_view(tmp_path / "view")
    delivered = _windows(primary_rows)
    failure = _windows(replica_rows) - delivered
    assert delivered and len(failure) >= 3  # the view has windows of both kinds
    assert [r for r in served if not r["tentative"]] == [{**r, "tentative": False, "predicted_of": None} for r in primary_rows]
    tentative = [r for r in served if r["tentative"]]
    assert _windows(tentative) == failure and all(r["predicted_of"] == pytest.approx(predicted) for r in tentative)
    assert strip_served_fields(tentative) == [r for r in replica_rows if (r["window_start"], r["window_end"]) in failure]
    assert {(e.window_start, e.window_end): e.state for e in manifest.windows} == {
        **{w: "accurate" for w in delivered}, **{w: "tentative" for w in failure}}

    _run(spark, "primary", tmp_path)  # recovery from the checkpoint over the whole input
    manifest = view.refresh()
    requests = generator.read_records(spec, tmp_path / "in", "requests")
    final = read_view(tmp_path / "view")
    assert not any(r["tentative"] for r in final)
    assert strip_served_fields(final) == read_output(tmp_path / "primary")
    # the failure-free output: every window closed by the input's watermark (max event time - 1 s)
    expected = sorted(closed_rows(topk.python_reference(spec.params, requests), max(r["ts"] for r in requests) - 1000),
                      key=row_key)
    assert strip_served_fields(final) == expected and failure <= _windows(expected)
    entries = {(e.window_start, e.window_end): e for e in manifest.windows}
    assert all(entries[w].tentative_at is not None and entries[w].accurate_at >= entries[w].tentative_at for w in failure)
    # one file per window, each holding exactly that window's served rows
    files = sorted((tmp_path / "view" / "windows").glob("*.jsonl"))
    assert [tuple(int(x) for x in f.stem.split("-")) for f in files] == sorted(entries)
    assert not list((tmp_path / "view").rglob(".*.tmp"))

    # the command consumers run gives the same view, once
    res = subprocess.run([sys.executable, "-m", "spark_jobs.cli.faults", "transparency", "serve", "--primary", tmp_path / "primary",
                          "--replica", tmp_path / "replica", "--out", tmp_path / "view2", "--once"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["accurate"] == len(entries) and read_view(tmp_path / "view2") == final


def test_serve_refuses_bad_input_with_one_line(tmp_path):
    res = subprocess.run([sys.executable, "-m", "spark_jobs.cli.faults", "transparency", "serve", "--primary", tmp_path / "missing",
                          "--out", tmp_path / "view", "--once"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "--primary" in res.stderr
    (tmp_path / "p").mkdir()
    res = subprocess.run([sys.executable, "-m", "spark_jobs.cli.faults", "transparency", "serve", "--primary", tmp_path / "p",
                          "--out", tmp_path / "view", "--once"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 2 and "--key" in res.stderr and not (tmp_path / "view").exists()
