"""ftops_incremental_recovery on a real local Airflow (scheduler, triggerer, dag-processor, api-server as
separate processes), on the job a user brings (issue 13): a real recovery-units deployment of the example
pipeline (examples/sensor_alerts.py, written without ftops internals) on a local Spark cluster loses failure
domain rack-a, which runs its stream-static join and its windowed aggregation; both output queries (in
rack-b) depend on them. The DAG plans two stages (one unit per replacement node); stage 1 restarts the join
through SparkSubmitOperator when the first replacement worker registers; while stage 2 waits, deferred, for
the second one, the scheduler and the triggerer are SIGKILLed and started again. The run must resume
(nothing that already ran runs again, no application is submitted twice), finish when the second worker
arrives, and be recorded in the real PostgreSQL history store stage by stage, with both queries back only
after stage 2 (a query needs every failed unit upstream of it), judged from the progress the units' drivers
wrote to the store. Query ordering by priority on the cluster is
the units tests' (tests/spark/test_units.py, the smart-city pipeline). As root (CI), every Spark daemon is a
host of its own (network namespaces on a bridge; the drivers, Airflow and the store on this machine) and rack-a's
host goes down: every process on it killed and its link cut (issue 14; the units tests cut a rack off with a
partition instead)."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.leases import BusyError
from ft_core.store.migrations import upgrade
from ftops_provider.local_airflow import LocalAirflow
from ftops_provider.local_stack import stack_connections
from spark_jobs.cluster.standalone import add_worker, require_state
from spark_jobs.cluster.web_ui import master_state
from spark_jobs.recovery_units.runtime import kill_domain
from tests.conftest import ROOT, namespaces_of, test_network, test_port
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures
from tests.units_fixtures import Example, arrivals, deploy_pinned, start_cluster, stop_everything, wait, wait_steady

BASE = test_port(14800)  # Spark ports of this test only
AIRFLOW_PORT = test_port(16810)  # test_local_airflow uses 16820
DAG_ID = "ftops_incremental_recovery"
JOB = "alerts"


@pytest.fixture
def deployment(tmp_path, pg_server, pg_conn, monkeypatch):  # noqa: F811
    upgrade(pg_conn)
    monkeypatch.setenv("FTOPS_DATABASE_URL", pg_server.url())  # the units' drivers write progress to the store
    state = tmp_path / "spark"
    start_cluster(state, BASE, test_network())
    net = require_state(state).hosts()
    try:
        root = deploy_pinned(tmp_path, state, BASE, Example.pipeline, Example.params, Example.placement)
        wait_steady(root, Example.queries)
        yield root, state
    finally:
        stop_everything(tmp_path / "units", state)
    assert net is None or namespaces_of(net.subnet) == []  # the hosts, their links and the bridge are gone


@pytest.fixture
def airflow(deployment, pg_server, pg_conn):
    upgrade(pg_conn)
    HistoryStore(pg_conn).register_job(JobSpec(name=JOB, workload=Example.pipeline))
    env = stack_connections(pg_server.url(), require_state(deployment[1]).masters())  # loopback, or the master's host
    home = ROOT / ".state" / "airflow-recovery-test"
    shutil.rmtree(home, ignore_errors=True)
    local = LocalAirflow(home=home, port=AIRFLOW_PORT)
    local.up(extra_env=env)
    try:
        yield local, env
    finally:
        local.down()  # the home stays until the next run: its logs/ explain a failure


def _master_app_names(state: Path) -> list[str]:
    doc = master_state(require_state(state).master_ui("primary"), timeout_s=10)
    return [a["name"] for a in doc.get("activeapps", []) + doc.get("completedapps", [])]


def test_recovery_dag_resumes_after_a_scheduler_and_triggerer_crash(deployment, airflow, pg_conn):
    root, state = deployment
    local, env = airflow
    failure = kill_domain(root, "rack-a", "host-down")
    store = HistoryStore(pg_conn)
    conf = {"units_dir": str(root), "pipeline": Example.pipeline, "job": JOB, "arrivals": "1,1",
            "cost": "declared:0.8", "timeout_s": 900}
    drill = f"ftops drill job {JOB} (pid 4242)"
    store.acquire_lease(JOB, "drill", drill, ttl_s=600)
    refused = local.trigger(DAG_ID, conf)
    wait(lambda: local.dag_run(DAG_ID, refused)["state"] in ("success", "failed"), "the refused run to end", timeout_s=300)
    refused_states = {k: v["state"] for k, v in local.task_instances(DAG_ID, refused).items()}
    assert local.dag_run(DAG_ID, refused)["state"] == "failed"
    assert refused_states["detect_failure"] == "success", (refused_states, local.failed_task_logs(DAG_ID, refused))
    assert refused_states["plan_stages"] == "failed", (refused_states, local.failed_task_logs(DAG_ID, refused))
    assert store.recovery_runs(JOB) == [] and store.lease(JOB)["holder"] == drill
    assert store.release_lease(JOB, drill)

    first = arrivals(state, failure.time, (5,), BASE)  # the second replacement node comes after the crash
    run_id = local.trigger(DAG_ID, conf)

    def tis() -> dict[str, dict]:
        return local.task_instances(DAG_ID, run_id)

    def stage_2_waiting() -> bool:
        now = tis()
        state = local.dag_run(DAG_ID, run_id)["state"]
        assert state in ("queued", "running"), (state, {k: v["state"] for k, v in now.items()})
        return now.get("record_stage_1", {}).get("state") == "success" and now["wait_capacity_2"]["state"] == "deferred"

    wait(stage_2_waiting, "stage 1 done and stage 2 deferred on its capacity", timeout_s=600)
    first.join(timeout=60)
    with pytest.raises(BusyError, match=re.escape(f"recovery by dag run {DAG_ID}/{run_id}")):
        store.acquire_lease(JOB, "drill", drill, ttl_s=600)
    before = tis()
    local.crash(("scheduler", "triggerer"))
    time.sleep(5)
    local.restart(("scheduler", "triggerer"), extra_env=env)
    add_worker(state, "rack-c", port_base=BASE + 121, ui_base=BASE + 221)  # stage 2's node

    # A guard against a hung run, not a speed check: after stage 2 the run waits for both queries and `finish`
    # computes the failure-free reference in local Spark; on a loaded 2-core machine that took 10 minutes.
    wait(lambda: local.dag_run(DAG_ID, run_id)["state"] in ("success", "failed"), "the run to finish", timeout_s=1200)
    after = tis()
    assert local.dag_run(DAG_ID, run_id)["state"] == "success", ({k: v["state"] for k, v in after.items()},
                                                                 local.failed_task_logs(DAG_ID, run_id))
    # resumed, not restarted: what had run before the crash did not run again
    for task in ("detect_failure", "plan_stages", "wait_capacity_1", "start_stage_1", "record_stage_1"):
        assert after[task]["try_number"] == before[task]["try_number"] == 1, task
    assert after["wait_capacity_0"]["state"] == "skipped"  # no survivor capacity: stage 0 starts nothing
    assert [after[f"start_stage_{k}"]["state"] for k in (1, 2, 3)] == ["success", "success", "skipped"]
    names = _master_app_names(state)
    stage_apps = [n for n in names if "-rec-" in n]
    assert len(stage_apps) == 2 and len(set(stage_apps)) == 2, names  # one application per stage, each once

    assert store.lease(JOB) is None  # released by the finish step
    [rec] = store.recovery_runs(JOB)
    report = store.experiment("recovery", rec["run_id"])
    assert report.verdict == "passed" and all(c.held for c in report.hypothesis_after)
    assert [e.event for e in report.timeline][-1] == "stage 3 finished"
    assert rec["status"] == "succeeded" and rec["dag_run_id"] == run_id
    stages = {s["stage_no"]: s for s in rec["stages"]}
    assert [(stages[n]["partitions"], stages[n]["status"]) for n in (2, 3)] == [(["enrich[0]"], "done"), (["peaks[0]"], "done")]
    # the wait read the units' progress from the history store (every unit's driver wrote it there)
    wait_event = local.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/wait_recovered/xcomEntries/"
                                  "return_value")["value"]
    assert wait_event["source"] == "history store", wait_event
    times = {q["query"]: q["recovered_s"] for q in rec["queries"]}
    assert set(times) == set(Example.queries) and None not in times.values()
    assert all(t > stages[3]["started_at"].timestamp() - failure.time for t in times.values()), (times, stages[3])
