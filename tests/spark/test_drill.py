"""Chaos drills on a real local Spark standalone cluster (issue 4): the primary and the replica are
submitted to the cluster's two pools, the primary's failure domain is SIGKILLed, the replica keeps
producing tentative outputs, replacement capacity arrives, the primary recovers from its checkpoint
and its final output equals the batch reference. Every wait in the drill polls real state; nothing
here depends on how fast the machine is."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from spark_jobs.drills.documents import DrillConfig, DrillReport
from spark_jobs.drills.local import run_drill
from spark_jobs.pipeline.loading import load_workload
from tests.conftest import assert_plot, namespaces_of, test_network, test_port

# Small and quick: 4 tasks (O1 x2 -> O2 -> O3), 2-second windows, 50 records/s.
PARAMS = ["rate=50", "window_s=2", "watermark_s=1", "n_pages=40", "p1=2"]
# Ports of these tests only, 400 apart because a drill uses base..base+299 (never the drill's default base,
# 25000, which a user's drill may hold); every Spark test owns a disjoint block below the kernel's ephemeral
# range (32768+).
BASE_FULL, BASE_EMPTY, BASE_BAD = test_port(12400), test_port(12800), test_port(13200)


def _processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` (a drill's work dir)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (cmdline.parent / "stat").read_text()
        except OSError:
            continue
        if text in args and ") Z" not in stat:
            found.append(args[:200])
    return found


def _drill(tmp_path: Path, base: int, **kw) -> DrillConfig:
    return DrillConfig(**{"pipeline": "topk", "params": PARAMS, "primary_workers": 1, "new_capacity_after_s": 5,
                          "port_base": base, "timeout_s": 300, "work_dir": tmp_path / "drill", **kw})


def test_full_replication_keeps_exact_tentative_outputs_and_the_primary_recovers(tmp_path):
    """As root, across hosts (issue 14): every Spark daemon on a network namespace of its own, the drivers on
    this machine, and the failure a network partition of the primary's rack (its processes keep running,
    cut off); elsewhere on loopback with the rack killed."""
    network = test_network()
    fault = "partition" if network == "namespaces" else "host-down"
    n_tasks = len(load_workload("topk", PARAMS).task_ids())
    # a healed partition comes back as it was: the master must have declared it dead (worker timeout 5 s) before
    after_s = 15 if fault == "partition" else 5
    report = run_drill(_drill(tmp_path, BASE_FULL, budget=n_tasks, network=network, fault=fault,
                              new_capacity_after_s=after_s))

    assert report.plan_tasks == sorted(load_workload("topk", PARAMS).task_ids())
    assert report.predicted_output_fidelity == 1.0
    # The failure held windows back from the primary; the full replica delivered each exactly.
    assert len(report.tentative_accuracy_per_window) >= 1
    assert report.tentative_accuracy_per_window == [1.0] * len(report.tentative_accuracy_per_window)
    assert report.tentative_accuracy == 1.0
    assert report.time_to_first_tentative_s is not None and report.time_to_first_tentative_s >= 0
    # Caught up only after the domain's capacity was given back (the primary was really down).
    assert report.time_to_caught_up_s > report.capacity_alive_s >= after_s
    assert report.recovery == "rescheduled onto the capacity given back" and report.primary_driver_restarts == 0
    assert (report.fault, report.network) == (fault, network) and report.detection_s is not None  # declared DEAD
    [victim] = report.killed
    assert victim.startswith("worker-primary-rack-a-") and victim.endswith(f"-{BASE_FULL + 100}")
    assert report.output_equals_reference and report.lost_windows == 0 and report.duplicated_windows == 0
    assert report.windows_expected > len(report.tentative_accuracy_per_window)
    assert (report.verdict, report.verdict_reasons, report.design_warnings) == ("passed", [], [])
    # The jobs really ran on the standalone pools, and nothing the drill started is left running.
    run_doc = json.loads((tmp_path / "drill" / "primary" / "_run.json").read_text())
    [replica_run] = (tmp_path / "drill" / "replica").glob("plan-*/_run.json")  # the private job's plan's replica
    replica_doc = json.loads(replica_run.read_text())
    host = "127.0.0.1" if network == "loopback" else f"198.18.{report.subnet}.2"  # the masters' host
    assert (run_doc["master"], replica_doc["master"]) == (f"spark://{host}:{BASE_FULL + 77}", f"spark://{host}:{BASE_FULL + 78}")
    assert _processes_mentioning(str(tmp_path)) == []
    if network == "namespaces":
        assert namespaces_of(report.subnet) == []  # the hosts, their links and the bridge are gone


def test_empty_plan_gives_no_tentative_output_and_a_killed_driver_restarts_from_its_checkpoint(tmp_path, cli):
    """As root, across hosts too (issue 14), the other fault kind: the primary's rack host is down (every process
    on it killed, its link cut), and its driver, on the drivers' host, is killed as well. Run as users run it, by
    the command: its verdict is in its JSON and its exit code."""
    network = test_network()
    res = cli("drill", "run", "--workload", "topk", "--budget", "0", "--kill-driver", "--network", network, "--fault",
              "host-down", "--primary-workers", "1", "--new-capacity-after", "5", "--port-base", BASE_EMPTY,
              "--timeout-s", "300", "--work-dir", tmp_path / "drill", "--json", *[a for p in PARAMS for a in ("--param", p)],
              timeout=900)
    assert res.code == 0, res.err[-3000:]
    report = DrillReport.model_validate(res.json())
    assert res.json()["verdict"] == "passed" and res.json()["verdict_reasons"] == []

    assert (report.fault, report.network) == ("host-down", network) and report.detection_s is not None
    assert report.plan_tasks == [] and report.predicted_output_fidelity == 0.0
    assert not (tmp_path / "drill" / "replica" / "_run.json").exists()  # R = 0: no replica was started
    assert report.time_to_first_tentative_s is None
    assert len(report.tentative_accuracy_per_window) >= 1 and report.tentative_accuracy == 0.0
    assert report.killed[-1] == "primary driver" and report.primary_driver_restarts == 1
    assert report.output_equals_reference and report.lost_windows == 0 and report.duplicated_windows == 0
    assert _processes_mentioning(str(tmp_path)) == []
    if network == "namespaces":
        assert namespaces_of(report.subnet) == []


def test_bad_plan_exits_2_before_anything_starts(tmp_path, cli):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"tasks": ["O1[0]", "O7[0]"]}))
    work = tmp_path / "drill"
    res = cli("drill", "run", "--workload", "topk", "--plan", plan, "--work-dir", work, "--port-base", BASE_BAD,
              *[a for p in PARAMS for a in ("--param", p)])
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1
    assert "'O7[0]' is not in the topk topology" in res.err
    assert not work.exists()


def test_port_in_use_exits_2_and_leaves_nothing_running(tmp_path, cli):
    work = tmp_path / "drill"
    with socket.socket() as blocker:
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("127.0.0.1", BASE_BAD + 90))  # the primary master's UI
        blocker.listen()
        res = cli("drill", "run", "--workload", "topk", "--budget", "4", "--work-dir", work, "--port-base", BASE_BAD,
                  *[a for p in PARAMS for a in ("--param", p)])
    assert res.code == 2 and f"port {BASE_BAD + 90} on 127.0.0.1 is in use" in res.err and "--port-base" in res.err
    assert _processes_mentioning(str(tmp_path)) == []
    assert not work.exists()  # refused before anything was written


def _drill_report(workload: str, of: float, predicted: float, measured: float) -> DrillReport:
    """A finished drill's report with plausible numbers (no Spark): what the plot and the table read."""
    return DrillReport(
        workload=workload, plan_tasks=["O1[0]", "O2[0]"], predicted_output_fidelity=of, predicted_accuracy=predicted,
        tentative_accuracy=measured, tentative_accuracy_per_window=[measured - 0.05, measured + 0.05],
        time_to_first_tentative_s=3.2, time_to_caught_up_s=71.5, lost_windows=0, duplicated_windows=0,
        output_equals_reference=True, predicted_internal_completeness=of, failure_window_starts_ms=[0, 2000],
        lost_window_starts_ms=[], duplicated_window_starts_ms=[], windows_expected=40, fail_domain="rack-a",
        killed=["worker 1"], kill_driver=False, recovery="restart", primary_driver_restarts=0, detection_s=1.0,
        new_capacity_after_s=30.0, capacity_alive_s=35.0, params={}, budget=2, algorithm="structure-aware",
        work_dir="/tmp/drill", elapsed_s=180.0)


def test_bench_report_plots_measured_against_predicted_accuracy(tmp_path):
    """``ftops bench drills``' report (no Spark: its result built from plausible numbers) saves one scatter
    per run beside the table: measured accuracy against OF and the predicted accuracy, with y = x."""
    from spark_jobs.drills.bench import BenchDrillsConfig, BenchResult, BenchRow, render

    rows = [BenchRow(workload=w, ratio=ratio, budget=round(4 * ratio), tasks=4, report=_drill_report(w, of, pred, meas))
            for w, ratio, of, pred, meas in [("topk", 0.5, 0.34, 0.80, 0.85), ("topk", 1.0, 1.0, 1.0, 1.0),
                                             ("incidents", 0.5, 0.41, 0.47, 0.52)]]
    rows.append(BenchRow(workload="incidents", ratio=1.0, budget=4, tasks=4, error="the cluster did not start"))
    result = BenchResult(command="ftops bench drills", rows=rows,
                         config=BenchDrillsConfig(workloads=["topk", "incidents"], work_dir=tmp_path / "work"))
    out = tmp_path / "drills.md"
    report = render(result, out=out)
    assert_plot(tmp_path / "drills-accuracy.svg", report, "Drills: measured tentative accuracy vs prediction",
                "topk: OF", "topk: predicted accuracy", "incidents: OF", "incidents: predicted accuracy",
                "predicted = measured", "measured tentative accuracy")
    assert report.index("drills-accuracy.svg") < report.index("## Targets")
    section = render(result, section=True, out=out, what="accuracy-run2")  # an appended run: its own file
    assert_plot(tmp_path / "drills-accuracy-run2.svg", section, "topk: OF")
    assert ".svg" not in render(result)  # no report path: no plot
