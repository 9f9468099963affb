"""Issue 14: the hooks take their endpoints from Airflow connections and never guess this machine.

The history store hook is the Postgres provider's hook (connection extras such as ``sslmode`` reach
libpq: a real server without SSL refuses ``sslmode=require``); a connection without a host is refused
with its name, for the store and for the Spark master.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest

from ft_core.errors import ExternalError, InputError
from tests.store_fixtures import pg_server  # noqa: F401 - fixture


def _postgres_conn(monkeypatch, conn_id: str, url: str | None, **extra) -> None:
    parts = urlsplit(url) if url else None
    doc = {"conn_type": "postgres", "extra": extra}
    if parts:
        doc.update(host=parts.hostname, port=parts.port, login=parts.username, password=parts.password,
                   schema=parts.path.lstrip("/"))
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(doc))


def test_history_hook_opens_the_store_with_the_connections_extras(monkeypatch, pg_server):  # noqa: F811
    from ftops_provider.hooks.history import HistoryStoreHook

    _postgres_conn(monkeypatch, "ftops_ep_plain", pg_server.url(), sslmode="disable")
    conn = HistoryStoreHook("ftops_ep_plain").get_conn()
    try:
        assert type(conn).__module__.startswith("psycopg2")  # the store's driver, whatever the provider prefers
        with conn.cursor() as cur:
            cur.execute("SELECT current_database()")
            assert cur.fetchone()[0] == "ftops"
    finally:
        conn.close()
    _postgres_conn(monkeypatch, "ftops_ep_ssl", pg_server.url(), sslmode="require")
    with pytest.raises(ExternalError, match="SSL"):  # the extra reached libpq; the test server has no SSL
        HistoryStoreHook("ftops_ep_ssl").get_conn()


def test_history_hook_without_a_host_names_the_connection(monkeypatch):
    from ftops_provider.hooks.history import HistoryStoreHook

    _postgres_conn(monkeypatch, "ftops_ep_nohost", None)
    with pytest.raises(InputError, match="'ftops_ep_nohost' has no host"):
        HistoryStoreHook("ftops_ep_nohost").store()


def test_spark_master_hook_without_a_host_names_the_connection(monkeypatch):
    from ftops_provider.hooks.spark_master import SparkMasterHook

    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_EP_MASTER", json.dumps({"conn_type": "ftops_spark_master", "port": 8090}))
    with pytest.raises(InputError, match="'ftops_ep_master' has no host"):
        SparkMasterHook("ftops_ep_master").ui_url()
    with pytest.raises(InputError, match="'ftops_ep_master' has no host"):
        SparkMasterHook("ftops_ep_master").master_url()


def test_spark_master_hook_uses_the_connections_host(monkeypatch):
    from ftops_provider.hooks.spark_master import SparkMasterHook

    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_EP_MASTER", json.dumps({"conn_type": "ftops_spark_master",
                                                                  "host": "spark-master.example", "port": 8080}))
    hook = SparkMasterHook("ftops_ep_master")
    assert (hook.ui_url(), hook.master_url()) == ("http://spark-master.example:8080", "spark://spark-master.example:7077")


def test_recovery_takes_the_master_ui_from_the_record_else_the_connection(monkeypatch, tmp_path):
    from ftops_provider.operators.recovery import _master_ui
    from spark_jobs.recovery_units.deployment import Deployment

    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_EP_MASTER", json.dumps({"conn_type": "ftops_spark_master",
                                                                  "host": "spark-master.example", "port": 8080}))
    dep = Deployment(root=str(tmp_path), pipeline="smartcity", params={}, input=str(tmp_path / "input"),
                     master="spark://spark-master.example:7077")
    dep.save()
    assert _master_ui(tmp_path, "ftops_ep_master") == "http://spark-master.example:8080"
    dep.model_copy(update={"master_ui": "http://ui.example:8081"}).save()
    assert _master_ui(tmp_path, "ftops_ep_master") == "http://ui.example:8081"


def test_stream_submissions_give_the_driver_the_stores_connection_string(monkeypatch, pg_server):  # noqa: F811
    from ft_core.store.connection import connect
    from ftops_provider.operators.streams import StreamSubmitOperator, UnitsStageSubmitOperator, store_env

    def submit(conn_id: str, master: str) -> StreamSubmitOperator:
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "spark", "host": master}))
        return StreamSubmitOperator(task_id="submit", app_name="ftops-x-primary", run_args=[], master_ui="http://h:1",
                                    conn_id=conn_id, ftops_db_conn_id="ftops_ep_store")

    _postgres_conn(monkeypatch, "ftops_ep_store", pg_server.url(), sslmode="disable")
    env = store_env(submit("ftops_ep_standalone", "spark://127.0.0.1:7077"), "ftops_ep_store", "a stream")
    dsn = env["FTOPS_DATABASE_URL"]
    assert "sslmode=disable" in dsn  # assembled as the hook assembles it, extras kept
    conn = connect(dsn)  # the driver connects with it
    conn.close()
    stage = UnitsStageSubmitOperator(task_id="stage", units_dir="/d", schedule_path="/s", stage=0,
                                     conn_id="ftops_ep_standalone", ftops_db_conn_id="ftops_ep_store")
    assert store_env(stage, stage.ftops_db_conn_id, "stage 0") == env  # a staged recovery's unit drivers too
    assert store_env(submit("ftops_ep_yarn", "yarn"), "ftops_ep_store", "a stream") == {}  # env_vars would go on the command line
    _postgres_conn(monkeypatch, "ftops_ep_store", None)  # a store connection without a host: the stream still goes
    assert store_env(submit("ftops_ep_standalone", "spark://127.0.0.1:7077"), "ftops_ep_store", "a stream") == {}
