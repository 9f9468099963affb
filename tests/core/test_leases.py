"""One experiment per job: leases in the real PostgreSQL history store, taken, refused, renewed, released,
and expiring when their holder is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ft_core.errors import InputError
from ft_core.store.connection import connect
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.leases import BusyError, LeaseKeeper
from ft_core.store.migrations import upgrade
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import ROOT
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


@pytest.fixture
def store(pg_conn):
    upgrade(pg_conn)
    s = HistoryStore(pg_conn)
    s.register_job(JobSpec(name="alerts", workload="examples/sensor_alerts.py"))
    s.register_job(JobSpec(name="topk", workload="topk", test_job=True))
    return s


def test_a_second_experiment_is_refused_naming_the_holder_until_the_first_releases(store):
    lease = store.acquire_lease("alerts", "drill", "dag run ftops_chaos_drill/manual__1", ttl_s=300)
    assert lease["kind"] == "drill" and store.lease("alerts")["holder"] == "dag run ftops_chaos_drill/manual__1"
    with pytest.raises(BusyError, match=r"job 'alerts' is busy: a drill by dag run ftops_chaos_drill/manual__1 holds it since"):
        store.acquire_lease("alerts", "recovery", "command ftops recover (pid 7 on vm)", ttl_s=300)
    store.acquire_lease("topk", "recovery", "command ftops recover (pid 7 on vm)", ttl_s=300)  # other jobs are free
    # the same holder again (a retried task) keeps its lease and its start time
    again = store.acquire_lease("alerts", "drill", "dag run ftops_chaos_drill/manual__1", ttl_s=300)
    assert again["acquired_at"] == lease["acquired_at"] and again["expires_at"] >= lease["expires_at"]
    assert not store.release_lease("alerts", "somebody else")
    assert store.release_lease("alerts", "dag run ftops_chaos_drill/manual__1") and store.lease("alerts") is None
    store.acquire_lease("alerts", "recovery", "command ftops recover (pid 7 on vm)", ttl_s=300)
    kinds = [e["kind"] for e in reversed(store.events("alerts"))]
    assert kinds == ["lease_acquired", "lease_released", "lease_acquired"]


def test_an_expired_lease_is_taken_over_and_the_takeover_is_logged(store):
    store.acquire_lease("alerts", "drill", "command ftops drill run (pid 1 on vm)", ttl_s=0.5)
    time.sleep(0.8)
    assert store.lease("alerts") is None  # expired: the job is free again
    store.acquire_lease("alerts", "replica_change", "dag run ftops_profile_and_plan/scheduled__1", ttl_s=60)
    expired = [e for e in store.events("alerts") if e["kind"] == "lease_expired"]
    assert expired and expired[0]["payload"] == {"holder": "command ftops drill run (pid 1 on vm)", "kind": "drill",
                                                  "taken_by": "dag run ftops_profile_and_plan/scheduled__1"}


def test_bad_lease_requests_name_the_field(store):
    with pytest.raises(Exception, match="lease kind 'party'"):
        store.acquire_lease("alerts", "party", "me", ttl_s=1)
    with pytest.raises(Exception, match="ttl_s: must be positive"):
        store.acquire_lease("alerts", "drill", "me", ttl_s=0)
    with pytest.raises(Exception, match="job 'nope' is not registered"):
        store.acquire_lease("nope", "drill", "me", ttl_s=1)


KEEPER = """
import sys, time
from ft_core.errors import InputError
from ft_core.store.connection import connect
from ft_core.store.history import HistoryStore
from ft_core.store.leases import LeaseKeeper
with LeaseKeeper(lambda: HistoryStore(connect(sys.argv[1])), "alerts", "drill", "command test-holder", ttl_s=2.0):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_holder_killed_while_holding_the_lease_lets_it_expire_and_a_keeper_releases_on_exit(store, pg_server):
    proc = subprocess.Popen([sys.executable, "-c", KEEPER, pg_server.url()], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT, env={**os.environ}, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        time.sleep(3.0)  # longer than the ttl: the keeper's renewals keep it
        with pytest.raises(BusyError, match="command test-holder"):
            store.acquire_lease("alerts", "drill", "the next drill", ttl_s=60)
        os.killpg(proc.pid, signal.SIGKILL)  # no release, no more renewals
        proc.wait(timeout=10)
        wait_for(lambda: store.lease("alerts") is None, timeout_s=10, interval_s=0.2, what="the lease to expire")
        store.acquire_lease("alerts", "drill", "the next drill", ttl_s=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    store.release_lease("alerts", "the next drill")
    with LeaseKeeper(lambda: HistoryStore(connect(pg_server.url())), "alerts", "recovery", "command me", ttl_s=5):
        assert store.lease("alerts")["holder"] == "command me"
    assert store.lease("alerts") is None  # released on exit


def test_whoever_takes_the_lease_closes_drills_their_dead_holders_left_running(store):
    from ft_core.store.experiments import Check, ExperimentReport, Probe

    dead = store.start_drill("alerts", None, {"failure_domain": "rack-a"}, "manual__dead")
    mine = store.start_drill("alerts", None, {"failure_domain": "rack-b"}, "manual__mine")
    cli = store.start_drill("alerts", None, {"failure_domain": "rack-b"})  # a command's drill has no DAG run
    assert store.abandon_running_drills("alerts", "its holder died", keep_dag_run_id="manual__mine") == [dead, cli]
    assert store.drill_status(dead) == "aborted" and store.drill_status(mine) == "running"
    assert store.drill_report(dead)["error"] == "its holder died"
    assert store.abandon_running_drills("alerts", "again") == [mine]  # a command keeps none

    assert store.experiment("drill", dead) is None  # no report until one is written
    report = ExperimentReport(kind="drill", job="alerts", experiment_id=dead, verdict="aborted", reasons=["its holder died"],
                              hypothesis_before=[Check(name="primary keeps up", expected="within 60 s", observed="2.0 s behind",
                                                       held=True)],
                              probes=[Probe(name="too_long", bound="drill shorter than 600 s", fired=True, reason="ran 700 s")])
    store.save_experiment(report)
    assert store.experiment("drill", dead) == report
    with pytest.raises(InputError, match="drill 999999 does not exist"):
        store.save_experiment(report.model_copy(update={"experiment_id": 999999}))
    with pytest.raises(InputError, match="experiment kind 'chaos'"):
        store.experiment("chaos", dead)


def test_commands_acting_on_a_job_hold_its_lease(store, pg_server, cli, samples):
    """``faults inject --job`` (and ``units recover --job``, the same helper) is refused while another experiment
    holds the job, naming the holder; when free it holds the lease while it acts and releases it when it stops,
    here on an error (the application has no executor on this host: no Spark application runs in this test)."""
    env = {"FTOPS_DATABASE_URL": pg_server.url()}
    args = ("faults", "inject", samples / "fault-profile.yaml", "--app-id", "app-20260101000000-0000", "--duration", "5",
            "--seed", "1", "--job", "alerts")
    store.acquire_lease("alerts", "recovery", "dag run ftops_incremental_recovery/manual__1", ttl_s=300)
    store.conn.commit()
    res = cli(*args, env=env)
    assert res.code == 3 and "job 'alerts' is busy: a recovery by dag run ftops_incremental_recovery/manual__1" in res.err, res.err
    assert store.release_lease("alerts", "dag run ftops_incremental_recovery/manual__1")
    res = cli(*args, env=env)
    assert res.code != 0 and "has no executor on this host" in res.err, res.err
    assert store.lease("alerts") is None
    held = [e["payload"]["holder"] for e in store.events("alerts") if e["kind"] == "lease_acquired"]
    assert held[0].startswith("command ftops faults inject (pid "), held
    res = cli("units", "recover", "--help")
    assert res.code == 0 and "--job NAME" in res.out and "--lease-ttl-s" in res.out
