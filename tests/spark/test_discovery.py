"""``ftops profile topology`` and ``ftops job register --spark-ui`` on a real streaming job written without ftops.

One application for the module (tests/spark/plain_streaming_job.py, ``local[2]``, its UI on a free port of
16850-16949, moved like every test port): the fixture drives it through its three phases and asks
discovery in each, so the bad inputs are real states of a real application: not streaming yet, streaming with no completed
micro-batch, then running (rate source -> broadcast stream-static join -> windowed count, a shuffle).
The application's process group is stopped whatever happens.
"""

from __future__ import annotations

import ast
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ft_core.errors import FtopsError
from ft_core.store.connection import connect
from ft_core.store.history import HistoryStore
from spark_jobs.discovery.measured_topology import discover
from spark_jobs.discovery.micro_batches import query_batches
from spark_jobs.discovery.rediscovery import rediscover_job
from spark_jobs.discovery.rest_client import ApplicationApi, SparkRestApi, select_application
from spark_jobs.runtime.processes import stop_group
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import ROOT, CliResult, run_cli, test_port
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

JOB = ROOT / "tests" / "spark" / "plain_streaming_job.py"
PORTS = range(test_port(16850), test_port(16950))
UI_TIMEOUT = ("--timeout-s", "30")  # the UI of a driver on a loaded 2-core machine can take seconds to answer
BAD_INPUT_S = 10.0  # "within a few seconds": a discovery that must fail fails within this


def free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS}")


@dataclass
class Refusal:
    """What discovery said in one phase: the CLI's answer and how long discovery itself took to refuse."""

    cli: CliResult
    error: str
    seconds: float


@dataclass
class PlainJob:
    url: str
    folder: Path
    phases: dict[str, Refusal] = field(default_factory=dict)


def refusal(url: str) -> Refusal:
    start = time.monotonic()
    try:
        discover(SparkRestApi(url, timeout_s=BAD_INPUT_S))
        error = "no error"
    except FtopsError as exc:
        error = str(exc)
    seconds = time.monotonic() - start
    return Refusal(run_cli("profile", "topology", "--spark-ui", url, *UI_TIMEOUT), error, seconds)


def _log_says(log: Path, line: str):
    return line in log.read_text() or None


def _executions(url: str) -> list[dict] | None:
    """The application's SQL executions; None while its UI does not answer in time (the first REST answer
    loads Jersey, slow on a loaded machine)."""
    api = SparkRestApi(url, timeout_s=30)
    try:
        return ApplicationApi(api, select_application(api, None)).executions()
    except FtopsError:
        return None


def _streaming_started(url: str):
    return any("\nbatch = " in (e.get("description") or "") for e in _executions(url) or []) or None


def _completed_batches(url: str, count: int):
    try:
        batches = query_batches(_executions(url) or [], "plain", None)
    except FtopsError:  # not streaming yet, or no completed batch yet
        return None
    return sum(b.completed for b in batches) >= count or None


@pytest.fixture(scope="module")
def plain_job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plain-job")
    url = f"http://127.0.0.1:{free_port()}"
    log = folder / "job.log"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, str(JOB), "--port", url.rsplit(":", 1)[1], "--control", str(folder),
                                 "--join", "broadcast", "--checkpoint", str(folder / "checkpoint")],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    try:
        job = PlainJob(url, folder)
        wait_for(lambda: _log_says(log, "phase not-streaming"), timeout_s=300, what="the job's batch phase")
        wait_for(lambda: _executions(url) is not None or None, timeout_s=120, what="its UI's REST API")
        job.phases["not streaming"] = refusal(url)
        (folder / "start").touch()
        wait_for(lambda: _streaming_started(url), timeout_s=300, interval_s=1, what="the first micro-batch to start")
        job.phases["no completed batch"] = refusal(url)
        (folder / "open").touch()
        wait_for(lambda: _completed_batches(url, 8), timeout_s=300, interval_s=2, what="8 completed micro-batches")
        yield job
    finally:
        stop_group(proc.pid, grace_s=15)
        assert proc.poll() is not None


def test_the_job_is_plain_pyspark():
    imported = set()
    for node in ast.walk(ast.parse(JOB.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported == {"__future__", "argparse", "os", "time", "pyspark"}


def test_an_unreachable_url_is_one_line_and_exit_2_within_seconds():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    start = time.monotonic()
    with pytest.raises(FtopsError, match="does not answer"):
        discover(SparkRestApi(url))
    assert time.monotonic() - start < BAD_INPUT_S
    res = run_cli("profile", "topology", "--spark-ui", url)
    assert res.code == 2 and res.out == ""
    assert res.err.count("\n") == 1 and f"the Spark UI at {url}/api/v1/applications does not answer" in res.err
    res = run_cli("profile", "topology", "--spark-ui", "127.0.0.1:4040")
    assert res.code == 2 and "--spark-ui: expected an http(s) URL" in res.err and res.err.count("\n") == 1


def test_an_application_that_is_not_streaming_is_refused(plain_job):
    phase = plain_job.phases["not streaming"]
    assert "is not a Structured Streaming application: it ran 1 SQL execution(s), none of a streaming query" in phase.error
    assert phase.seconds < BAD_INPUT_S
    assert phase.cli.code == 2 and phase.cli.err.count("\n") == 1 and "not a Structured Streaming application" in phase.cli.err


def test_a_query_with_no_completed_micro_batch_is_refused(plain_job):
    phase = plain_job.phases["no completed batch"]
    assert "query region_counts has no completed micro-batch yet (batch 0 still running)" in phase.error
    assert phase.seconds < BAD_INPUT_S
    assert phase.cli.code == 2 and phase.cli.err.count("\n") == 1 and "no completed micro-batch yet" in phase.cli.err


def test_the_discovered_document_is_checked_planned_and_simulated(plain_job, tmp_path):
    hosts = tmp_path / "hosts.json"
    res = run_cli("profile", "topology", "--spark-ui", plain_job.url, "--last-batches", "5", "--hosts", hosts,
                  "--json", *UI_TIMEOUT)
    assert res.code == 0, res.err
    doc = res.json()
    assert [(o["name"], o["parallelism"], o["input_model"]) for o in doc["operators"]] == [
        ("scan", 2, "independent"), ("source", 2, "independent"), ("join", 2, "correlated"), ("aggregate", 3, "independent")]
    assert sorted((s["from"], s["to"], s["partitioning"]) for s in doc["streams"]) == [
        ("join", "aggregate", "full"), ("scan", "join", "full"), ("source", "join", "one_to_one")]
    source_rate = doc["tasks"]["source[0]"]["rate"] + doc["tasks"]["source[1]"]["rate"]
    assert source_rate == pytest.approx(20, rel=0.3)  # the rate source's 20 rows/s, measured from its task lists
    assert json.loads(hosts.read_text()) == {t: "localhost" for t in doc["tasks"]}
    topology = tmp_path / "topology.json"
    topology.write_text(res.out)
    check = run_cli("topology", "check", topology)
    assert check.code == 0 and "4 operators" in check.out and "9 tasks" in check.out, check.out + check.err
    plan = run_cli("plan", "replication", topology, "--budget", "4", "--algorithm", "exact", "--json")
    assert plan.code == 0, plan.err
    assert plan.json()["optimal"] and len(plan.json()["tasks"]) == 4 and 0 < plan.json()["output_fidelity"] < 1
    (tmp_path / "plan.json").write_text(plan.out)
    sim = run_cli("simulate", topology, "--plan", tmp_path / "plan.json", "--fail-domain", "localhost", "--domains", hosts,
                  "--arrivals", "1@30,1@60", "--json")
    assert sim.code == 0, sim.err
    assert sim.json()["tentative_output_fidelity"] == pytest.approx(plan.json()["output_fidelity"], abs=1e-9)
    table = run_cli("profile", "topology", "--spark-ui", plain_job.url, "--last-batches", "5", *UI_TIMEOUT)
    assert table.code == 0, table.err
    assert "source (one_to_one), scan (full)" in table.out and "hosts: localhost (9 tasks)" in table.out


def test_register_as_plan_only_and_discover_it_again(plain_job, pg_server, pg_conn):
    env = {"FTOPS_DATABASE_URL": pg_server.url()}
    res = run_cli("job", "register", "--name", "plain", "--spark-ui", plain_job.url, "--budget", "4", "--json",
                  *UI_TIMEOUT, env=env)
    assert res.code == 0, res.err
    assert res.json()["kind"] == "plan-only" and res.json()["tasks"] == 9
    listed = run_cli("job", "list", "--json", env=env).json()
    assert listed == [{"job": "plain", "kind": "plan-only", "pipeline": "discovered", "budget": 4,
                       "policy": {"drill_schedule": "none", "tuning_schedule": "none", "priority": 1.0, "apply": "recommend"}}]
    both = run_cli("job", "register", "--name", "x", "--spark-ui", plain_job.url, "--topology", "t.json", env=env)
    assert both.code == 2 and "one of them" in both.err
    store = HistoryStore(connect(pg_server.url()))
    try:
        profile = store.latest_profile("plain", "rates")["doc"]
        assert profile["rediscover"] == {"spark_ui": plain_job.url, "app_id": None, "query": None}
        assert profile["topology_id"] == res.json()["topology_id"] and set(profile["hosts"].values()) == {"localhost"}
        again = rediscover_job(store, "plain", 3, "manual__1")  # what the DAG's profile step does for this job
        assert again["topology_id"] is not None and "3 micro-batch(es)" in again["source"]
        latest = store.latest_profile("plain", "rates")
        assert latest["profile_id"] == again["profile_id"] and latest["dag_run_id"] == "manual__1"
        assert [o["name"] for o in store.latest_topology("plain")["operators"]] == ["scan", "source", "join", "aggregate"]
    finally:
        store.conn.close()
