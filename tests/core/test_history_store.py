"""The PostgreSQL history store, for real: migrations, dedup, concurrency, a database restart."""

from __future__ import annotations

import threading

import pytest

from ft_core.errors import ExternalError, InputError
from ft_core.replication.planners import plan_replication
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
    # No two consecutive stored plans are identical, whatever the interleaving. Each writer changes its
    # plan once (4 -> 6), yet interleaved writers can flip the current plan back and forth: at most one
    # stored plan per write that differs from its predecessor (A4 A4 A6 B4 A6 B4 B6 B6 stores 6).
    assert all(a != b for a, b in zip(hashes, hashes[1:]))
    assert 2 <= len(hashes) <= 6


def test_database_restart_fails_clearly_then_recovers(pg_server, pg_conn):
    _store(pg_conn)  # a migrated store with a job, committed before the restart
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
    # the key=value form, which the operators hand to the drivers (HistoryStoreHook.dsn)
    assert redact("host=h user=u password=s3cret dbname=ftops") == "host=h user=u password=*** dbname=ftops"
    assert "s3cret" not in redact("password='s3 cret' host=h")


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


# -- jobs' deployments -------------------------------------------------------------------------------

DEPLOYMENT = {"workload": "topk", "root": "/srv/ftops/jobs/topk", "input": "/srv/ftops/jobs/topk/input",
              "params": {"rate": 200}, "trigger_s": 2.0}


def test_register_job_keeps_a_deployment_that_a_later_registration_omits(pg_conn):
    store = _store(pg_conn)  # registered without a deployment: the version-1 call still works
    assert store.job("topk")["deployment"] is None
    store.register_job(JobSpec(name="topk", workload="topk", replication_budget=4, deployment=DEPLOYMENT))
    store.register_job(JobSpec(name="topk", workload="topk", replication_budget=6))  # e.g. `ftops job register`
    job = store.job("topk")
    assert job["deployment"] == DEPLOYMENT and job["replication_budget"] == 6
    with pytest.raises(InputError, match="'nope' is not registered"):
        store.job("nope")


# -- drills ------------------------------------------------------------------------------------------

T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _report(accuracies: list[float], lost: int = 0, **extra) -> dict:
    """A drill report as spark_jobs.drills.documents.DrillReport dumps it (the fields the store reads, and others)."""
    return {"workload": "topk", "plan_tasks": ["O1[0]"], "predicted_output_fidelity": 0.5595,
            "tentative_accuracy": sum(accuracies) / len(accuracies) if accuracies else None,
            "tentative_accuracy_per_window": accuracies,
            "failure_window_starts_ms": [T0_MS + 2000 * i for i in range(len(accuracies))],
            "time_to_first_tentative_s": 3.5, "time_to_caught_up_s": 41.0, "lost_windows": lost,
            "duplicated_windows": 0, "output_equals_reference": lost == 0, "fail_domain": "rack-a",
            "elapsed_s": 90.2, **extra}


def _replication_plan(store, budget: int = 4) -> int:
    return store.save_plan("topk", "replication", **_plan_args(budget)).plan_id


def test_a_drill_stores_its_measurement_and_one_row_per_failure_window(pg_conn):
    store = _store(pg_conn)
    plan_id = _replication_plan(store, 8)
    drill_id = store.start_drill("topk", plan_id, {"failure_domain": "rack-a", "kill_driver": False}, "manual__1")
    assert store.drill_status(drill_id) == "running"
    [running] = store.drills("topk")
    assert running["predicted_output_fidelity"] == pytest.approx(0.5595, abs=1e-4)  # from the plan, before measuring
    store.finish_drill(drill_id, _report([0.5, 0.75, 1.0]), "passed")
    [drill] = store.drills("topk")
    assert drill["status"] == "passed" and drill["finished_at"] >= drill["started_at"]
    assert drill["tentative_accuracy"] == pytest.approx(0.75) and drill["lost_windows"] == 0
    assert drill["output_equals_reference"] is True and drill["time_to_caught_up_s"] == 41.0
    assert [w["accuracy"] for w in drill["windows"]] == [0.5, 0.75, 1.0]
    assert drill["windows"][1]["window_start"].timestamp() * 1000 == T0_MS + 2000
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("SELECT prediction_error, report->>'fail_domain' FROM ftops_drill_results JOIN ftops_drill USING (drill_id)")
        error, domain = cur.fetchone()
    assert error == pytest.approx(abs(0.75 - 0.5595), abs=1e-4) and domain == "rack-a"


def test_closing_a_measured_drill_as_failed_keeps_its_measurement(pg_conn):
    store = _store(pg_conn)
    drill_id = store.start_drill("topk", _replication_plan(store), {}, "manual__2")
    store.finish_drill(drill_id, _report([0.25, 0.5], lost=2), "failed")
    store.finish_drill(drill_id, {"error": "a step of the drill failed; see the DAG run"}, "failed")
    [drill] = store.drills("topk")
    assert drill["lost_windows"] == 2 and len(drill["windows"]) == 2 and drill["tentative_accuracy"] == 0.375
    assert drill["error"] == "a step of the drill failed; see the DAG run"


def test_a_retried_drill_start_returns_the_same_drill_and_a_cleared_run_reopens_it(pg_conn):
    store = _store(pg_conn)
    plan_id = _replication_plan(store)
    first = store.start_drill("topk", plan_id, {"failure_domain": "rack-a"}, "manual__3")
    assert store.start_drill("topk", plan_id, {"failure_domain": "rack-a"}, "manual__3") == first
    store.finish_drill(first, _report([0.5]), "passed")
    again = store.start_drill("topk", plan_id, {"failure_domain": "rack-b"}, "manual__3")  # the DAG run was cleared
    [drill] = store.drills("topk")
    assert again == first and drill["status"] == "running" and drill["windows"] == []
    assert drill["tentative_accuracy"] is None and drill["params"] == {"failure_domain": "rack-b"}
    other = store.start_drill("topk", plan_id, {}, "manual__4")
    outside_airflow = [store.start_drill("topk", plan_id, {}, None) for _ in range(2)]
    assert len({first, other, *outside_airflow}) == 4


@pytest.mark.parametrize("report, field", [
    ({"failure_window_starts_ms": [1, 2], "tentative_accuracy_per_window": [0.5]}, "one accuracy per failure window"),
    ({"failure_window_starts_ms": [1, 1], "tentative_accuracy_per_window": [0.5, 0.5]}, "repeats a window start"),
    ({"lost_windows": -1}, "lost_windows"),
    ({"tentative_accuracy": 1.5}, "tentative_accuracy"),
])
def test_a_malformed_drill_report_is_refused_and_stores_nothing(pg_conn, report, field):
    store = _store(pg_conn)
    drill_id = store.start_drill("topk", None, {}, "manual__5")
    with pytest.raises(InputError, match=field):
        store.finish_drill(drill_id, report, "passed")
    assert store.drill_status(drill_id) == "running"
    with pytest.raises(InputError, match="status 'ok'"):
        store.finish_drill(drill_id, {}, "ok")
    with pytest.raises(InputError, match="drill 999 does not exist"):
        store.finish_drill(999, {}, "failed")


def test_a_drill_against_another_jobs_plan_is_refused(pg_conn):
    store = _store(pg_conn)
    plan_id = _replication_plan(store)
    store.register_job(JobSpec(name="other", workload="topk"))
    with pytest.raises(InputError, match=f"plan {plan_id} is not a plan of job 'other'"):
        store.start_drill("other", plan_id, {}, "manual__6")


# -- recovery runs -----------------------------------------------------------------------------------

FAILURE = {"domain": "rack-a", "time": 1_767_225_600.0, "units": ["u1", "u2", "u3"]}


def _stage(store, run_id, k, status, **times):
    return store.record_stage(run_id, k, 1.0 * k, [f"u{k}"], {f"u{k}": f"worker-{k}"}, status, **times)


def test_a_resumed_recovery_run_gets_its_id_and_its_done_stages_back(pg_conn):
    store = _store(pg_conn)
    run_id = store.start_recovery_run("topk", None, FAILURE, "manual__r1")
    for k in (1, 2, 3):
        _stage(store, run_id, k, "pending")
    _stage(store, run_id, 1, "waiting")
    _stage(store, run_id, 1, "started", started_at=FAILURE["time"] + 5)
    _stage(store, run_id, 1, "done", finished_at=FAILURE["time"] + 9.5)
    # the scheduler restarts; the DAG run resumes: planning runs again and records every stage pending again
    assert store.start_recovery_run("topk", None, FAILURE, "manual__r1") == run_id
    for k in (1, 2, 3):
        _stage(store, run_id, k, "pending")
    stages = store.recovery_stages(run_id)
    assert [s["status"] for s in stages] == ["done", "pending", "pending"]
    assert stages[0]["finished_at"].timestamp() - stages[0]["started_at"].timestamp() == pytest.approx(4.5)
    assert stages[0]["waiting_at"] is not None and stages[0]["partitions"] == ["u1"]
    store.finish_recovery_run(run_id, "failed")
    assert store.start_recovery_run("topk", None, FAILURE, "manual__r1") == run_id  # a cleared, failed run resumes
    [run] = store.recovery_runs("topk")
    assert run["status"] == "running" and run["finished_at"] is None and run["failure"] == FAILURE
    assert store.start_recovery_run("topk", None, FAILURE, "manual__r2") != run_id


def test_a_stage_only_moves_forward_and_a_failed_stage_can_be_retried(pg_conn):
    store = _store(pg_conn)
    run_id = store.start_recovery_run("topk", None, FAILURE, "manual__r3")
    assert _stage(store, run_id, 1, "started")["started_at"] is not None
    assert _stage(store, run_id, 1, "waiting")["status"] == "started"  # a late wait does not undo the start
    failed = _stage(store, run_id, 1, "failed")
    assert failed["status"] == "failed" and failed["finished_at"] is not None
    retried = _stage(store, run_id, 1, "waiting")
    assert retried["status"] == "waiting" and retried["started_at"] is None and retried["finished_at"] is None
    done = _stage(store, run_id, 1, "done", started_at=FAILURE["time"] + 1, finished_at=FAILURE["time"] + 2)
    assert done["status"] == "done" and done["started_at"].timestamp() == FAILURE["time"] + 1
    assert _stage(store, run_id, 1, "failed")["status"] == "done"  # done is final
    with pytest.raises(InputError, match="stage 0: stage_no"):
        _stage(store, run_id, 0, "pending")
    with pytest.raises(InputError, match="status"):
        _stage(store, run_id, 2, "running")
    with pytest.raises(InputError, match="recovery run 999 does not exist"):
        _stage(store, 999, 1, "pending")


def test_stages_that_began_and_never_finished_are_failed_when_the_run_ends(pg_conn):
    store = _store(pg_conn)
    run_id = store.start_recovery_run("topk", None, FAILURE, "manual__r4")
    for k, status in ((1, "done"), (2, "started"), (3, "waiting"), (4, "pending")):
        _stage(store, run_id, k, status)
    assert store.fail_unfinished_stages(run_id) == [2, 3]
    stages = store.recovery_stages(run_id)
    assert [s["status"] for s in stages] == ["done", "failed", "failed", "pending"]
    assert all(s["finished_at"] is not None for s in stages[1:3]) and stages[1]["partitions"] == ["u2"]
    assert store.fail_unfinished_stages(run_id) == []  # idempotent


def test_query_recovery_times_are_upserted_and_never_unrecovered(pg_conn):
    store = _store(pg_conn)
    run_id = store.start_recovery_run("topk", None, FAILURE, "manual__r4")
    store.record_query_recovery(run_id, "Q1", 2.0, 12.5)
    store.record_query_recovery(run_id, "Q2", 1.0, None)
    store.record_query_recovery(run_id, "Q1", 2.0, None)  # a retried finish that could not measure it again
    store.record_query_recovery(run_id, "Q2", 1.0, 30.0)
    store.finish_recovery_run(run_id, "succeeded")
    [run] = store.recovery_runs("topk")
    assert run["queries"] == [{"query": "Q1", "priority": 2.0, "recovered_s": 12.5},
                              {"query": "Q2", "priority": 1.0, "recovered_s": 30.0}]
    assert run["status"] == "succeeded" and run["finished_at"] is not None
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("SELECT query, recovered_s FROM ftops_recovery_timeline WHERE run_id = %s ORDER BY query", (run_id,))
        assert cur.fetchall() == [("Q1", 12.5), ("Q2", 30.0)]


def test_two_jobs_may_share_an_airflow_run_id(pg_conn):
    store = _store(pg_conn)
    store.register_job(JobSpec(name="other", workload="topk"))
    a = store.start_recovery_run("topk", None, FAILURE, "manual__same")
    b = store.start_recovery_run("other", None, FAILURE, "manual__same")
    assert a != b


def _concurrently(pg_server, work, n: int = 2) -> list:
    """Run ``work(store)`` in ``n`` threads, each on its own connection, released together; their results."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def run(i: int) -> None:
        conn = connect(pg_server.url())
        try:
            barrier.wait(timeout=30)
            results[i] = work(HistoryStore(conn), i)
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def test_two_writers_of_one_dag_run_open_one_drill_and_one_recovery_run(pg_server, pg_conn):
    store = _store(pg_conn)
    plan_id = _replication_plan(store)
    pg_conn.commit()
    drills = _concurrently(pg_server, lambda s, i: [s.start_drill("topk", plan_id, {}, f"manual__d{k}") for k in range(5)])
    runs = _concurrently(pg_server, lambda s, i: [s.start_recovery_run("topk", None, FAILURE, f"manual__r{k}") for k in range(5)])
    assert drills[0] == drills[1] and len(set(drills[0])) == 5
    assert runs[0] == runs[1] and len(set(runs[0])) == 5
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("SELECT (SELECT count(*) FROM ftops_drill), (SELECT count(*) FROM ftops_recovery_run)")
        assert cur.fetchone() == (5, 5)


def test_concurrent_stage_writers_never_move_a_stage_back(pg_server, pg_conn):
    store = _store(pg_conn)
    run_id = store.start_recovery_run("topk", None, FAILURE, "manual__r5")
    pg_conn.commit()

    through = threading.Event()

    def work(s: HistoryStore, i: int) -> None:
        # writer 0 runs the stages through; writer 1 is a zombie planning task re-recording them pending
        # all along, and once more after the last stage is done
        if i == 0:
            for k in range(1, 6):
                for status in ("waiting", "started", "done"):
                    _stage(s, run_id, k, status)
            through.set()
            return
        while not through.is_set():
            for k in range(1, 6):
                _stage(s, run_id, k, "pending")
        for k in range(1, 6):
            _stage(s, run_id, k, "pending")

    _concurrently(pg_server, work)
    stages = store.recovery_stages(run_id)
    assert [s["status"] for s in stages] == ["done"] * 5
    assert all(s["waiting_at"] <= s["started_at"] <= s["finished_at"] for s in stages)


# -- profiles, applied plans, events -------------------------------------------------------------------

def test_profiles_are_not_stored_twice_by_a_retry_and_the_latest_is_read_back(pg_conn):
    store = _store(pg_conn)
    a = store.save_profile("topk", "rates", {"rates": {"O1[0]": 10.0}}, "scheduled__1")
    assert store.save_profile("topk", "rates", {"rates": {"O1[0]": 10.0}}, "scheduled__1") == a
    b = store.save_profile("topk", "rates", {"rates": {"O1[0]": 12.0}}, "scheduled__1")  # measured again: kept
    c = store.save_profile("topk", "checkpoint", {"interval_s": 30}, "scheduled__1")
    assert len({a, b, c}) == 3
    assert store.latest_profile("topk", "rates")["doc"] == {"rates": {"O1[0]": 12.0}}
    assert store.latest_profile("topk", "checkpoint")["profile_id"] == c
    with pytest.raises(InputError, match="profile kind 'cpu'"):
        store.save_profile("topk", "cpu", {}, None)


def test_applied_plans_are_recorded_once_and_stopped(pg_conn):
    store = _store(pg_conn)
    old, new = _replication_plan(store, 4), _replication_plan(store, 8)
    assert store.running_replica_plan("topk") is None
    a = store.record_applied_plan(old, "topk", "replica", None, "spark://127.0.0.1:7078")
    assert store.running_replica_plan("topk")["plan_id"] == old
    assert store.record_applied_plan(old, "topk", "replica", "app-1", None) == a  # the retry learned the app id
    b = store.record_applied_plan(new, "topk", "replica", "app-2", "spark://127.0.0.1:7078")
    assert store.stop_applied_plan("topk", "replica", old) == 1
    assert store.stop_applied_plan("topk", "replica", old) == 0
    assert store.running_replica_plan("topk")["plan_id"] == new  # the stopped one is no longer what runs
    applied = store.applied_plans("topk")
    assert [(x["applied_id"], x["spark_app_id"], x["stopped_at"] is None) for x in applied] == [(b, "app-2", True),
                                                                                                (a, "app-1", False)]
    assert applied[0]["objective"] == pytest.approx(0.5595, abs=1e-4) and applied[1]["master_url"] == "spark://127.0.0.1:7078"
    units = {store.record_applied_plan(new, "topk", "unit", f"app-u{k}") for k in range(3)}
    assert len(units) == 3  # one plan, three unit applications
    with pytest.raises(InputError, match="role 'driver'"):
        store.record_applied_plan(new, "topk", "driver")


def test_events_are_logged_by_job_and_by_the_writes(pg_conn):
    store = _store(pg_conn)
    plan_id = _replication_plan(store)
    drill_id = store.start_drill("topk", plan_id, {}, "manual__e")
    event_id = store.log_event("topk", "replica_resubmitted", {"plan_id": plan_id, "app": "app-9"})
    store.log_event(None, "watcher_started")
    events = store.events("topk")
    assert events[0]["event_id"] == event_id and events[0]["payload"] == {"plan_id": plan_id, "app": "app-9"}
    assert [e["kind"] for e in events[1:]] == ["drill_started", "plan_stored"]
    assert events[1]["payload"]["drill_id"] == drill_id


def test_a_checkpoint_validation_is_stored_beside_its_plan_once_per_dag_run(pg_conn):
    from ft_core.store.checkpoint_validations import CheckpointValidation

    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name="topk", workload="topk"))
    store.register_job(JobSpec(name="other", workload="topk"))
    plan = store.save_plan("topk", "checkpoint", algorithm="chiron eq2", objective=2000.0, optimal=False,
                           payload={"predicted_recovery_s": 38.6}, input_hash="h").plan_id
    failed = CheckpointValidation(interval_ms=2000, variant="eq2", predicted_recovery_s=38.6, measured_recovery_s=20.0,
                                  max_recovery_error=0.2, validated=False, reason="not validated: error 93.0% > 20%")
    first = store.save_checkpoint_validation("topk", plan, failed, "run-1")
    again = store.save_checkpoint_validation("topk", plan, failed.model_copy(update={"measured_recovery_s": 21.0}), "run-1")
    assert first == again  # a retried task replaces its row
    ok = failed.model_copy(update={"measured_recovery_s": 34.4, "validated": True, "reason": "validated"})
    store.save_checkpoint_validation("topk", plan, ok, "run-2")
    store.record_applied_plan(plan, "topk", "primary")
    latest, older = store.checkpoint_validations("topk")
    assert (latest["validated"], latest["reason"], latest["applied"]) == (True, "validated", True)
    assert latest["recovery_error"] == pytest.approx(abs(38.6 - 34.4) / 34.4)
    assert (older["measured_recovery_s"], older["validated"]) == (21.0, False)
    assert [e["kind"] for e in store.events("topk") if e["kind"] == "checkpoint_validated"] == ["checkpoint_validated"] * 3
    with pytest.raises(InputError, match="is not a plan of job 'other'"):
        store.save_checkpoint_validation("other", plan, ok, "run-3")
    assert store.checkpoint_validations("other") == []
