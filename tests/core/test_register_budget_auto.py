"""``ftops job register --budget auto`` (issue 37): the job registered with the smallest budget whose plan of its
topology reaches ``--target-accuracy``, the same choice as ``ftops plan replication --budget auto``, on the real
PostgreSQL history store."""

from __future__ import annotations

import pytest

from ft_core.store.history import HistoryStore
from ft_core.store.migrations import upgrade
from tests.conftest import SAMPLES, run_cli
from tests.live_jobs import registration
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


@pytest.fixture
def env(pg_server, pg_conn):
    upgrade(pg_conn)
    return {"FTOPS_DATABASE_URL": pg_server.url()}


def test_a_plan_only_job_gets_the_smallest_budget_reaching_the_target(env, pg_conn):
    planned = run_cli("plan", "replication", SAMPLES / "q2-incidents.json", "--budget", "auto", "--target-accuracy",
                      "0.3", "--json")
    assert planned.code == 0, planned.err
    res = run_cli("job", "register", "--name", "incidents-plan", "--topology", SAMPLES / "q2-incidents.json",
                  "--budget", "auto", "--target-accuracy", "0.3", "--json", env=env)
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["budget"] == planned.json()["budget"] > 0
    assert doc["budget_choice"] == {"budget": "auto", "target_accuracy": 0.3, "target_measure": "output_fidelity"}
    assert HistoryStore(pg_conn).job("incidents-plan")["replication_budget"] == doc["budget"]
    text = run_cli("job", "register", "--name", "topk-plan", "--topology", SAMPLES / "q1-topk.json", "--budget", "auto",
                   env=env)
    assert text.code == 0 and "budget auto: 7, the smallest whose plan keeps OF >= 0.5" in text.out  # the default target


def test_a_runnable_job_gets_it_from_its_pipelines_topology(env, pg_conn, tmp_path):
    res = run_cli(*registration("alerts", tmp_path, 14000), "--budget", "auto", "--json", env=env)  # the last --budget
    assert res.code == 0, res.err
    budget = res.json()["budget"]
    assert HistoryStore(pg_conn).job("alerts")["replication_budget"] == budget
    topology = tmp_path / "alerts-topology.json"
    topology.write_text(__import__("json").dumps(HistoryStore(pg_conn).latest_topology("alerts")))
    advice = run_cli("plan", "budget", topology, "--json")
    assert advice.code == 0, advice.err
    assert budget == advice.json()["smallest_budget"]


@pytest.mark.parametrize("args, field, code", [
    (["--budget", "2", "--target-accuracy", "0.5"], "--target-accuracy", 2),  # a target means nothing for a given budget
    (["--budget", "automatic"], "--budget", 2),
    (["--budget", "auto", "--target-accuracy", "1.5"], "--target-accuracy", 2),
])
def test_bad_budget_flags_exit_2_naming_the_flag_and_store_nothing(env, pg_conn, args, field, code):
    res = run_cli("job", "register", "--name", "x", "--topology", SAMPLES / "q1-topk.json", *args, "--json", env=env)
    assert res.code == code, res.out
    assert res.json()["field"] == field and res.json()["error"].startswith(field)
    assert HistoryStore(pg_conn).jobs() == []
