"""The fault journal and the halt in the real PostgreSQL history store: a fault is journaled only under a live
lease and never while halted, closing is idempotent, a fault whose holder's lease expired is orphaned, and
job names that are not identifiers are refused by the store itself."""

from __future__ import annotations

import time

import psycopg2
import pytest

from ft_core.errors import InputError
from ft_core.store.faults import HaltedError
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

HOLDER = "command ftops drill job (pid 7 on vm)"
UNDO = {"seam": "standalone", "state_dir": "/tmp/spark", "domain": "rack-a", "workers": [{"pool": "primary", "cores": 1}]}


@pytest.fixture
def store(pg_conn):
    upgrade(pg_conn)
    s = HistoryStore(pg_conn)
    s.register_job(JobSpec(name="alerts", workload="examples/sensor_alerts.py"))
    s.register_job(JobSpec(name="topk", workload="topk", test_job=True))
    return s


def _open(store, job="alerts", holder=HOLDER, kind="domain_down", target="rack-a"):
    return store.open_fault(job, "drill", 1, holder, kind, target, UNDO, undo_within_s=600)


def test_a_fault_is_journaled_only_by_the_holder_of_the_jobs_live_lease(store):
    with pytest.raises(InputError, match="does not hold the job's lease"):
        _open(store)
    assert store.open_faults() == []  # nothing journaled, so nothing may be injected
    store.acquire_lease("alerts", "drill", HOLDER, ttl_s=300)
    with pytest.raises(InputError, match="does not hold the job's lease"):
        _open(store, holder="someone else")
    fault = _open(store)
    store.fault_applied(fault, undo={**UNDO, "killed": ["worker-primary-rack-a-7100"]})
    [row] = store.open_faults("alerts")
    assert row["fault_id"] == fault and row["kind"] == "domain_down" and row["target"] == "rack-a"
    assert row["undo"]["killed"] == ["worker-primary-rack-a-7100"] and row["applied_at"] is not None
    assert row["undo_by"] > row["opened_at"]
    assert store.orphaned_faults() == []  # its holder is alive (holds the lease)


def test_closing_is_idempotent_and_the_first_outcome_stays(store):
    store.acquire_lease("alerts", "drill", HOLDER, ttl_s=300)
    fault = _open(store)
    assert store.close_fault(fault, HOLDER, "capacity given back")
    assert not store.close_fault(fault, "reconciler", "capacity given back again")
    [row] = store.faults("alerts")
    assert row["closed_by"] == HOLDER and row["outcome"] == "capacity given back"
    assert store.open_faults() == []
    kinds = [e["kind"] for e in store.events("alerts")]
    assert kinds[:2] == ["fault_closed", "fault_opened"]


def test_a_fault_whose_holders_lease_expired_or_was_released_is_orphaned(store):
    store.acquire_lease("alerts", "drill", HOLDER, ttl_s=1)
    store.acquire_lease("topk", "drill", HOLDER, ttl_s=300)
    lost, kept = _open(store), _open(store, job="topk")
    time.sleep(1.5)  # the alerts lease expires: its holder stopped renewing it
    assert [f["fault_id"] for f in store.orphaned_faults()] == [lost]
    assert [f["fault_id"] for f in store.orphaned_faults("topk")] == []
    store.release_lease("topk", HOLDER)  # released without closing its fault: orphaned as well
    assert [f["fault_id"] for f in store.orphaned_faults()] == [lost, kept]
    # taken over by the next experiment: still orphaned (the new holder is not the one that injected it)
    store.acquire_lease("alerts", "drill", "dag run ftops_chaos_drill/manual__2", ttl_s=300)
    assert lost in [f["fault_id"] for f in store.orphaned_faults("alerts")]


def test_a_halt_refuses_new_faults_and_new_drills_until_resume(store):
    store.acquire_lease("alerts", "drill", HOLDER, ttl_s=300)
    halt = store.halt("game day over", "ops@example")
    assert halt["halted_by"] == "ops@example" and store.halted()["reason"] == "game day over"
    assert store.halt("again", "someone")["reason"] == "game day over"  # the standing halt is kept
    with pytest.raises(HaltedError, match="halted since .* by ops@example \\(game day over\\); `ftops resume`"):
        _open(store)
    with pytest.raises(HaltedError):
        store.acquire_lease("topk", "drill", HOLDER, ttl_s=300)
    store.acquire_lease("topk", "recovery", "recovery run", ttl_s=300)  # restoring service is not an experiment
    assert store.resume("ops@example")["reason"] == "game day over"
    assert store.halted() is None and store.resume("ops@example") is None
    assert _open(store) > 0


def test_the_store_refuses_a_job_name_that_is_not_an_identifier(store):
    with pytest.raises(psycopg2.errors.CheckViolation):
        with store.conn, store.conn.cursor() as cur:
            cur.execute("INSERT INTO ftops_job (name, workload) VALUES ('../../etc/evil', 'topk')")
