"""The PostgreSQL history store, for real: migrations, dedup, concurrency, a database restart."""

from __future__ import annotations

import threading

import pytest

from ft_core.errors import ExternalError
from ft_core.replication import plan_replication
from ft_core.samples import load_sample
from ft_core.store.connection import connect, redact
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import current_version, migrations, upgrade
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


def _store(conn):
    upgrade(conn)
    store = HistoryStore(conn)
    store.register_job(JobSpec(name="topk", workload="topk", replication_budget=4, query_priorities={"O3[0]": 2}))
    return store


def _plan_args(budget):
    plan = plan_replication(load_sample("q1-topk"), budget, "exact")
    return dict(algorithm=plan.algorithm, objective=plan.output_fidelity, optimal=plan.optimal,
                payload=plan.model_dump(mode="json"), input_hash=plan.input_hash, parameters={"budget": budget})


def test_migrations_are_idempotent_and_versioned(pg_conn):
    assert upgrade(pg_conn) == [v for v, _, _ in migrations()]
    assert upgrade(pg_conn) == []
    assert current_version(pg_conn) == len(migrations())


def test_identical_plan_is_stored_once_and_changes_are_tracked(pg_conn):
    store = _store(pg_conn)
    first = store.save_plan("topk", "replication", **_plan_args(4))
    again = store.save_plan("topk", "replication", **_plan_args(4))
    assert first.created and not again.created and again.plan_id == first.plan_id
    better = store.save_plan("topk", "replication", **_plan_args(8))
    assert better.created
    history = store.plan_history("topk", "replication")
    assert [h["plan_id"] for h in history] == [first.plan_id, better.plan_id]
    assert history[1]["objective_change"] == pytest.approx(history[1]["objective"] - history[0]["objective"])
    assert store.current_plan("topk", "replication")["plan_id"] == better.plan_id


def test_topology_versions_dedupe(pg_conn):
    store = _store(pg_conn)
    doc = load_sample("q1-topk").topology.to_document()
    a, b = store.save_topology("topk", doc), store.save_topology("topk", doc)
    c = store.save_topology("topk", {**doc, "name": "q1-v2"})
    assert a == b != c


def test_two_writers_at_once_store_one_consistent_history(pg_server, pg_conn):
    _store(pg_conn)
    pg_conn.commit()
    ids, errors = [], []

    def writer():
        conn = connect(pg_server.url())
        try:
            for budget in (4, 4, 6, 6):
                ids.append(HistoryStore(conn).save_plan("topk", "replication", **_plan_args(budget)))
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("SELECT input_hash FROM ftops_plan ORDER BY created_at, plan_id")
        hashes = [r[0] for r in cur.fetchall()]
    # No two consecutive stored plans are identical, whatever the interleaving.
    assert all(a != b for a, b in zip(hashes, hashes[1:]))
    assert 2 <= len(hashes) <= 4


def test_database_restart_fails_clearly_then_recovers(pg_server, pg_conn):
    store = _store(pg_conn)
    pg_conn.commit()
    pg_server.stop()
    try:
        with pytest.raises(ExternalError) as err:
            connect(pg_server.url())
        assert "***" in str(err.value) and pg_server.url().split(":")[2].split("@")[0] not in str(err.value)
    finally:
        pg_server.start()
    conn = connect(pg_server.url())
    try:
        assert HistoryStore(conn).save_plan("topk", "replication", **_plan_args(4)).created
    finally:
        conn.close()


def test_redact_hides_passwords():
    assert redact("postgresql://ftops:s3cret@127.0.0.1:5433/ftops") == "postgresql://ftops:***@127.0.0.1:5433/ftops"


def test_cli_upgrade_and_status_never_print_the_password(pg_server, pg_conn, cli):
    env = {"FTOPS_DATABASE_URL": pg_server.url()}
    password = pg_server.url().split(":")[2].split("@")[0]
    up = cli("db", "upgrade", env=env)
    assert up.code == 0 and "schema at version" in up.out
    status = cli("db", "status", "--json", env=env)
    assert status.code == 0 and status.json()["schema_version"] == len(migrations())
    assert password not in up.out + up.err + status.out + status.err
    down = cli("db", "status", env={"FTOPS_DATABASE_URL": "postgresql://ftops:pw@127.0.0.1:1/ftops"})
    assert down.code == 2 and "cannot connect" in down.err and "pw@" not in down.err
