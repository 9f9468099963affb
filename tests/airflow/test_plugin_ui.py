"""The "Fault tolerance" view: registered as an Airflow plugin, behind Airflow's authentication,
showing plan history, topology and plan diffs from the real PostgreSQL history store."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from ft_core.replication import plan_replication
from ft_core.samples import load_sample
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


@pytest.fixture
def ui(pg_server, pg_conn, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    from ftops_provider.ui.app import app

    manager = init_auth_manager()
    token = manager.generate_jwt(SimpleAuthManagerUser(username="admin", role="ADMIN"))
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name="topk", workload="topk", replication_budget=8))
    graph = load_sample("q1-topk")
    topology_id = store.save_topology("topk", graph.topology.to_document())
    for budget in (4, 8):
        plan = plan_replication(graph, budget, "exact")
        store.save_plan("topk", "replication", algorithm=plan.algorithm, objective=plan.output_fidelity,
                        optimal=plan.optimal, payload=plan.model_dump(mode="json"), input_hash=plan.input_hash,
                        topology_id=topology_id)
    return TestClient(app), token


def test_unauthenticated_requests_are_refused(ui):
    client, _ = ui
    for path in ("/", "/jobs/topk", "/api/jobs/topk/plans"):
        assert client.get(path).status_code == 401


def test_job_page_shows_history_topology_and_diff(ui):
    client, token = ui
    client.cookies.set("_token", token)
    index = client.get("/")
    assert index.status_code == 200 and "jobs/topk" in index.text
    page = client.get("/jobs/topk")
    assert page.status_code == 200
    assert page.text.count("<circle") >= 2 + 13  # two plan points and the 13 tasks of Q1
    assert "Current plan" in page.text and "proven optimal" in page.text
    assert "id='diff'" in page.text and "class='added'" in page.text
    plans = client.get("/api/jobs/topk/plans").json()
    assert [round(p["objective"], 4) for p in plans] == [0.25, 0.5595]
    assert client.get("/jobs/unknown").status_code == 404


def test_the_plugin_is_registered_through_its_entry_point():
    from airflow import plugins_manager

    apps, _ = plugins_manager.get_fastapi_plugins()
    assert any(a["url_prefix"] == "/ftops" for a in apps)
    views, _ = plugins_manager._get_ui_plugins()
    assert any(v["name"] == "Fault tolerance" and v["href"] == "/ftops/" for v in views)
