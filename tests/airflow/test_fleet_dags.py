"""Scheduled runs operate the fleet (issue 33, items 2 and 4), with ``dag.test()`` on the real PostgreSQL history
store, in an Airflow whose store holds only a user's jobs (no sample job): a run without ``job`` (as the scheduler
starts it) operates the due jobs, each in its own mapped task group, and succeeds doing nothing when none is due;
at most ``[core] max_map_length`` jobs per run, the rest in the next runs. The real work of a scheduled run is
tested beside: the drills of two due jobs sharing a cluster in ``test_fleet_on_spark.py``, the tuning of a due job in
``test_checkpoint_dag.py``."""

from __future__ import annotations

import pendulum
import pytest

from ft_core.fleet.schedules import Scheduled, due
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from tests.conftest import ROOT, run_cli
from tests.live_jobs import EXAMPLE, repository_dag
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


# What a scheduled run gets: no job. Said explicitly, because dag.test() runs every task in this process with one DAG
# object, whose Params keep the values of the last run's conf (a run the scheduler starts has its own).
SCHEDULED = {"job": ""}


@pytest.fixture
def store(pg_server, pg_conn, monkeypatch) -> HistoryStore:
    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    upgrade(pg_conn)
    return HistoryStore(pg_conn)


def _register_inline_dag(dag):
    """``dag.test()`` runs only serialized DAGs: a DAG defined here is synced to the metadata database first."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    DagBundlesManager().sync_bundles_to_db()
    bag = DagBag(dag_folder="/nonexistent", collect_dags=False)
    bag.bag_dag(dag)
    sync_bag_to_db(bag, "dags-folder", None)
    return dag


def test_in_a_mapped_task_group_a_pull_without_map_indexes_returns_every_jobs_value_and_pulled_the_same_jobs():
    """Why every step of the fleet DAGs pulls with ``map_indexes=ti.map_index`` (ftops_provider.operators.fleet.pulled):
    in Airflow 3.3 ``ti.xcom_pull(task_ids=...)`` inside a mapped task group returns the values of all map indexes."""
    from airflow.sdk import DAG, task, task_group

    with DAG("ftops_test_mapped_group_xcom", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
             catchup=False) as dag:
        @task
        def jobs() -> list[str]:
            return ["a", "b", "c"]

        @task_group(group_id="per_job", prefix_group_id=False)
        def per_job(job: str):
            @task
            def first(job: str, ti=None) -> dict:
                return {"job": job, "map_index": ti.map_index}

            @task
            def second(job: str, ti=None) -> dict:
                from ftops_provider.operators.fleet import pulled

                return {"job": job, "plain": ti.xcom_pull(task_ids="first"), "pulled": pulled(ti, "first")}

            first(job) >> second(job)

        per_job.expand(job=jobs())

    run = _register_inline_dag(dag).test()
    assert run.state == "success"
    seconds = {ti.map_index: ti for ti in run.get_task_instances() if ti.task_id == "second"}
    assert sorted(seconds) == [0, 1, 2]
    for index, ti in seconds.items():
        got = ti.xcom_pull(task_ids="second", map_indexes=index)
        assert got["pulled"] == {"job": got["job"], "map_index": index}
        assert got["plain"] == [{"job": j, "map_index": i} for i, j in enumerate("abc")]  # every job's, not its own


def _users_jobs(store: HistoryStore, url: str) -> None:
    """A user's jobs, none of them a sample: a plan-only one and a runnable one, neither with a schedule."""
    res = run_cli("job", "register", "--name", "orders-plan", "--topology", ROOT / "ft_core" / "samples" / "q2-incidents.json",
                  env={"FTOPS_DATABASE_URL": url})
    assert res.code == 0, res.err
    store.register_job(JobSpec(name="payments", workload=str(EXAMPLE), test_job=True,
                               deployment={"pipeline": str(EXAMPLE), "root": "/nonexistent/payments"}))


def test_scheduled_runs_with_nothing_due_succeed_doing_nothing(store, pg_server):
    _users_jobs(store, pg_server.url())
    assert {j["name"] for j in store.jobs()} == {"orders-plan", "payments"}  # no topk, smartcity, incidents
    for dag_id, step in (("ftops_chaos_drill", "preflight"), ("ftops_checkpoint_tuning", "profile_interval")):
        run = repository_dag(dag_id).test(run_conf=SCHEDULED)
        assert run.state == "success", dag_id
        states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
        assert states[("due_jobs", -1)] == "success"
        assert [s for (t, _), s in states.items() if t == step] in ([], ["skipped"]), states  # mapped over no job
    assert store.drills("payments") == [] and store.lease("payments") is None
    assert store.policy("payments")["last_tuning_started_at"] is None


def test_a_manual_run_names_a_job_that_must_be_registered(store, pg_server):
    _users_jobs(store, pg_server.url())
    run = repository_dag("ftops_chaos_drill").test(run_conf={"job": "topk"})  # a sample's name, not this user's job
    assert run.state == "failed"
    assert {ti.task_id: ti.state for ti in run.get_task_instances() if ti.map_index == -1}["due_jobs"] == "failed"


def _synthetic_due_jobs(store: HistoryStore, n: int) -> list[str]:
    names = [f"job-{i:02d}" for i in range(n)]
    for name in names:
        store.register_job(JobSpec(name=name, workload=str(EXAMPLE), test_job=True,
                                   deployment={"pipeline": str(EXAMPLE), "root": f"/nonexistent/{name}"}))
        store.set_policy(name, {"drill_schedule": "@hourly"}, "test")
    with store.conn, store.conn.cursor() as cur:
        cur.execute("UPDATE ftops_job SET drill_schedule_at = now() - interval '3 hours'")
    return names


def test_more_due_jobs_than_max_map_length_are_all_operated_over_the_next_runs(store, monkeypatch):
    """Ten jobs due, ``[core] max_map_length`` 4: each run maps over 4 (a list of 10 would fail the run), the least
    recently picked first. Every job here is busy (another holder has its lease), so each drill is refused, the job
    stays due, and the next run takes the others: in three runs every job had its drill attempted, none twice
    before all once."""
    monkeypatch.setenv("AIRFLOW__CORE__MAX_MAP_LENGTH", "4")
    names = _synthetic_due_jobs(store, 10)
    for name in names:
        store.acquire_lease(name, "recovery", "command ftops units recover (pid 1 on elsewhere)", ttl_s=3600)
    taken = []
    for _ in range(3):
        run = repository_dag("ftops_chaos_drill").test(run_conf=SCHEDULED)
        assert run.state == "success"
        preflights = sorted(ti.map_index for ti in run.get_task_instances() if ti.task_id == "preflight")
        assert preflights == [0, 1, 2, 3]
        assert {ti.state for ti in run.get_task_instances() if ti.task_id in ("preflight", "finish")} == {"skipped"}
        with store.conn, store.conn.cursor() as cur:
            cur.execute("SELECT j.name FROM ftops_fleet_turn t JOIN ftops_job j USING (job_id) WHERE t.picked_by = %s "
                        "ORDER BY j.name", (f"dag run ftops_chaos_drill/{run.run_id}",))
            taken.append([r[0] for r in cur.fetchall()])
    assert taken[0] == names[:4] and taken[1] == names[4:8] and taken[2] == sorted(names[8:] + names[:2])
    assert all(store.drills(n) == [] for n in names)  # busy: refused, nothing started
    still = due([Scheduled(**r) for r in store.scheduled("drill")], pendulum.now("UTC"))
    assert [r.job for r in still][:4] == names[2:6]  # next: the least recently picked


def test_a_due_job_that_cannot_be_drilled_is_skipped_and_recorded_not_failing_the_scheduled_run(store, pg_server, tmp_path):
    """One stopped job must not fail every hourly run of the fleet: a scheduled run skips the due job whose drill
    cannot start (here its cluster is down), records why (``job status``/``job fleet``) and succeeds, touching
    nothing; the job stays due. A person's run naming that job fails, as it should."""
    from tests.store_fixtures import TEST_PORT
    from tests.live_jobs import registration

    env = {"FTOPS_DATABASE_URL": pg_server.url()}
    res = run_cli(*registration("payments", tmp_path, TEST_PORT + 300), "--drill-schedule", "@hourly", "--apply", "auto",
                  env=env)
    assert res.code == 0, res.err
    with store.conn, store.conn.cursor() as cur:
        cur.execute("UPDATE ftops_job SET drill_schedule_at = now() - interval '2 hours'")
    run = repository_dag("ftops_chaos_drill").test(run_conf=SCHEDULED)
    assert run.state == "success"
    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert states[("preflight", 0)] == "skipped", states
    assert {s for (t, _), s in states.items() if t != "due_jobs"} == {"skipped"}, states  # nothing ran, nothing failed
    refused = store.policy("payments")["refused"]
    assert list(refused) == ["drill"] and "no cluster state" in refused["drill"]["reason"], refused  # its cluster is down
    assert store.drills("payments") == [] and store.lease("payments") is None and store.open_faults() == []
    assert [r.job for r in due([Scheduled(**r) for r in store.scheduled("drill")], pendulum.now("UTC"))] == ["payments"]

    manual = repository_dag("ftops_chaos_drill").test(run_conf={"job": "payments"})
    assert manual.state == "failed"
    assert {ti.task_id: ti.state for ti in manual.get_task_instances()}["preflight"] == "failed"
