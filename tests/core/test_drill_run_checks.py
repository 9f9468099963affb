"""``ftops drill run`` checks what it can before any slow work (issue 37, items 1, 3 and 4): its ports (a default
base clear of the local stack's, a port in use refused naming ``--port-base``), its design (an outage that holds
no window refused, one that holds a single window warned), and it leaves the work dir as it was on a refusal. Its
report carries a verdict. None of these start a JVM: the refusals come before the cluster, and the race below is
refused by the cluster's own check before any daemon starts."""

from __future__ import annotations

import dataclasses
import socket
import time
from pathlib import Path

import pytest

from ft_core.errors import InputError
from spark_jobs.cli.drill import job_report_text, summary
from spark_jobs.drills.design import check_design, sure_windows
from spark_jobs.drills.documents import DrillConfig, DrillPorts, DrillReport
from spark_jobs.drills.local import run_drill
from spark_jobs.pipeline import FileSource, Operator, Output, Params, Pipeline, SampleInput
from spark_jobs.pipeline.loading import load_workload
from tests.conftest import test_port

BASE = test_port(14100)  # a drill's ports: BASE+40 .. BASE+349 (no other test uses 14100-14449)
PARAMS = ["rate=50", "window_s=2", "watermark_s=1", "n_pages=40", "p1=2"]  # the drill tests' small topk


def _blocked(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def _params(params: list[str]) -> list[str]:
    return [a for p in params for a in ("--param", p)]


def test_the_default_port_base_is_clear_of_the_local_stacks_ports():
    """`drill run` next to `ftops cluster up` or `make demo` failed: its masters were on 7077/7078, theirs."""
    from plugins.ftops_provider.local_stack import LocalStack
    from spark_jobs.cluster.standalone import ClusterConfig
    from spark_jobs.drills.ports import DEFAULT_PORT_BASE

    stack = ClusterConfig()
    stack_ports = {stack.primary_port, stack.standby_port, stack.primary_ui, stack.standby_ui,
                   *range(stack.worker_port_base, stack.worker_port_base + 100),
                   *range(stack.worker_ui_base, stack.worker_ui_base + 100)}
    stack_ports |= {f.default for f in dataclasses.fields(LocalStack) if f.name in ("airflow_port", "db_port")}
    drill = set(range(DEFAULT_PORT_BASE + 40, DEFAULT_PORT_BASE + 350))  # add_worker scans 200 from BASE+150
    assert set(DrillPorts.from_base(DEFAULT_PORT_BASE).model_dump().values()) <= drill
    assert not drill & stack_ports
    assert DrillConfig(pipeline="topk", work_dir=Path("w")).port_base == DEFAULT_PORT_BASE
    assert DEFAULT_PORT_BASE + 350 < 32768  # below the ephemeral ports: no outgoing connection takes one first


def test_a_port_in_use_is_refused_at_once_naming_port_base_and_nothing_is_written(tmp_path, cli):
    """The issue's run: the stack's master on BASE+77; refused before the 40-s accuracy prediction, with the
    flag to change (field set in --json), and no /tmp/ftops-drill-* folder left behind."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    with _blocked(BASE + 77):
        started = time.monotonic()
        res = cli("drill", "run", "--workload", "topk", "--budget", "4", "--port-base", BASE, "--json",
                  *_params(PARAMS), env={"TMPDIR": str(temp)})
        took = time.monotonic() - started
    doc = res.json()
    assert res.code == 2 and doc["field"] == "--port-base", doc
    assert f"port {BASE + 77} on 127.0.0.1 is in use (the primary master, BASE+77)" in doc["error"]
    assert "choose another --port-base (" in doc["error"] and "is free)" in doc["error"]
    assert took < 30, f"the refusal took {took:.0f} s: it came after slow work"
    assert list(temp.iterdir()) == []  # the default work dir (a new temp folder) was never made


def _race(port: int):
    """A progress callback that takes ``port`` once the drill starts its cluster: the port was free when the drill
    checked it, and another process took it since (the check cannot close that race; the cluster refuses it)."""
    said: list[str] = []
    taken: list[socket.socket] = []

    def say(message: str) -> None:
        said.append(message)
        if message.startswith("starting the clusters") and not taken:
            taken.append(_blocked(port))
    return say, said, taken


@pytest.mark.parametrize("given", [False, True], ids=["work-dir-made-by-the-drill", "empty-work-dir-given"])
def test_a_refusal_before_the_jobs_start_leaves_the_work_dir_as_it_was(tmp_path, given):
    work = tmp_path / "deep" / "drill"
    if given:
        work.mkdir(parents=True)
    say, said, taken = _race(BASE + 90)
    config = DrillConfig(pipeline="topk", params=PARAMS, budget=2, primary_workers=1, new_capacity_after_s=5,
                         port_base=BASE, work_dir=work, predict_accuracy=False)
    try:
        with pytest.raises(InputError, match=f"port {BASE + 90} on 127.0.0.1 is in use"):
            run_drill(config, progress=say)
    finally:
        for sock in taken:
            sock.close()
    assert "predicting tentative accuracy..." in said  # it had written its plan and folders
    if given:
        assert work.is_dir() and list(work.iterdir()) == []
    else:
        assert not (tmp_path / "deep").exists()


def test_an_outage_that_holds_no_window_is_refused_before_any_slow_work(tmp_path, cli):
    """1-minute windows, the default 30-s outage: no failure window is sure, the drill measured nothing. Refused
    naming --new-capacity-after, with the values that make two windows sure; nothing written."""
    work = tmp_path / "drill"
    started = time.monotonic()
    res = cli("drill", "run", "--workload", "topk", "--budget", "4", "--port-base", BASE, "--work-dir", work, "--json",
              *_params(["window_s=60", "watermark_s=1"]))
    doc = res.json()
    assert res.code == 2 and doc["field"] == "--new-capacity-after", doc
    assert "no window is sure to end while the primary is down" in doc["error"]
    assert "topk's 60-s windows" in doc["error"]
    assert "use --new-capacity-after 121 or --speedup 4.1" in doc["error"]  # 2 x 60 s + one 1-s input file
    assert time.monotonic() - started < 30 and not work.exists()
    res = cli("drill", "run", "--workload", "topk", "--budget", "4", "--port-base", BASE, "--work-dir", work, "--json",
              "--speedup", "0.5", *_params(["window_s=20", "watermark_s=1"]))
    assert res.code == 2 and res.json()["field"] == "--new-capacity-after"  # 15 event seconds, 20-s windows


def test_the_design_check_counts_the_windows_the_outage_is_sure_to_hold():
    topk = lambda *params: load_workload("topk", list(params))  # noqa: E731
    assert sure_windows(30.0, 1.0, 60.0) == 0 and sure_windows(30.0, 1.0, 10.0) == 2 and sure_windows(5.0, 1.0, 2.0) == 2
    design = check_design(topk("window_s=10"), 30.0, 1.0)  # the default drill of the default topk
    assert (design.window_s, design.slide_s, design.sure_windows, design.warnings) == (10.0, 10.0, 2, [])
    sliding = check_design(topk("window_s=60", "slide_s=10"), 30.0, 1.0)  # window ends 10 s apart
    assert sliding.sure_windows == 2 and sliding.warnings == []
    [marginal] = check_design(topk("window_s=60"), 30.0, 2.5).warnings  # 75 event seconds: one window sure
    assert "only 1 failure window is sure" in marginal and "use --new-capacity-after 49 or --speedup 4.1" in marginal
    with pytest.raises(InputError) as refused:
        check_design(topk("window_s=60"), 0.0, 1.0)
    assert refused.value.field == "--new-capacity-after" and str(refused.value).endswith("use --new-capacity-after 121")


class ClickParams(Params):
    window_minutes: int = 1  # a window length ftops cannot know by its name


def _clicks(**output) -> Pipeline:
    """The issue's pipeline, in short: clicks counted per page per 1-minute window (the transform never runs here)."""
    return Pipeline("clicks", params=ClickParams, output=Output(**output),
                    sources=[FileSource("clicks", schema="ts bigint, page bigint", event_time="ts")],
                    operators=lambda p: [Operator("counts", ("clicks",), key="page", parallelism=2, transform=lambda df: df)],
                    sample_input=SampleInput(records=lambda p, source, index: []))


def test_a_pipeline_without_a_known_window_is_warned_and_one_can_declare_it():
    [warning] = check_design(_clicks().bind(), 30.0, 1.0).warnings
    assert "declares no window length (Output(window_s=...) or a window_s parameter)" in warning
    declared = _clicks(window_s=lambda p: p.window_minutes * 60).bind()
    assert declared.windowing() == (60.0, 60.0)
    with pytest.raises(InputError, match="clicks's 60-s windows"):
        check_design(declared, 30.0, 1.0)
    assert _clicks(window_s=4, slide_s=2).bind().windowing() == (4.0, 2.0)


def test_a_marginal_design_is_warned_before_any_slow_work(tmp_path):
    """The warning is said before the first step (the accuracy prediction), so a user can stop the drill; the race
    of the test above ends the drill right after."""
    say, said, taken = _race(BASE + 90)
    config = DrillConfig(pipeline="topk", params=["rate=50", "window_s=3", "watermark_s=1", "n_pages=40", "p1=2"],
                         budget=2, primary_workers=1, new_capacity_after_s=5, port_base=BASE, work_dir=tmp_path / "d",
                         predict_accuracy=False)
    try:
        with pytest.raises(InputError):
            run_drill(config, progress=say)
    finally:
        for sock in taken:
            sock.close()
    assert said[0].startswith("warning: the outage holds 5 event seconds") and "only 1 failure window" in said[0]
    assert said[1] == "predicting tentative accuracy..."


def _report(**changes) -> DrillReport:
    values = dict(workload="topk", plan_tasks=["O1[0]", "O2[0]"], predicted_output_fidelity=0.34, predicted_accuracy=0.8,
                  tentative_accuracy=0.85, tentative_accuracy_per_window=[0.8, 0.9], time_to_first_tentative_s=3.2,
                  time_to_caught_up_s=71.5, lost_windows=0, duplicated_windows=0, output_equals_reference=True,
                  predicted_internal_completeness=0.34, failure_window_starts_ms=[0, 2000], lost_window_starts_ms=[],
                  duplicated_window_starts_ms=[], windows_expected=40, fail_domain="rack-a", killed=["worker 1"],
                  kill_driver=False, recovery="rescheduled onto the capacity given back", primary_driver_restarts=0,
                  detection_s=1.0, new_capacity_after_s=30.0, capacity_alive_s=35.0, params={}, budget=2,
                  algorithm="structure-aware", work_dir="/tmp/drill", elapsed_s=180.0)
    return DrillReport(**{**values, **changes})


def test_a_drill_report_has_a_verdict_with_its_reasons():
    good = _report()
    assert (good.verdict, good.verdict_reasons) == ("passed", [])
    assert good.model_dump(mode="json")["verdict"] == "passed"  # in --json
    assert summary(good).splitlines()[0] == "drill topk: PASSED"
    nothing = _report(tentative_accuracy=None, tentative_accuracy_per_window=[], failure_window_starts_ms=[])
    assert nothing.verdict == "failed" and nothing.verdict_reasons[0].startswith("no failure window measured")
    lost = _report(output_equals_reference=False, lost_windows=2, duplicated_windows=1)
    assert lost.verdict_reasons == ["the output differs from the batch reference: 2 windows lost, 1 duplicated"]
    assert summary(lost).splitlines()[0].startswith("drill topk: FAILED: the output differs")
    rows = _report(output_equals_reference=False)
    assert rows.verdict_reasons == ["the output differs from the batch reference: 0 windows lost, 0 duplicated "
                                    "(other rows in its windows)"]
    view = _report(serve=True, serve_equals_reference=False, serve_expected_windows_per_s=0.5, serve_gap_windows=0)
    assert view.verdict_reasons == ["the serving view's final content differs from the batch reference"]
    warned = _report(design_warnings=["only 1 failure window is sure"])
    assert "  warning: only 1 failure window is sure" in summary(warned).splitlines()
    assert DrillReport.model_validate(good.model_dump(mode="json")) == good  # a stored report reads back
    # the drill engine's verdict is part of the drill's (one finish for every drill, issue 35 item 6)
    engine = _report(experiment_id=1, experiment_verdict="failed", experiment_reasons=[
        "failure domains changed: before rack-a 1; after rack-c 1"])
    assert engine.verdict == "failed" and engine.verdict_reasons == ["failure domains changed: before rack-a 1; after rack-c 1"]
    assert "  the drill engine's verdict: failed (experiment report: /tmp/drill/drills/drill-1/experiment.json)" in \
        summary(engine).splitlines()
    both = _report(output_equals_reference=False, lost_windows=1, experiment_reasons=[
        "the output differs from the batch reference: 1 windows lost, 0 duplicated"])
    assert len(both.verdict_reasons) == 1  # the same problem, said once


def test_streams_that_shared_an_event_log_folder_are_costed_apart(tmp_path):
    """`drill run`'s primary and replica share the private job's Spark confs, so one event log folder: each log
    goes to its application's folder (a resubmitted primary's second log too), another application's stays."""
    import json

    from spark_jobs.runtime.event_log import sort_by_application

    def log(name: str, app: str) -> None:
        events = [{"Event": "SparkListenerLogStart"}, {"Event": "SparkListenerApplicationStart", "App Name": app}]
        (tmp_path / name).write_text("".join(json.dumps(e) + "\n" for e in events))

    log("app-1", "ftops-drill-topk-primary")
    log("app-2", "ftops-drill-topk-replica-p1")
    log("app-3", "ftops-drill-topk-primary")
    log("app-4", "someone-else")
    sort_by_application(tmp_path, {"ftops-drill-topk-primary": tmp_path / "primary",
                                   "ftops-drill-topk-replica-p1": tmp_path / "replica"})
    assert sorted(p.name for p in (tmp_path / "primary").iterdir()) == ["app-1", "app-3"]
    assert [p.name for p in (tmp_path / "replica").iterdir()] == ["app-2"]
    assert (tmp_path / "app-4").exists()


def test_a_drill_runs_the_engine_with_its_own_settings_checked_before_anything_starts(tmp_path):
    """The private job's name is an identifier whatever the pipeline's name; the engine's bounds (event seconds)
    follow the input's speed; a bad setting is refused by the engine's own check, before a cluster starts."""
    from spark_jobs.drills.local import engine_settings
    from spark_jobs.drills.private_job import job_name

    assert (job_name("sensor alerts/../v2"), job_name("../..")) == ("drill-sensor-alerts-v2", "drill-pipeline")
    config = DrillConfig(pipeline="topk", params=PARAMS, budget=2, work_dir=tmp_path / "w", speedup=4,
                         new_capacity_after_s=12, kill_driver=True, fail_domain="rack-b")
    settings = engine_settings(config, load_workload("topk", PARAMS))
    assert (settings.job, settings.domain, settings.kill_driver, settings.replacement_delay_s) == \
        ("drill-topk", "rack-b", True, 12)
    assert settings.steady_lag_s == 4 * 60 and settings.max_lag_s == 4 * 600
    with pytest.raises(InputError, match="domain"):
        engine_settings(config.model_copy(update={"fail_domain": "a/b"}), load_workload("topk", PARAMS))


def test_drill_job_text_shows_predicted_against_measured_accuracy():
    """`drill job`'s text printed the checks only; the measurements were in experiment.json alone."""
    from ft_core.store.experiments import Check, ExperimentReport

    report = ExperimentReport(kind="drill", job="clicks", experiment_id=7, verdict="passed",
                              hypothesis_after=[Check(name="caught up", expected="...", observed="after 71.5 s", held=True)],
                              measurements={"predicted_output_fidelity": 0.34, "predicted_accuracy": 0.21,
                                            "tentative_accuracy": 0.206, "time_to_first_tentative_s": 3.2,
                                            "time_to_caught_up_s": 71.5, "lost_windows": 0, "duplicated_windows": 0,
                                            "output_equals_reference": True})
    text = job_report_text(report)
    lines = text.splitlines()
    assert lines[0] == "drill #7 of clicks: passed"
    checks, measurements = text.index("caught up"), text.index("measurement")
    assert checks < measurements
    row = next(line for line in lines if line.startswith("tentative accuracy"))
    assert row.split() == ["tentative", "accuracy", "0.210", "(OF", "0.340)", "0.206"]
    assert any(line.startswith("primary caught up") and "71.5 s after the failure" in line for line in lines)
    attached = job_report_text(report.model_copy(update={"measurements": {"time_to_caught_up_s": 33.8, "peak_lag_s": 32.7,
                                                                          "exactly_once_held": True}}))
    assert "peak lag" in attached and "32.7 s" in attached and "exactly once" in attached
