"""``ftops job start`` never starts a second driver beside a live one (two drivers on one checkpoint corrupt it):
a primary whose driver runs but is not yet (or no longer known to be) on its master is left alone. The orphaned case
(the master answers without it, past its grace) is stopped and submitted again from its checkpoint, tested on real
Spark in tests/airflow/test_safety_net.py through the same rule (``spark_jobs.drills.reconcile.submit_primary``)."""

from __future__ import annotations

import json
import subprocess

import pytest

from ft_core.store.history import HistoryStore
from ft_core.store.migrations import upgrade
from spark_jobs.runtime.job_streams import parse_deployment
from spark_jobs.runtime.processes import start_time
from tests.conftest import run_cli
from tests.live_jobs import registration
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


@pytest.fixture
def env(pg_server, pg_conn):
    upgrade(pg_conn)
    return {"FTOPS_DATABASE_URL": pg_server.url()}


def test_a_live_driver_the_master_does_not_list_yet_gets_no_second_driver(env, pg_conn, tmp_path):
    assert run_cli(*registration("alerts", tmp_path, 14000), "--test-job", env=env).code == 0
    dep = parse_deployment(HistoryStore(pg_conn).job("alerts")["deployment"], "alerts")
    driver = subprocess.Popen(["sleep", "120"], start_new_session=True)  # stands for the driver: a live process group
    try:
        dep.primary_output.mkdir(parents=True, exist_ok=True)
        record = {"pgid": driver.pid, "started": start_time(driver.pid), "log": str(tmp_path / "driver.log")}
        (dep.primary_output / "_submit.json").write_text(json.dumps(record))
        res = run_cli("job", "start", "alerts", "--json", env=env)  # its master is down: not known to be orphaned
        assert res.code == 0, res.err
        assert res.json()["submitted"] is False and "its driver runs" in res.json()["state"]
        assert json.loads((dep.primary_output / "_submit.json").read_text()) == record  # nothing submitted
        text = run_cli("job", "start", "alerts", env=env)
        assert text.code == 0 and "already running (its driver runs" in text.out
        assert driver.poll() is None  # and the live driver was not stopped
    finally:
        driver.kill()
        driver.wait()
