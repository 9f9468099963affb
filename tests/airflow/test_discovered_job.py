"""``ftops_profile_and_plan`` on a job registered from a Spark UI (plan-only: discovered, never run by ftops),
with ``dag.test()`` and the real PostgreSQL history store. The job's topology is discovered from recorded
REST answers of a real streaming job (tests/data/discovery); its UI is gone by now, as happens when an
application ends: the profile step keeps the stored topology and says why, and the DAG plans the job and
simulates the failure of each failure domain; nothing is submitted."""

from __future__ import annotations

from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from spark_jobs.discovery.measured_topology import discover
from spark_jobs.discovery.rest_client import RecordedRestApi
from tests.conftest import ROOT
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


def test_profile_and_plan_plans_a_discovered_job_and_its_what_if_recovery(pg_server, pg_conn, monkeypatch):
    from tests.live_jobs import repository_dag

    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    recording = ROOT / "tests" / "data" / "discovery" / "broadcast-join.json.gz"
    found = discover(RecordedRestApi.load(recording), last_batches=4, name="plain")
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name="plain", workload="discovered", replication_budget=4))
    topology_id = store.save_topology("plain", found.topology)
    profile = found.profile()
    profile["rediscover"]["spark_ui"] = "http://127.0.0.1:9"  # the application has ended: nothing answers there
    store.save_profile("plain", "rates", {**profile, "topology_id": topology_id})

    run = repository_dag("ftops_profile_and_plan").test()
    assert run.state == "success"
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["submit_replica"] == "skipped" and states["record_applied"] == "skipped"
    profile_ti = next(ti for ti in run.get_task_instances() if ti.task_id == "profile")
    profiled = profile_ti.xcom_pull(task_ids="profile", map_indexes=0)
    assert profiled["topology_id"] is None and "discovering it again failed" in profiled["source"]
    assert "does not answer" in profiled["source"]
    plans = store.plans("plain", "replication")
    assert len(plans) == 1 and plans[0]["topology_id"] == topology_id
    assert len(plans[0]["payload"]["tasks"]) == 4 and 0 < plans[0]["objective"] < 1
    what_if = {p["payload"]["domain"]: p["payload"]["timeline"] for p in store.plans("plain", "recovery")}
    assert set(what_if) == {"rack-a", "rack-b"}
    for timeline in what_if.values():
        assert 0 <= timeline["tentative_output_fidelity"] <= 1 and timeline["priority_weighted_recovery_s"] > 0
    assert store.applied_plans("plain") == []
    assert store.latest_profile("plain", "rates")["doc"]["source"] == found.source()  # no new measurement stored
