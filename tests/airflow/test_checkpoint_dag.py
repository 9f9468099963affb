"""ftops_checkpoint_tuning with ``dag.test()``: profiling copies of a user's job (examples/sensor_alerts.py, loaded
from its file: a stream-static join and a shuffle by another key) on real Spark at three candidate intervals (each
killed once and restarted from its checkpoint), Chiron's models and the recommended interval stored in the real
PostgreSQL history store. The run is a scheduled one (no ``job`` in its conf, issue 33): of the user's two jobs (no
sample job in the store), it tunes the one whose tuning schedule is due and leaves the other alone. The samples run
through the same pipeline API."""

from __future__ import annotations

import subprocess
import sys

import pendulum

from ft_core.fleet.schedules import Scheduled, due
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from spark_jobs.runtime.job_streams import JobDeployment
from tests.conftest import ROOT
from tests.live_jobs import repository_dag
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

EXAMPLE = ROOT / "examples" / "sensor_alerts.py"
PARAMS = ["rate=50", "window_s=2", "watermark_s=1", "spike_prob=0.05", "sensors_p=2", "sites_p=2"]
JOB = "alerts"
OTHER = "gauges"  # a second job of the user's, its tuning not due


def test_a_scheduled_tuning_profiles_three_intervals_of_the_due_job_and_stores_the_recommendation(tmp_path, pg_server,
                                                                                                 pg_conn, monkeypatch):
    from spark_jobs.cluster.standalone import local_masters

    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    pool = subprocess.run([sys.executable, "-m", "airflow", "pools", "set", "ftops_profiling", "1", "profiling copies"],
                          capture_output=True, text=True, timeout=120)
    assert pool.returncode == 0, pool.stderr
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    for name, schedule in ((JOB, "@daily"), (OTHER, "@monthly")):
        dep = JobDeployment(pipeline=str(EXAMPLE), root=str(tmp_path / name), params=PARAMS, **local_masters())
        store.register_job(JobSpec(name=name, workload=str(EXAMPLE), max_recovery_s=600, deployment=dep.model_dump()))
        store.set_policy(name, {"tuning_schedule": schedule}, "test")
    with pg_conn, pg_conn.cursor() as cur:  # alerts' set 26 hours ago: its daily schedule fired since; gauges' just now
        cur.execute("UPDATE ftops_job SET tuning_schedule_at = now() - interval '26 hours' WHERE name = %s", (JOB,))

    dag = repository_dag("ftops_checkpoint_tuning")
    # no job: the due ones (said explicitly: dag.test() keeps the last run's conf in the DAG object's Params)
    before = pendulum.now("UTC")
    run = dag.test(run_conf={"job": "", "intervals_s": "1,2,3", "failures": 1, "duration_s": 20})
    assert run.state == "success"

    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert states[("profile_interval", 0)] == "success" and ("profile_interval", 1) not in states  # one job due
    assert states[("validate_interval", 0)] == "success"
    assert states[("apply_interval", 0)] == "skipped"  # resubmit is off by default (and no lease was taken)
    assert store.lease(JOB) is None
    assert store.current_plan(OTHER, "checkpoint") is None and store.policy(OTHER)["last_tuning_started_at"] is None
    assert store.policy(JOB)["last_tuning_started_at"] is not None  # tuned now: not due again until tomorrow
    # judged at the tuning's start: a run crossing midnight UTC makes the @daily job due again, rightly
    assert [r.job for r in due([Scheduled(**r) for r in store.scheduled("tuning")], before.add(seconds=1))] == []
    assert {r["job"]: r["since"] for r in store.scheduled("tuning")}[JOB] >= before
    profile = store.latest_profile(JOB, "checkpoint")["doc"]
    assert [p["checkpoint_interval_ms"] for p in profile["profiles"]] == [1000, 2000, 3000]
    for entry in profile["profiles"]:
        [rep] = entry["repetitions"]
        assert rep["avg_latency_ms"] > 0 and rep["recovery_time_s"] > 0 and rep["max_ingress_rate"] > 0
    plan = store.current_plan(JOB, "checkpoint")
    assert 1000 <= plan["objective"] <= 3000 and store.plan(plan["plan_id"])["dag_run_id"] == run.run_id
    assert set(plan["payload"]["r2"]) >= {"latency", "recovery"}
    [validation] = store.checkpoint_validations(JOB)
    assert validation["plan_id"] == plan["plan_id"] and validation["measured_recovery_s"] > 0
    assert validation["reason"]  # validated or not, it says why
