"""DAG integrity and real runs with dag.test() against the real PostgreSQL history store."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from ft_core.store.history import HistoryStore
from tests.conftest import ROOT, run_cli
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


def test_every_dag_file_imports_quickly_and_cleanly():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(ROOT / "dags"))
    assert bag.import_errors == {}
    assert {"ftops_profile_and_plan", "ftops_chaos_drill", "ftops_incremental_recovery",
            "ftops_checkpoint_tuning"} <= set(bag.dag_ids)
    for path in (ROOT / "dags").glob("*.py"):  # each file also runs on its own (python dags/x.py)
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    for dag_id in bag.dag_ids:
        assert bag.get_dag(dag_id).tags and "ftops" in bag.get_dag(dag_id).tags


def test_dag_file_parses_in_under_a_second():
    import importlib.util

    import airflow  # noqa: F401 - Airflow itself is loaded once by the DAG processor, not per file

    for path in (ROOT / "dags").glob("*.py"):
        spec = importlib.util.spec_from_file_location(f"parse_{path.stem}", path)
        start = time.perf_counter()
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        assert time.perf_counter() - start < 1.0, path.name


def test_profile_and_plan_on_topology_only_jobs_stores_one_plan_per_job_and_is_idempotent(pg_server, pg_conn, monkeypatch):
    """Jobs registered with a topology only (no deployment: ftops does not manage their streams) are planned
    from the stored topology, with a what-if recovery per failure domain; nothing is submitted."""
    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    env = {"FTOPS_DATABASE_URL": pg_server.url()}
    for name, sample, budget in (("topk", "q1-topk", 6), ("incidents", "q2-incidents", 8)):
        res = run_cli("job", "register", "--name", name, "--budget", str(budget),
                      "--topology", ROOT / "ft_core" / "samples" / f"{sample}.json", env=env)
        assert res.code == 0, res.err
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(ROOT / "dags")).get_dag("ftops_profile_and_plan")
    # idempotent steps (as this test shows for two whole runs) are retried; a person's approval is not
    assert {t.task_id for t in dag.tasks if t.retries == 0} == {"approve_replica_changes", "watcher"}
    first = dag.test()
    assert first.state == "success"
    second = dag.test()
    assert second.state == "success"
    store = HistoryStore(pg_conn)
    for name in ("topk", "incidents"):
        plans = store.plans(name, "replication")
        assert len(plans) == 1  # the second run found nothing new to store
        assert plans[0]["dag_run_id"] == first.run_id and plans[0]["optimal"]
        assert {p["payload"]["domain"] for p in store.plans(name, "recovery")} == {"rack-a", "rack-b"}
        assert store.applied_plans(name) == []
    assert store.current_plan("topk", "replication")["objective"] == pytest.approx(0.4166666, abs=1e-4)
    states = {ti.task_id: ti.state for ti in first.get_task_instances()}
    assert states["submit_replica"] == "skipped" and states["record_applied"] == "skipped"

    # the console's Re-plan: a run naming a job operates that job only; a name not registered fails the run
    one = dag.test(run_conf={"job": "incidents"})
    assert one.state == "success"
    assert [ti.map_index for ti in one.get_task_instances() if ti.task_id == "plan_replication"] == [0]
    nobody = dag.test(run_conf={"job": "nobody"})
    states = {ti.task_id: ti.state for ti in nobody.get_task_instances()}
    assert nobody.state == "failed" and states["registered_jobs"] == "failed"
    assert all(ti.state in (None, "upstream_failed") for ti in nobody.get_task_instances() if ti.task_id == "profile")
    dag.test(run_conf={"job": ""})  # dag.test() keeps the last run's conf in the DAG object's Params


def test_two_planning_runs_at_once_store_one_consistent_history(pg_server, pg_conn, monkeypatch):
    """Two runs of the planning step at the same time (a manual trigger beside the schedule, or two DAG
    copies): for each job exactly one of them stores the plan, the other finds it current."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from ftops_provider.operators.planning import PlanReplicationOperator

    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    env = {"FTOPS_DATABASE_URL": pg_server.url()}
    jobs = {"topk": "q1-topk", "incidents": "q2-incidents"}
    for name, sample in jobs.items():
        res = run_cli("job", "register", "--name", name, "--budget", "6",
                      "--topology", ROOT / "ft_core" / "samples" / f"{sample}.json", env=env)
        assert res.code == 0, res.err
    start = threading.Barrier(4)

    def plan(job: str, run_id: str) -> dict:
        op = PlanReplicationOperator(task_id=f"plan_{job}_{run_id}", job_name=job, exact_time_limit=20)
        start.wait()
        return {"job": job, "run_id": run_id, **op.execute({"run_id": run_id})}

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda a: plan(*a), [(j, r) for j in jobs for r in ("run-a", "run-b")]))
    store = HistoryStore(pg_conn)
    for job in jobs:
        mine = [r for r in results if r["job"] == job]
        assert sorted(r["created"] for r in mine) == [False, True]
        assert mine[0]["plan_id"] == mine[1]["plan_id"]
        plans = store.plans(job, "replication")
        assert len(plans) == 1 and plans[0]["dag_run_id"] == next(r["run_id"] for r in mine if r["created"])


def test_a_failed_recovery_task_fails_the_run_although_finish_runs_after_failures(tmp_path):
    """``finish`` runs with ``all_done``; without the watcher leaf a run whose first task failed would be
    green. No Spark needed: the deployment folder does not exist, so ``detect_failure`` fails."""
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(ROOT / "dags")).get_dag("ftops_incremental_recovery")
    run = dag.test(run_conf={"units_dir": str(tmp_path / "no-such-deployment"), "timeout_s": 60})
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["detect_failure"] == "failed" and states["start_stage_1"] == "upstream_failed"
    assert states["finish"] in ("skipped", "upstream_failed", "failed") and states["watcher"] == "failed"
    assert run.state == "failed"
