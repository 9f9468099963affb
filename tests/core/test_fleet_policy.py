"""Per-job policy (``ftops job set``, ``ftops job register``, ``list``/``status --json``), the fleet's policy and its
failure-domain lock, on the real PostgreSQL history store (issue 33, items 1 and 2)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest

from ft_core.errors import InputError
from ft_core.fleet.schedules import Scheduled, due
from ft_core.store.domain_locks import DomainsBusyError
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from ft_core.store.stream_progress import BatchProgress
from tests.conftest import ROOT, SAMPLES, run_cli
from tests.live_jobs import registration
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


@pytest.fixture
def env(pg_server, pg_conn):
    upgrade(pg_conn)
    return {"FTOPS_DATABASE_URL": pg_server.url()}


def _plan_only(name: str, env: dict) -> None:
    res = run_cli("job", "register", "--name", name, "--topology", SAMPLES / "q1-topk.json", env=env)
    assert res.code == 0, res.err


def test_policy_is_set_at_registration_changed_later_shown_and_every_change_kept_with_who(env, pg_conn, tmp_path):
    res = run_cli(*registration("alerts", tmp_path, 14000), "--drill-schedule", "@weekly", "--priority", "2", env=env)
    assert res.code == 0, res.err
    store = HistoryStore(pg_conn)
    assert store.policy("alerts") == {"drill_schedule": "@weekly", "tuning_schedule": "none", "priority": 2.0,
                                           "apply": "approve", "last_drill_started_at": None,
                                           "last_tuning_started_at": None, "refused": {}}
    changed = run_cli("job", "set", "alerts", "--drill-schedule", "30  2 * * 1", "--tuning-schedule", "@daily",
                      "--apply", "auto", "--json", env=env)
    assert changed.code == 0, changed.err
    doc = changed.json()
    assert doc["policy"].items() >= {"drill_schedule": "30 2 * * 1", "tuning_schedule": "@daily", "priority": 2.0,
                                     "apply": "auto"}.items()
    assert doc["last_change"]["changes"] == {"drill_schedule": {"from": "@weekly", "to": "30 2 * * 1"},
                                             "tuning_schedule": {"from": None, "to": "@daily"},
                                             "apply_mode": {"from": "approve", "to": "auto"}}
    assert doc["last_change"]["changed_by"].endswith(")") and "via command ftops job set (pid " in doc["last_change"]["changed_by"]
    same = run_cli("job", "set", "alerts", "--priority", "2", env=env)  # nothing changes: nothing recorded
    assert same.code == 0, same.err
    history = store.policy_changes("alerts")
    assert [set(c["changes"]) for c in history] == [{"drill_schedule", "tuning_schedule", "apply_mode"},
                                                     {"drill_schedule", "priority"}, {"apply_mode"}]
    assert "via command ftops job register" in history[-1]["changed_by"]  # the registration's own apply mode
    none = run_cli("job", "set", "alerts", "--drill-schedule", "none", env=env)
    assert none.code == 0 and store.job("alerts")["drill_schedule"] is None

    _plan_only("topk-plan", env)
    listed = run_cli("job", "list", "--json", env=env)
    assert listed.code == 0, listed.err
    assert {r["job"]: r["policy"] for r in json.loads(listed.out)} == {
        "alerts": {"drill_schedule": "none", "tuning_schedule": "@daily", "priority": 2.0, "apply": "auto"},
        "topk-plan": {"drill_schedule": "none", "tuning_schedule": "none", "priority": 1.0, "apply": "recommend"}}
    status = run_cli("job", "status", "topk-plan", "--json", env=env)
    assert status.code == 0, status.err
    assert status.json()["policy"]["apply"] == "recommend" and status.json()["policy"]["priority"] == 1.0
    table = run_cli("job", "list", env=env)
    assert "@daily" in table.out and "recommend" in table.out


@pytest.mark.parametrize(("args", "flag", "reason"), [
    (["--drill-schedule", "61 * * * *"], "--drill-schedule", "is not a schedule"),
    (["--drill-schedule", "* * * * * *"], "--drill-schedule", "is not a schedule"),
    (["--tuning-schedule", "@yearly"], "--tuning-schedule", "is not a schedule"),
    (["--priority", "0"], "--priority", "greater than 0"),
    (["--priority", "nan"], "--priority", "finite"),
    (["--priority", "1e9"], "--priority", "less than or equal to 1000000"),
    (["--apply", "sometimes"], "--apply", "invalid choice"),
    ([], "--drill-schedule", "nothing to set"),
])
def test_bad_policy_is_refused_with_exit_2_naming_the_flag_and_nothing_changes(env, pg_conn, tmp_path, args, flag, reason):
    assert run_cli(*registration("alerts", tmp_path, 14000), env=env).code == 0
    res = run_cli("job", "set", "alerts", *args, env=env)
    assert res.code == 2, res.out
    assert res.err.startswith(f"ftops: error: {flag}: "), res.err
    assert reason in res.err
    as_json = run_cli("job", "set", "alerts", *args, "--json", env=env)
    assert as_json.code == 2 and json.loads(as_json.out)["field"] == flag
    assert HistoryStore(pg_conn).policy("alerts")["drill_schedule"] == "none"


def test_a_policy_the_job_cannot_have_is_refused_naming_the_flag(env, pg_conn, tmp_path):
    _plan_only("planned", env)
    for args, flag, reason in ((["--drill-schedule", "@weekly"], "--drill-schedule", "is plan-only"),
                               (["--tuning-schedule", "@daily"], "--tuning-schedule", "is plan-only"),
                               (["--apply", "auto"], "--apply", "is plan-only")):
        res = run_cli("job", "set", "planned", *args, env=env)
        assert res.code == 2 and res.err.startswith(f"ftops: error: {flag}: job 'planned' {reason}"), res.err
    refused = run_cli("job", "register", "--name", "planned2", "--topology", SAMPLES / "q1-topk.json", "--drill-schedule",
                      "@weekly", env=env)
    assert refused.code == 2 and "is plan-only" in refused.err
    store = HistoryStore(pg_conn)
    assert [j["name"] for j in store.jobs()] == ["planned"]  # refused before anything was stored

    assert run_cli(*registration("alerts", tmp_path, 14000), "--apply", "recommend", env=env).code == 0
    res = run_cli("job", "set", "alerts", "--drill-schedule", "@weekly", env=env)
    assert res.code == 2 and "in recommend mode, and ftops does not drill it" in res.err
    assert run_cli("job", "set", "alerts", "--drill-schedule", "@weekly", "--apply", "approve", env=env).code == 0
    back = run_cli("job", "set", "alerts", "--apply", "recommend", env=env)
    assert back.code == 2 and back.err.startswith("ftops: error: --apply: job 'alerts' is in recommend mode")
    assert run_cli("job", "set", "nosuchjob", "--priority", "3", env=env).code == 2


def test_the_store_says_since_when_each_job_is_due_and_remembers_picks(env, pg_conn, tmp_path):
    store = HistoryStore(pg_conn)
    for name in ("a", "b", "c"):
        store.register_job(JobSpec(name=name, workload=str(ROOT / "examples" / "sensor_alerts.py"), test_job=True,
                                   deployment={"pipeline": "x"}))
    store.set_policy("a", {"drill_schedule": "@daily", "tuning_schedule": "@weekly"}, "test")
    store.set_policy("b", {"drill_schedule": "@hourly", "priority": 4}, "test")
    with pg_conn, pg_conn.cursor() as cur:  # a's schedule was set two days ago; b was drilled three hours ago
        cur.execute("UPDATE ftops_job SET drill_schedule_at = now() - interval '2 days', "
                    "tuning_schedule_at = now() - interval '2 days' WHERE name = 'a'")
        cur.execute("INSERT INTO ftops_drill (job_id, status, started_at) SELECT job_id, 'passed', now() - interval '3 hours' "
                    "FROM ftops_job WHERE name = 'b'")
    rows = {r["job"]: r for r in store.scheduled("drill")}
    assert set(rows) == {"a", "b"}  # c has no schedule
    now = datetime.now(timezone.utc)
    assert abs(rows["a"]["since"] - (now - timedelta(days=2))) < timedelta(minutes=1)
    assert abs(rows["b"]["since"] - (now - timedelta(hours=3))) < timedelta(minutes=1)
    assert [r.job for r in due([Scheduled(**r) for r in rows.values()], now)] == ["b", "a"]  # priority 4 first
    assert store.pick("drill", ["a"], "dag run ftops_chaos_drill/scheduled__1") == 1
    rows = [Scheduled(**r) for r in store.scheduled("drill")]
    assert [r.job for r in due(rows, now)] == ["b", "a"]
    assert [r.job for r in due(rows, now) if r.picked_at] == ["a"]

    [tuning] = store.scheduled("tuning")
    assert tuning["job"] == "a" and tuning["since"] < now - timedelta(days=1)
    store.tuning_started("a")
    [tuning] = store.scheduled("tuning")
    assert tuning["since"] > now - timedelta(minutes=1)  # tuned now: due again after next Sunday
    assert store.policy("a")["last_tuning_started_at"] is not None


def _drill_lease(store, job: str, holder: str, ttl_s: float = 60) -> None:
    store.acquire_lease(job, "drill", holder, ttl_s=ttl_s)


def test_drills_sharing_a_failure_domain_are_refused_disjoint_ones_run_and_the_fleet_limit_holds(env, pg_conn):
    store = HistoryStore(pg_conn)
    for name in ("a", "b", "c", "d"):
        store.register_job(JobSpec(name=name, workload="w", deployment={"pipeline": "x"}, test_job=True))
    one, other = "spark://127.0.0.1:7077", "spark://127.0.0.1:9077"
    _drill_lease(store, "a", "dag run d/r1")
    assert store.lock_domains("a", "dag run d/r1", [f"{one}#rack-b", f"{one}#rack-a"]) == [f"{one}#rack-a", f"{one}#rack-b"]
    _drill_lease(store, "b", "dag run d/r1")  # the same DAG run drills another job: its own lease, refused domains
    with pytest.raises(DomainsBusyError) as busy:
        store.lock_domains("b", "dag run d/r1", [f"{one}#rack-a"])
    assert "job 'b' is busy: its failure domains are held by another drill (a holds" in str(busy.value)
    assert busy.value.exit_code == 3 and busy.value.holders[0]["job"] == "a"
    _drill_lease(store, "c", "command ftops drill job (pid 1 on vm)")
    assert store.lock_domains("c", "command ftops drill job (pid 1 on vm)", [f"{other}#rack-a"])  # another cluster
    _drill_lease(store, "d", "dag run d/r2")
    with pytest.raises(DomainsBusyError) as full:  # two drills hold domains already: the default limit
        store.lock_domains("d", "dag run d/r2", [f"{other}#rack-z"])
    assert "2 drill(s) run already, the fleet's limit" in str(full.value)
    store.set_fleet_policy(3, "test")
    assert store.lock_domains("d", "dag run d/r2", [f"{other}#rack-z"])
    assert store.policy_changes(None)[0]["changes"] == {"max_drills": {"from": 2, "to": 3}}
    assert {lock["job"] for lock in store.domain_locks()} == {"a", "c", "d"}

    assert store.unlock_domains("a", "dag run d/r1") == 2 and store.unlock_domains("a", "dag run d/r1") == 0
    store.release_lease("a", "dag run d/r1")
    assert store.lock_domains("b", "dag run d/r1", [f"{one}#rack-a"])  # a finished: b may drill now


def test_a_dead_drills_domains_expire_with_its_lease(env, pg_conn):
    store = HistoryStore(pg_conn)
    for name in ("a", "b"):
        store.register_job(JobSpec(name=name, workload="w", deployment={"pipeline": "x"}, test_job=True))
    _drill_lease(store, "a", "command ftops drill job (pid 9 on vm)", ttl_s=1)
    store.lock_domains("a", "command ftops drill job (pid 9 on vm)", ["m#rack-a"])
    _drill_lease(store, "b", "dag run d/r")
    with pytest.raises(DomainsBusyError):
        store.lock_domains("b", "dag run d/r", ["m#rack-a"])
    time.sleep(1.5)  # the holder died (no renewal): its lease and with it its domains expire
    assert store.domain_locks() == []
    assert store.lock_domains("b", "dag run d/r", ["m#rack-a"]) == ["m#rack-a"]
    with pytest.raises(Exception, match="does not hold the job's lease"):
        store.lock_domains("a", "command ftops drill job (pid 9 on vm)", ["m#rack-c"])


def test_the_fleet_command_shows_and_sets_the_limit_the_held_domains_and_the_due_jobs(env, pg_conn, tmp_path):
    assert run_cli(*registration("alerts", tmp_path, 14000), "--test-job", "--drill-schedule", "@hourly", env=env).code == 0
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("UPDATE ftops_job SET drill_schedule_at = now() - interval '2 hours'")
    store = HistoryStore(pg_conn)
    _drill_lease(store, "alerts", "dag run d/r")
    store.lock_domains("alerts", "dag run d/r", ["m#rack-a"])
    res = run_cli("job", "fleet", "--max-drills", "4", "--json", env=env)
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["max_drills"] == 4 and doc["due"] == {"drill": ["alerts"], "tuning": []}
    assert [(d["job"], d["domains"]) for d in doc["drills"]] == [("alerts", ["m#rack-a"])]
    assert doc["states"] == {"experiment": ["alerts"], "no progress": [], "down": [], "lagging": [], "running": []}
    assert run_cli(*registration("gauges", tmp_path, 14100), "--test-job", env=env).code == 0
    store.record_batch(BatchProgress(stream="ftops-gauges-primary", app_id="a", batch_id=1, batch_end=time.time() - 900))
    text = run_cli("job", "fleet", env=env)
    assert text.code == 0 and text.out.splitlines()[0] == "2 jobs: 1 experiment (alerts), 1 down (gauges)"
    bad = run_cli("job", "fleet", "--max-drills", "0", env=env)
    assert bad.code == 2 and bad.err.startswith("ftops: error: --max-drills: ")


def test_a_refused_due_job_says_why_until_its_operation_next_starts(env, pg_conn, tmp_path):
    """A scheduled run that cannot drill a due job records why (the preflight's refusal); ``job status`` and ``job
    fleet`` show it, and a drill that starts afterwards hides it: the refusal is about the time since the last drill."""
    assert run_cli(*registration("alerts", tmp_path, 14000), "--test-job", "--drill-schedule", "@hourly", env=env).code == 0
    store = HistoryStore(pg_conn)
    assert store.policy("alerts")["refused"] == {} and store.refusals() == {}
    store.refuse("drill", "alerts", "job 'alerts': its primary is not running")
    refused = store.policy("alerts")["refused"]
    assert list(refused) == ["drill"] and refused["drill"]["reason"] == "job 'alerts': its primary is not running"
    assert store.refusals() == {"alerts": refused}
    fleet = run_cli("job", "fleet", env=env)
    assert fleet.code == 0 and "skipped by a scheduled run" in fleet.out and "its primary is not running" in fleet.out
    status = run_cli("job", "status", "alerts", "--json", env=env)
    assert status.code == 0, status.err  # its cluster is down (never started here): said, not an error
    assert status.json()["policy"]["refused"] == refused and "does not answer" in status.json()["unreachable"][0]
    text = run_cli("job", "status", "alerts", env=env)
    assert text.code == 0 and "the scheduled drill skipped it at" in text.out and "streams unknown: " in text.out
    with pytest.raises(InputError, match="expected drill or tuning"):
        store.refuse("restart", "alerts", "x")
    time.sleep(0.01)
    store.start_drill("alerts", None, {})  # the drill ran after all: the refusal no longer stands
    assert store.policy("alerts")["refused"] == {} and store.refusals() == {}
    store.refuse("drill", "alerts", "x" * 5000)  # a long reason is cut, not refused by the column's check
    assert len(store.policy("alerts")["refused"]["drill"]["reason"]) == 2000
