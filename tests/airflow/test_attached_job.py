"""A streaming application written without ftops (tests/spark/existing_job.py: a stream-static join, an event-time
windowed aggregate, a ``foreachBatch`` sink, the master left to spark-submit) is submitted with ``ftops job submit``,
drilled by ``ftops drill job`` and by ``ftops_chaos_drill``, and passes with its exactly-once check held (read from
its own checkpoint); killed with its driver, it is started again from its checkpoint with its stored submit line.
Real Spark (a standalone cluster, one core for the job so a lost domain takes all of it), PostgreSQL and Airflow
(``dag.test()``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ft_core.store.history import HistoryStore
from spark_jobs.cluster.seam import cluster_of
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import ROOT, run_cli, test_port
from tests.store_fixtures import fresh_connection, pg_server  # noqa: F401 - fixture

BASE = test_port(15700)
JOB = "clicks"
attached_submit_doc: dict = {}  # what `ftops job submit --json` printed (the fixture's)
APP = ROOT / "tests" / "spark" / "existing_job.py"


@pytest.fixture(scope="module")
def attached(pg_server, tmp_path_factory):
    import os

    from spark_jobs.cluster.standalone import ClusterConfig, cluster_down, cluster_up
    from spark_jobs.runtime.job_streams import parse_deployment
    from spark_jobs.runtime.launch import stop_run

    root = tmp_path_factory.mktemp("attached")
    config = ClusterConfig(state_dir=root / "spark", primary_domains=(("rack-a", 1), ("rack-b", 1)), standby_workers=0,
                           worker_timeout_s=5, primary_port=BASE + 77, primary_ui=BASE + 90, standby_port=BASE + 78,
                           standby_ui=BASE + 91, worker_port_base=BASE + 100, worker_ui_base=BASE + 200)
    cluster_up(config)
    conn = fresh_connection(pg_server.url())
    os.environ["FTOPS_DATABASE_URL"] = os.environ["AIRFLOW_CONN_FTOPS_DB"] = pg_server.url()
    dep = None
    try:
        res = run_cli("job", "submit", JOB, "--master", f"spark://127.0.0.1:{BASE + 77}", "--master-ui",
                      f"http://127.0.0.1:{BASE + 90}", "--state-dir", root / "spark", "--conf", "spark.cores.max=1",
                      "--conf", f"spark.ui.port={BASE + 40}", "--root", root / JOB, "--test-job", "--max-recovery-s", "300",
                      "--json", "--", APP, "--out", root / "out", "--checkpoint", root / "checkpoint")
        assert res.code == 0, res.err + res.out
        attached_submit_doc.update(res.json())
        store = HistoryStore(conn)
        dep = parse_deployment(store.job(JOB)["deployment"], JOB)
        wait_for(lambda: _rows(store) >= 5 or None, timeout_s=300, interval_s=2, what="five micro-batches in the store")
        yield dep, store, root
    finally:
        os.environ.pop("FTOPS_DATABASE_URL", None)
        os.environ.pop("AIRFLOW_CONN_FTOPS_DB", None)
        if dep is not None and (dep.control / "_submit.json").exists():
            stop_run(dep.control)
        cluster_down(root / "spark")
        conn.close()


def _rows(store) -> int:
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM ftops_stream_progress WHERE stream = %s", (f"ftops-{JOB}-clicks",))
        return cur.fetchone()[0]


def test_submit_registers_an_attached_job_that_reports_its_progress_and_its_queries(attached):
    dep, store, root = attached
    job = store.job(JOB)
    assert job["workload"] == "attached" and dep.kind == "attached" and dep.app == str(APP)
    assert dep.app_args == ["--out", str(root / "out"), "--checkpoint", str(root / "checkpoint")]
    assert attached_submit_doc["topology"]["topology_id"] is not None
    run = json.loads((dep.control / "_run.json").read_text())
    assert run["app_id"].startswith("app-") and run["master"] == f"spark://127.0.0.1:{BASE + 77}"
    # its topology, read from its driver's UI once its first micro-batch ran: what planning starts from
    topology = store.latest_topology(JOB)
    assert topology is not None and len(topology["operators"]) >= 2
    started = [json.loads(line) for line in (dep.control / "_queries.jsonl").read_text().splitlines()]
    assert started[0]["event"] == "started" and started[0]["name"] == "clicks"
    assert Path(started[0]["checkpoint"]).resolve() == (root / "checkpoint").resolve()
    again = run_cli("job", "submit", JOB, "--master", f"spark://127.0.0.1:{BASE + 77}", "--json", "--", APP, "--out",
                    root / "out", "--checkpoint", root / "checkpoint")
    assert again.code == 0 and again.json()["submitted"] is False  # it runs: not submitted twice
    status = run_cli("job", "status", JOB, "--json")
    assert status.code == 0 and status.json()["kind"] == "attached" and status.json()["running"]
    assert [s["name"] for s in status.json()["streams"]] == ["ftops-clicks-clicks"]
    states = run_cli("job", "fleet", "--json").json()["states"]  # from its query's stream, as the console's
    assert JOB in states["running"] + states["lagging"], states
    assert {j["job"]: j["kind"] for j in run_cli("job", "list", "--json").json()}[JOB] == "attached"
    assert run_cli("job", "start", JOB, "--json").json()["submitted"] is False  # it runs
    secret = run_cli("job", "submit", "other", "--conf", "spark.ssl.keyStorePassword=hunter2", "--", APP)
    assert secret.code == 2 and "--conf-env" in secret.err and "hunter2" not in secret.err


def test_a_command_drill_of_the_attached_job_passes_with_exactly_once_held(attached):
    dep, store, _ = attached
    before = cluster_of(dep).capacity()
    res = run_cli("drill", "job", JOB, "--replacement-delay-s", "5", "--timeout-s", "400", "--json", timeout=900)
    assert res.code == 0, res.err[-3000:] + res.out[-3000:]
    report = res.json()
    assert report["verdict"] == "passed", report["reasons"]
    checks = {c["name"]: c for c in report["hypothesis_after"]}
    assert checks["exactly once"]["held"] and checks["failure domains as before"]["held"]
    measured = report["measurements"]
    assert measured["exactly_once_held"] and measured["time_to_caught_up_s"] > 5 and measured["peak_lag_s"] > 5
    stored = store.drill_report(report["experiment_id"])
    assert stored["kind"] == "attached" and stored["exactly_once"]["ftops-clicks-clicks"]["failed"] == []
    assert stored["exactly_once"]["ftops-clicks-clicks"]["batches_audited"] >= 2
    assert cluster_of(dep).capacity() == before and store.open_faults(JOB) == []


def test_a_drill_that_kills_the_driver_restarts_the_job_from_its_checkpoint(attached):
    dep, store, _ = attached
    first_app = json.loads((dep.control / "_run.json").read_text())["app_id"]
    res = run_cli("drill", "job", JOB, "--kill-driver", "--replacement-delay-s", "5", "--timeout-s", "400", "--json",
                  timeout=900)
    assert res.code == 0, res.err[-3000:] + res.out[-3000:]
    report = res.json()
    assert report["verdict"] == "passed", report["reasons"]
    assert json.loads((dep.control / "_run.json").read_text())["app_id"] != first_app  # submitted again
    stored = store.drill_report(report["experiment_id"])
    audit = stored["exactly_once"]["ftops-clicks-clicks"]
    assert stored["exactly_once_held"] and audit["failed"] == []
    assert any(f["kind"] == "driver_killed" and f["closed_at"] for f in store.faults(JOB))


def test_the_chaos_drill_dag_drills_the_attached_job(attached):
    from airflow.dag_processing.dagbag import DagBag

    dep, store, _ = attached
    before = cluster_of(dep).capacity()
    run = DagBag(dag_folder=str(ROOT / "dags")).get_dag("ftops_chaos_drill").test(
        run_conf={"job": JOB, "replacement_delay_s": 5, "timeout_s": 400})
    assert run.state == "success"
    drill = store.drills(JOB)[-1]
    assert drill["dag_run_id"] == run.run_id and drill["status"] == "passed"
    assert store.drill_report(drill["drill_id"])["exactly_once_held"]
    assert cluster_of(dep).capacity() == before
