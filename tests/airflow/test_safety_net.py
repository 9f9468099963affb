"""No fault outlives the process that injected it (issue 35), end to end on real Spark, PostgreSQL and Airflow:
a drill command SIGKILLed after it failed a domain leaves its fault in the journal; with nobody acting and no
other experiment, the safety net (``ftops_safety_net``, run by a real scheduler and triggerer with experiment
schedules off) gives the domain's capacity back in that domain within the lease's TTL plus two minutes and
records the dead drill aborted; the next drill passes and leaves the domains as it found them. ``ftops halt``
aborts a running drill, undoes its fault and refuses new drills until ``ftops resume``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from ftops_provider.local_airflow import LocalAirflow
from spark_jobs.cluster.seam import cluster_of
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import ROOT, run_cli, test_port
from tests.live_jobs import running_job
from tests.store_fixtures import pg_server  # noqa: F401 - fixture

BASE = test_port(15400)  # the test cluster's ports
AIRFLOW_PORT = test_port(16830)
JOB = "gauges"
TTL_S = 30


@pytest.fixture(scope="module")
def job(pg_server, tmp_path_factory):
    os.environ["FTOPS_DATABASE_URL"] = pg_server.url()  # the commands this module runs, and the drivers they start
    try:
        with running_job(JOB, tmp_path_factory.mktemp("job"), BASE, pg_server.url()) as running:
            yield running
    finally:
        os.environ.pop("FTOPS_DATABASE_URL", None)


@pytest.fixture(scope="module")
def airflow(job, pg_server):
    """A real Airflow whose experiment schedules are off: only the safety net runs on its own."""
    home = ROOT / ".state" / "airflow-safety-net-test"
    shutil.rmtree(home, ignore_errors=True)
    local = LocalAirflow(home=home, port=AIRFLOW_PORT)
    local.up(extra_env={"AIRFLOW_CONN_FTOPS_DB": pg_server.url(), "FTOPS_SCHEDULES": "manual"})
    try:
        token = local.token()
        wait_for(lambda: _watching(local, token), timeout_s=300, interval_s=3, what="the safety net's first run to watch")
        yield local
    finally:
        local.down()
        shutil.rmtree(home, ignore_errors=True)


def _watching(local: LocalAirflow, token: str) -> bool:
    runs = local.api("GET", "/api/v2/dags/ftops_safety_net/dagRuns?state=running", token=token).get("dag_runs", [])
    return any(local.task_instances("ftops_safety_net", r["dag_run_id"]).get("watch", {}).get("state") == "deferred"
               for r in runs)


def _drill(*extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ft_core.cli.main", "drill", "job", JOB, "--timeout-s", "400",
                             "--json", *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _applied_fault(store) -> dict | None:
    return next((f for f in store.open_faults(JOB) if f["applied_at"] is not None), None)


def test_a_sigkilled_drill_is_undone_by_the_safety_net_and_the_next_drill_passes(job, airflow):
    dep, store = job
    cluster = cluster_of(dep)
    before = cluster.capacity()
    assert before == {"rack-a": 1, "rack-b": 1}
    command = _drill("--lease-ttl-s", str(TTL_S), "--replacement-delay-s", "900", "--max-duration-s", "3000")
    try:
        fault = wait_for(lambda: _applied_fault(store), timeout_s=400, interval_s=0.5, what="the drill to fail a domain")
    finally:
        command.kill()  # SIGKILL: no finish, no release; the fault stays in place
        command.wait(timeout=30)
    killed_at = time.time()
    assert fault["kind"] == "domain_down"
    wait_for(lambda: cluster.capacity().get(fault["target"], 0) == 0 or None, timeout_s=30, interval_s=0.2,
             what=f"{fault['target']}'s worker to die")

    wait_for(lambda: (cluster.capacity() == before and not store.open_faults(JOB)) or None, timeout_s=TTL_S + 300,
             interval_s=1, what=lambda: f"the safety net to give {fault['target']} back ({cluster.capacity()})")
    took = time.time() - killed_at
    assert took <= TTL_S + 120, f"the job was whole again {took:.0f} s after the kill (bound {TTL_S + 120} s)"
    [closed] = [f for f in store.faults(JOB) if f["fault_id"] == fault["fault_id"]]
    assert closed["closed_by"].startswith("safety net ftops_safety_net/") and "joined " + fault["target"] in closed["outcome"]
    drill = store.drills(JOB)[-1]
    assert drill["status"] == "aborted" and "holder stopped without finishing it" in drill["error"]
    assert store.lease(JOB) is None

    nxt = _drill("--replacement-delay-s", "5")
    out, err = nxt.communicate(timeout=900)
    assert nxt.returncode == 0, err[-3000:]
    report = json.loads(out)
    assert report["verdict"] == "passed"
    assert cluster.capacity() == before  # the domains it found


def test_a_halt_aborts_the_running_drill_undoes_its_fault_and_refuses_new_ones_until_resume(job):
    dep, store = job
    cluster = cluster_of(dep)
    before = cluster.capacity()
    command = _drill("--replacement-delay-s", "900", "--max-duration-s", "3000")
    try:
        wait_for(lambda: _applied_fault(store), timeout_s=400, interval_s=0.5, what="the drill to fail a domain")
        halted = run_cli("halt", "--reason", "storage incident", "--wait-s", "120", "--json")
        out, err = command.communicate(timeout=300)
    finally:
        command.kill()
    assert halted.code == 0, halted.err
    doc = halted.json()
    assert doc["reason"] == "storage incident" and doc["still_drilling"] == []
    assert command.returncode == 1, err[-3000:]  # aborted, visibly
    report = json.loads(out)
    assert report["verdict"] == "aborted" and "halted by" in report["reasons"][0]
    drill = store.drills(JOB)[-1]
    assert drill["status"] == "aborted" and "halted" in drill["error"]
    assert cluster.capacity() == before and store.open_faults(JOB) == []
    refused = run_cli("drill", "job", JOB, "--replacement-delay-s", "5")
    assert refused.code == 3 and "experiments are halted" in refused.err and "storage incident" in refused.err
    doctor = run_cli("doctor", "--json")
    assert doctor.code == 1 and [f["what"] for f in doctor.json()["findings"]] == ["halted"]
    assert run_cli("resume").code == 0
    assert run_cli("doctor").code == 0 and store.halted() is None


def test_registering_a_running_job_again_says_it_applies_at_the_next_submission(job, tmp_path):
    """Issue 37 (item 9): re-registering a running job does not suggest `job start` (it already runs)."""
    from tests.live_jobs import registration

    dep, store = job
    res = run_cli(*registration(JOB, dep.input.parent, BASE), "--test-job")
    assert res.code == 0, res.err
    assert "its primary already runs" in res.out and f"`ftops job stop {JOB}`, then `ftops job start {JOB}`" in res.out
    assert "next: `ftops job start" not in res.out
    doc = run_cli(*registration(JOB, dep.input.parent, BASE), "--test-job", "--json").json()
    assert doc["primary_running"] is True
