"""ftops_incremental_recovery with ``dag.test()``: a real recovery-units deployment on a local Spark cluster
loses failure domain rack-a; the DAG plans two stages, each stage's task waits (deferred) for its new worker
on the master, restarts its units through SparkSubmitOperator and the launcher, and the run is recorded in
the real PostgreSQL history store stage by stage with per-query recovery times."""

from __future__ import annotations

import pytest

from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from spark_jobs.recovery_units.runtime import kill_domain
from tests.conftest import ROOT
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures
from tests.units_fixtures import arrivals, deploy_pinned, start_cluster, stop_everything, wait_steady

BASE = 23700  # ports of this test only


@pytest.fixture
def deployment(tmp_path):
    state = tmp_path / "spark"
    start_cluster(state, BASE)
    try:
        root = deploy_pinned(tmp_path, state, BASE)
        wait_steady(root)
        yield root, state
    finally:
        stop_everything(tmp_path / "units", state)


def test_recovery_dag_restarts_the_units_in_two_capacity_steps_and_records_them(deployment, pg_server, pg_conn, monkeypatch):
    from airflow.dag_processing.dagbag import DagBag

    from ftops_provider.local_stack import stack_connections

    root, state = deployment
    for name, value in stack_connections(pg_server.url(), (BASE + 77, BASE + 90), (BASE + 78, BASE + 91)).items():
        monkeypatch.setenv(name, value)
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name="smartcity", workload="smartcity"))

    failure = kill_domain(root, "rack-a")
    thread = arrivals(state, failure.time, (5, 30), BASE)
    dag = DagBag(dag_folder=str(ROOT / "dags")).get_dag("ftops_incremental_recovery")
    run = dag.test(run_conf={"units_dir": str(root), "job": "smartcity", "arrivals": "1,1", "cost": "declared:0.8",
                             "timeout_s": 600})
    thread.join(timeout=120)
    assert run.state == "success"

    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["wait_capacity_0"] == "skipped"  # no survivor capacity: stage 0 starts nothing
    assert [states[f"start_stage_{k}"] for k in (1, 2)] == ["success", "success"]
    assert states["start_stage_3"] == "skipped"
    [rec] = store.recovery_runs("smartcity")
    assert rec["status"] == "succeeded" and rec["dag_run_id"] == run.run_id
    stages = {s["stage_no"]: s for s in rec["stages"]}
    assert [(stages[n]["partitions"], stages[n]["status"]) for n in (2, 3)] == [(["O2[0]"], "done"), (["O1[0]"], "done")]
    times = {q["query"]: q["recovered_s"] for q in rec["queries"]}
    assert set(times) == {"O1[0]", "O2[0]", "O3[0]"} and None not in times.values()
    assert times["O2[0]"] < times["O1[0]"]
