"""A real local Airflow (api-server, scheduler, dag-processor, triggerer as separate processes) serving the
"Fault tolerance" view behind its authentication, triggering a run through its metadata database's write lock, and
a clean stop of every process it started."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import threading
import time

import httpx
import pytest

from ft_core.errors import InputError
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from ftops_provider.local_airflow import LocalAirflow
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import ROOT, test_port
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

PORT = test_port(16820)  # not 8080: a developer's own Airflow may be running


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    """(status, body); status 0 when nothing answers."""
    try:
        resp = httpx.get(url, headers={"Authorization": f"Bearer {token}"} if token else {}, timeout=30)
    except httpx.HTTPError:
        return 0, ""
    return resp.status_code, resp.text


@pytest.fixture
def airflow(pg_server, pg_conn):
    upgrade(pg_conn)
    HistoryStore(pg_conn).register_job(JobSpec(name="topk", workload="topk", replication_budget=4))
    home = ROOT / ".state" / "airflow-local-test"
    shutil.rmtree(home, ignore_errors=True)
    local = LocalAirflow(home=home, port=PORT)
    local.up(extra_env={"AIRFLOW_CONN_FTOPS_DB": pg_server.url()})
    yield local
    local.down()
    shutil.rmtree(home, ignore_errors=True)


def test_local_airflow_serves_the_view_behind_auth_and_stops_cleanly(airflow, pg_server):
    assert set(airflow.health()) >= {"metadatabase", "scheduler", "triggerer", "dag_processor"}
    status, _ = _get(f"{airflow.url}/ftops/")
    assert status == 401  # plugin FastAPI apps are not protected by Airflow automatically: ours checks
    status, page = _get(f"{airflow.url}/ftops/", airflow.token())
    assert status == 200 and "jobs/topk" in page
    status, plugins = _get(f"{airflow.url}/api/v2/plugins", airflow.token())
    assert status == 200 and "Fault tolerance" in plugins
    pids = airflow.pids()
    assert set(pids) == {"api-server", "scheduler", "dag-processor", "triggerer"}
    # the connection's password travels in the environment only, never into Airflow's files or logs
    password = pg_server.url().split(":")[2].split("@")[0]
    for path in airflow.home.rglob("*"):
        if path.is_file() and path.suffix in (".log", ".cfg", ".json"):
            assert password not in path.read_text(errors="replace"), path
    # a trigger that meets the metadata database's write lock (HTTP 500 "Database error") is asked again under
    # its own run id and creates one run (the DAG stays paused: the run is queued, nothing executes)
    wait_for(lambda: airflow._dag_parsed("ftops_fleet_watch", airflow.token()), timeout_s=180, what="ftops_fleet_watch parsed")
    errors_before = _database_errors(airflow)
    with _write_lock_held(airflow.home / "airflow.db", seconds=8):
        run_id = airflow._post_run("ftops_fleet_watch", {"why": "locked"}, airflow.token())
    assert _database_errors(airflow) > errors_before, "the lock never reached the api-server: the retry was not tested"
    runs = airflow.api("GET", "/api/v2/dags/ftops_fleet_watch/dagRuns")["dag_runs"]
    assert [(r["dag_run_id"], r["conf"]) for r in runs] == [(run_id, {"why": "locked"})]
    # a second Airflow on the same port is refused before anything starts
    with pytest.raises(InputError, match=f"port {PORT} is in use"):
        LocalAirflow(home=airflow.home.parent / "airflow-local-test-2", port=PORT).up()
    assert airflow.down() == sorted(pids)
    for pid in pids.values():
        assert not _running(pid), f"pid {pid} survived the stop"
    status, _ = _get(f"{airflow.url}/api/v2/monitor/health")
    assert status == 0


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def _database_errors(airflow: LocalAirflow) -> int:
    """How many requests the api-server has answered with its "Database error" so far (its log's error ids)."""
    return (airflow.home / "logs" / "api-server.log").read_text(errors="replace").count("[error    ] Error with id")


@contextlib.contextmanager
def _write_lock_held(db, seconds: float):
    """SQLite's write lock on ``db`` for ``seconds`` from entering (another writer's long transaction); the block
    runs meanwhile and the exit waits for the release."""
    taken = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(db, timeout=30, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        taken.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
        conn.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(30), "the write lock was not taken"
    yield
    thread.join()
