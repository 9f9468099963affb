"""``ftops bench recovery-runtime --resume``: a benchmark of about 2 h 40 min on this machine continues where an
interrupted invocation stopped. Its finished runs (``run.json`` in each run's folder) are kept and only the
others run; flags that differ from the stored benchmark, a folder without one, or a new benchmark in an old
folder are refused before anything starts. No Spark here: every run these tests resume has finished (the runs
themselves are the units tests' and the benchmark's)."""

from __future__ import annotations

import json
from pathlib import Path

from spark_jobs.recovery_units.bench import RUN_FILE, RecoveryBenchConfig, StrategyRun, bench_config
from tests.conftest import run_cli

FLAGS = ["--strategies", "incremental", "--repetitions", "2"]


def _interrupted_bench(work: Path) -> StrategyRun:
    """A benchmark of two incremental runs whose first finished and whose second was cut off mid-way."""
    bench_config(work, RecoveryBenchConfig(work_dir=work, strategies=["incremental"], repetitions=2), resume=False)
    run = StrategyRun(strategy="incremental", repetition=1, query_recovered_s={"O1[0]": 40.5, "O3[0]": 90.0},
                      weighted_mean_recovery_s=80.1, planned_stage={"O1[0]": 1, "O3[0]": 2}, stages=[], lost_rows=0,
                      duplicated_rows=0, priority={"O1[0]": 1, "O3[0]": 4})
    (work / "incremental-1").mkdir()
    (work / "incremental-1" / RUN_FILE).write_text(run.model_dump_json())
    return run


def test_resume_keeps_the_finished_runs_and_reports_them(tmp_path):
    work = tmp_path / "work"
    _interrupted_bench(work)
    for rep in (1, 2):  # both finished: nothing is left to run, so nothing starts
        (work / f"incremental-{rep}").mkdir(exist_ok=True)
        (work / f"incremental-{rep}" / RUN_FILE).write_text(
            (work / "incremental-1" / RUN_FILE).read_text().replace('"repetition":1', f'"repetition":{rep}'))
    out = tmp_path / "report.md"
    result = run_cli("bench", "recovery-runtime", *FLAGS, "--resume", "--work-dir", work, "--out", out, "--json")
    assert result.code == 0, result.err
    assert result.err.count("kept from the earlier invocation") == 2
    summary = result.json()["strategies"]["incremental"]
    assert summary["runs"] == 2 and summary["weighted_mean_recovery_s"] == 80.1
    assert summary["query_recovered_s"] == {"O1[0]": 40.5, "O3[0]": 90.0}
    assert "median of 2 run(s) per strategy" in out.read_text()


def test_a_new_benchmark_in_an_old_folder_is_refused_and_points_to_resume(tmp_path):
    work = tmp_path / "work"
    _interrupted_bench(work)
    before = sorted(p.relative_to(work) for p in work.rglob("*"))
    result = run_cli("bench", "recovery-runtime", *FLAGS, "--work-dir", work, "--out", tmp_path / "r.md")
    assert result.code == 2
    assert "--work-dir" in result.err and "add --resume to continue it" in result.err
    assert sorted(p.relative_to(work) for p in work.rglob("*")) == before and not (tmp_path / "r.md").exists()


def test_resume_with_other_flags_names_what_differs(tmp_path):
    work = tmp_path / "work"
    _interrupted_bench(work)
    result = run_cli("bench", "recovery-runtime", "--strategies", "incremental", "--repetitions", "3", "--resume",
                     "--work-dir", work, "--out", tmp_path / "r.md", "--json")
    assert result.code == 2
    error = result.json()
    assert error["field"] == "--resume" and "repetitions" in error["error"] and "repetitions=2" in error["error"]
    assert not (work / "incremental-2").exists() and not (tmp_path / "r.md").exists()


def test_resume_needs_a_folder_that_holds_a_benchmark(tmp_path):
    missing = run_cli("bench", "recovery-runtime", *FLAGS, "--resume")
    assert missing.code == 2 and "--resume: give the --work-dir" in missing.err
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = run_cli("bench", "recovery-runtime", *FLAGS, "--resume", "--work-dir", empty)
    assert nothing.code == 2 and "holds no benchmark to continue" in nothing.err
