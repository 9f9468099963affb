"""A user's job running on a local Spark standalone cluster, as the README's "your own job" section starts it:
the cluster (rack-a, rack-b, standby), the example pipeline (examples/sensor_alerts.py) registered with
``ftops job register --pipeline FILE``, its seeded input fed in real time, its primary started with ``ftops job
start``. Shared by the end-to-end tests that drill, repair or halt such a job."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ft_core.store.history import HistoryStore
from tests.conftest import ROOT, run_cli
from tests.store_fixtures import fresh_connection

EXAMPLE = ROOT / "examples" / "sensor_alerts.py"
PARAMS = ["rate=50", "window_s=2", "watermark_s=1", "spike_prob=0.05", "sensors_p=2", "sites_p=2"]


def registration(job: str, root: Path, base: int, *extra: object) -> list:
    """The job's ``ftops job register`` arguments on the test cluster of ports ``base``... Its trigger is the
    default (2 s): the suite is CPU-bound on two cores, and a live job's micro-batches (driver and executors) were
    the largest share of it (with their executors, 43 % of the suite's CPU at a 1-s trigger, 2026-12-02)."""
    params = [a for p in PARAMS for a in ("--param", p)]
    return ["job", "register", "--name", job, "--pipeline", EXAMPLE, "--input", root / "input", "--root", root / job,
            "--master", f"spark://127.0.0.1:{base + 77}", "--master-ui", f"http://127.0.0.1:{base + 90}",
            "--standby-master", f"spark://127.0.0.1:{base + 78}", "--standby-ui", f"http://127.0.0.1:{base + 91}",
            "--state-dir", root / "spark", "--budget", "3", "--max-recovery-s", "300", *params, *extra]


@contextmanager
def running_job(job: str, root: Path, base: int, db_url: str) -> Iterator[tuple]:
    """The job running; yields (deployment, store on a fresh schema). Everything stops on exit."""
    from spark_jobs.cluster.standalone import ClusterConfig, cluster_down, cluster_up
    from spark_jobs.pipeline.loading import load_workload
    from spark_jobs.pipeline.sample_input import run_generator
    from spark_jobs.runtime.job_streams import parse_deployment

    config = ClusterConfig(state_dir=root / "spark", primary_domains=(("rack-a", 1), ("rack-b", 1)), standby_workers=1,
                           worker_timeout_s=5, primary_port=base + 77, primary_ui=base + 90, standby_port=base + 78,
                           standby_ui=base + 91, worker_port_base=base + 100, worker_ui_base=base + 200)
    cluster_up(config)
    conn = fresh_connection(db_url)
    env = {"FTOPS_DATABASE_URL": db_url}
    stop = threading.Event()
    feed = None
    try:
        res = run_cli(*registration(job, root, base), "--test-job", env=env)
        assert res.code == 0, res.err
        store = HistoryStore(conn)
        dep = parse_deployment(store.job(job)["deployment"], job)
        feed = threading.Thread(target=run_generator, args=(load_workload(str(EXAMPLE), PARAMS), dep.input),
                                kwargs={"stop": stop}, daemon=True)
        feed.start()
        res = run_cli("job", "start", job, env=env)
        assert res.code == 0, res.err
        yield dep, store
    finally:
        stop.set()
        if feed is not None:
            feed.join(timeout=30)
        cluster_down(root / "spark")
        conn.close()


@contextmanager
def two_running_jobs(first: str, second: str, root: Path, base: int, db_url: str) -> Iterator[tuple]:
    """``first`` running (:func:`running_job`), then ``second`` registered and started on the same cluster, fed the
    same input; yields (store, {job: deployment}). The block sees the store as ``FTOPS_DATABASE_URL`` and as
    Airflow's ``ftops_db`` connection (what ``dag.test()`` runs read)."""
    from spark_jobs.runtime.job_streams import parse_deployment

    saved = {k: os.environ.get(k) for k in ("FTOPS_DATABASE_URL", "AIRFLOW_CONN_FTOPS_DB")}
    os.environ["FTOPS_DATABASE_URL"] = os.environ["AIRFLOW_CONN_FTOPS_DB"] = db_url
    try:
        with running_job(first, root, base, db_url) as (dep, store):
            res = run_cli(*registration(second, root, base), "--test-job", env={"FTOPS_DATABASE_URL": db_url})
            assert res.code == 0, res.err
            res = run_cli("job", "start", second, env={"FTOPS_DATABASE_URL": db_url})
            assert res.code == 0, res.err
            yield store, {first: dep, second: parse_deployment(store.job(second)["deployment"], second)}
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def repository_dag(dag_id: str):
    """The DAG ``dag_id`` as Airflow finds it in the repository's dags folder, built afresh. The thin DAG files import
    the DAG object from ``ftops_provider.dags`` (a module Python keeps), and ``dag.test(run_conf=...)`` leaves that
    conf in the object's Params: an earlier test's ``max_duration_s`` of 30 aborted a later module's drill in the same
    worker (CI, 2026-11-29). The provider's module is reloaded, so every test starts from the DAG's own defaults."""
    import importlib
    import sys

    from airflow.dag_processing.dagbag import DagBag

    module = sys.modules.get(f"ftops_provider.dags.{dag_id}")
    if module is not None:
        importlib.reload(module)
    return DagBag(dag_folder=str(ROOT / "dags")).get_dag(dag_id)


@contextmanager
def standby_holder(dep, name: str) -> Iterator:
    """Another application holding the standby's one core while the block runs."""
    import signal
    import subprocess
    import sys

    from spark_jobs.cluster.web_ui import master_state
    from spark_jobs.runtime.waiting import wait_for

    code = ("import time; from pyspark.sql import SparkSession; "
            f"s = SparkSession.builder.master({dep.standby_master!r}).appName({name!r})"
            ".config('spark.cores.max', '1').config('spark.executor.memory', '512m').getOrCreate(); time.sleep(900)")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: any(a["name"] == name and a["state"] == "RUNNING" and a["cores"] == 1
                             for a in master_state(dep.standby_ui)["activeapps"]) or None,
                 timeout_s=120, interval_s=1, what=f"{name} to hold the standby's core")
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
