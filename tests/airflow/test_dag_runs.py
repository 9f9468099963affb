"""The ftops DAGs run for real with ``dag.test()`` on a user's own job: the example pipeline
(examples/sensor_alerts.py: a stream-static join, a shuffle by another key, two output tasks) registered
and started with the commands of the README's "your own job" section (``ftops job register --pipeline
FILE``, ``ftops job start``), on a local Spark standalone cluster, with the real PostgreSQL history
store, SparkSubmitOperator resubmissions and deferred waits (``dag.test()`` runs their triggers in
line). One module-scoped job serves both DAGs, in order: ``ftops_profile_and_plan`` starts the replica
the drill then relies on."""

from __future__ import annotations

import json
import threading

import pytest

from ft_core.store.connection import connect
from ft_core.store.history import HistoryStore
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import ROOT, run_cli, test_port
from tests.store_fixtures import pg_server  # noqa: F401 - fixture

BASE = test_port(22000)  # the test cluster's ports (a developer's stack uses 7077/8090)
EXAMPLE = ROOT / "examples" / "sensor_alerts.py"
PARAMS = ["rate=50", "window_s=2", "watermark_s=1", "spike_prob=0.05", "sensors_p=2", "sites_p=2"]
JOB = "alerts"


def _dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(ROOT / "dags")).get_dag(dag_id)


@pytest.fixture(scope="module")
def live_job(pg_server, tmp_path_factory, monkeypatch_module):
    """The example job running: cluster (rack-a, rack-b, standby), its seeded input fed in real time,
    registered and started with the CLI as a user would."""
    from ftops_provider.local_stack import stack_connections
    from spark_jobs.cluster.standalone import ClusterConfig, cluster_down, cluster_up
    from spark_jobs.pipeline.loading import load_workload
    from spark_jobs.pipeline.sample_input import run_generator
    from spark_jobs.runtime.job_streams import parse_deployment

    for name, value in stack_connections(pg_server.url(), (BASE + 77, BASE + 90), (BASE + 78, BASE + 91)).items():
        monkeypatch_module.setenv(name, value)
    root = tmp_path_factory.mktemp("job")
    state = root / "spark"
    cluster_up(ClusterConfig(state_dir=state, primary_domains=(("rack-a", 1), ("rack-b", 1)), standby_workers=1,
                             worker_timeout_s=5, primary_port=BASE + 77, primary_ui=BASE + 90, standby_port=BASE + 78,
                             standby_ui=BASE + 91, worker_port_base=BASE + 100, worker_ui_base=BASE + 200))
    conn = connect(pg_server.url())
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    conn.autocommit = False
    env = {"FTOPS_DATABASE_URL": pg_server.url()}
    params = [a for p in PARAMS for a in ("--param", p)]
    res = run_cli("job", "register", "--name", JOB, "--pipeline", EXAMPLE, "--input", root / "input", "--root", root / JOB,
                  "--master", f"spark://127.0.0.1:{BASE + 77}", "--master-ui", f"http://127.0.0.1:{BASE + 90}",
                  "--standby-master", f"spark://127.0.0.1:{BASE + 78}", "--standby-ui", f"http://127.0.0.1:{BASE + 91}",
                  "--cluster-state", state, "--trigger-s", "1", "--budget", "3", "--max-recovery-s", "300", *params, env=env)
    assert res.code == 0, res.err
    store = HistoryStore(conn)
    dep = parse_deployment(store.job(JOB)["deployment"], JOB)
    stop = threading.Event()
    workload = load_workload(str(EXAMPLE), PARAMS)
    feed = threading.Thread(target=run_generator, args=(workload, dep.input), kwargs={"stop": stop}, daemon=True)
    feed.start()
    try:
        res = run_cli("job", "start", JOB, env=env)
        assert res.code == 0, res.err
        yield dep, store
    finally:
        stop.set()
        feed.join(timeout=30)
        cluster_down(state)
        conn.close()


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _all(ui: str) -> list[dict]:
    from spark_jobs.cluster.web_ui import master_state

    return master_state(ui)["activeapps"]


def test_profile_and_plan_profiles_plans_and_starts_the_replica_once(live_job):
    from spark_jobs.runtime.launch import stop_run

    dep, store = live_job
    # Let the primary report some micro-batches first (the profile measures them).
    metrics = dep.primary_output / "_metrics" / "metrics.jsonl"
    wait_for(lambda: metrics.exists() and len(metrics.read_text().splitlines()) >= 3, timeout_s=300, interval_s=2,
             what="three micro-batches of the primary's metrics")
    run = _dag("ftops_profile_and_plan").test()
    assert run.state == "success"

    profile = store.latest_profile(JOB, "rates")
    assert profile["doc"]["source"].startswith("measured over")
    assert sum(profile["doc"]["rates"].values()) > 0
    plan = store.current_plan(JOB, "replication")
    # 6 tasks (enrich x2 -> peaks x2 -> alerts x2, a full stream): 3 replicas make one whole path, a positive OF
    assert plan["objective"] > 0 and len(plan["payload"]["tasks"]) == 3
    what_if = store.plans(JOB, "recovery")
    assert {p["payload"]["domain"] for p in what_if} == {"rack-a", "rack-b"}
    replica = f"ftops-{JOB}-replica-p{plan['plan_id']}"
    assert {a["name"]: a["state"] for a in _all(dep.standby_ui)}.get(replica) == "RUNNING"
    applied = [a for a in store.applied_plans(JOB) if a["role"] == "replica"]
    assert [(a["plan_id"], a["stopped_at"]) for a in applied] == [(plan["plan_id"], None)]

    again = _dag("ftops_profile_and_plan").test()  # same plan: nothing is resubmitted
    assert again.state == "success"
    assert [a["name"] for a in _all(dep.standby_ui)].count(replica) == 1
    assert len([a for a in store.applied_plans(JOB) if a["role"] == "replica"]) == 1

    # The replica stops outside Airflow (a stack restart, an operator): the next run notices and resubmits
    # it from its checkpoint, and the record of the stopped application is closed.
    assert stop_run(dep.replica_output(plan["plan_id"]))
    assert _dag("ftops_profile_and_plan").test().state == "success"
    current = store.current_plan(JOB, "replication")  # may be a newer plan, measured on newer rates
    assert {a["name"]: a["state"] for a in _all(dep.standby_ui)}.get(f"ftops-{JOB}-replica-p{current['plan_id']}") == "RUNNING"
    records = [a for a in store.applied_plans(JOB) if a["role"] == "replica"]
    assert sorted(a["stopped_at"] is None for a in records) == [False, True]


def test_chaos_drill_kills_the_primary_domain_and_records_the_measurements(live_job, tmp_path):
    dep, store = live_job
    # a fault profile too: two pauses of the recovered primary's executor while it catches up
    profile = tmp_path / "pauses.json"
    profile.write_text(json.dumps({"name": "two-pauses", "operators": {"executor": {"instances": [0], "slowdown": {
        "at_s": [1.0, 4.0], "magnitude_ms": {"mean": 500, "stddev": 0}}}}}))
    run = _dag("ftops_chaos_drill").test(run_conf={"job": JOB, "failure_domain": "auto", "replacement_delay_s": 5,
                                                   "timeout_s": 400, "fault_profile": str(profile), "fault_duration_s": 6})
    assert run.state == "success"
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SELECT report->'faults' FROM ftops_drill ORDER BY drill_id DESC LIMIT 1")
        faults = cur.fetchone()[0]
    assert faults["profile"] == "two-pauses" and faults["applied"] == {"slowdown": 2} and faults["skipped"] == 0
    assert sum(faults["paused_s"].values()) == pytest.approx(1.0, abs=0.3)
    drill = store.drills(JOB)[-1]
    assert drill["status"] == "passed"
    assert drill["predicted_output_fidelity"] > 0
    assert drill["output_equals_reference"] and drill["lost_windows"] == 0 and drill["duplicated_windows"] == 0
    assert drill["time_to_caught_up_s"] > 5  # after the replacement worker joined
    assert drill["time_to_first_tentative_s"] is not None
    assert drill["params"]["failure_domain"] == "auto" and drill["dag_run_id"] == run.run_id
    assert len(drill["windows"]) >= 1 and all(0 <= w["accuracy"] <= 1 for w in drill["windows"])
