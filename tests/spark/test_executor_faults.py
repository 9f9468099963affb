"""A failure domain lost the engine-native way (issue 14, item 4), on real Spark: the job's own driver kills
its executors on the domain's hosts and keeps them off until ``domain-up``; no process of the cluster is
touched from outside, so it works the same on clusters ftops did not start.

The cluster: a standalone master with a one-core worker on 127.0.0.1 (``rack-a``) and one on 127.0.0.2
(``rack-b``, :mod:`spark_jobs.cluster.worker_hosts`); the failure-domain map names those addresses, as a
user's map names their hosts. The job is registered the way a user's job on their own cluster is: a
deployment with masters and a domain map, no cluster state. One job serves both paths: the commands
(``ftops faults domain-down/up``) and the cluster seam the drill engine calls (:mod:`spark_jobs.cluster.seam`:
capacity per domain, the domain lost, its capacity given back from the undo document alone). YARN and Kubernetes cannot run here; the calls used
(``SparkContext.killExecutors`` and ``requestTotalExecutors``) are the scheduler backend's, shared by all three.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from spark_jobs.cluster.standalone import ClusterConfig, add_worker, cluster_down, cluster_up
from spark_jobs.cluster.seam import cluster_of, give_back
from spark_jobs.pipeline.feed import LiveFeed
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.metrics import read_metrics
from spark_jobs.runtime.detached_submit import submit_stream
from spark_jobs.runtime.executor_faults import applied, hosts_of, load_domain_map, request_domain_down, request_domain_up
from spark_jobs.runtime.job_streams import JobDeployment, primary_app_name, primary_run_argv
from spark_jobs.runtime.launch import stop_run
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import run_cli, test_port

BASE = test_port(11700)  # ports of this test only: masters and workers from BASE + 77
PARAMS = ["rate=100", "window_s=2", "watermark_s=1", "n_pages=40", "p1=2"]
DOMAINS = {"127.0.0.1": "rack-a", "127.0.0.2": "rack-b"}  # the map of `ftops job register --domains`


def test_the_domain_map_names_the_hosts_of_a_domain_and_refuses_an_unknown_one(tmp_path):
    (tmp_path / "domains.yaml").write_text("10.0.0.5: rack-a\n10.0.0.6: rack-a\n10.0.1.5: rack-b\n")
    domains = load_domain_map(tmp_path / "domains.yaml")
    assert hosts_of(domains, "rack-a") == ["10.0.0.5", "10.0.0.6"]
    with pytest.raises(ValueError, match="'rack-z' is not in the failure-domain map .known: rack-a, rack-b"):
        hosts_of(domains, "rack-z")
    (tmp_path / "bad.json").write_text(json.dumps({"rack-a": ["10.0.0.5"]}))  # domain -> hosts: the wrong way round
    with pytest.raises(ValueError, match="--domains: expected a mapping of worker host"):
        load_domain_map(tmp_path / "bad.json")


def test_a_request_is_written_once_per_id_and_up_needs_a_domain_down(tmp_path):
    with pytest.raises(ValueError, match="no domain of the run"):
        request_domain_up(tmp_path)
    first = request_domain_down(tmp_path, "rack-b", ["127.0.0.2"])
    assert json.loads((tmp_path / "_faults" / "request.json").read_text())["hosts"] == ["127.0.0.2"]
    assert request_domain_up(tmp_path) != first and applied(tmp_path) == []


def test_a_request_no_driver_applies_is_withdrawn(tmp_path):
    """No run writes to the folder: the command fails, and no driver started later finds the fault."""
    (tmp_path / "_run.json").write_text(json.dumps({"app_id": "app-20261126000000-0000"}))  # a run that has ended
    res = run_cli("faults", "domain-down", "--output", tmp_path, "--domain", "rack-b", "--hosts", "127.0.0.2",
                  "--timeout-s", "2")
    assert res.code == 2 and "the request was withdrawn" in res.err
    assert not (tmp_path / "_faults" / "request.json").exists()


def _hosts(ui: str) -> list[str]:
    """The hosts of the job's executors, as its driver's REST API lists them; [] when the driver does not answer (within
    20 s: on a loaded 2-core machine a whole-suite run failed on a 10-s read timeout): the callers poll, so a poll
    without an answer saw nothing, never a host that is not there."""
    try:
        app = httpx.get(f"{ui}/api/v1/applications", timeout=20).json()[0]["id"]
        executors = httpx.get(f"{ui}/api/v1/applications/{app}/executors", timeout=20).json()
    except (httpx.HTTPError, ValueError, IndexError):  # no answer, a half-written one, no application listed yet
        return []
    return sorted(e["hostPort"].rsplit(":", 1)[0] for e in executors if e["id"] != "driver")


def _batches(out: Path) -> int:
    return max((r["batch_id"] for r in read_metrics(out / "_metrics" / "metrics.jsonl")), default=-1)


def _only_rack_a_for(ui: str, out: Path, seconds: float) -> None:
    """No executor on rack-b for ``seconds`` (the master has a free core there all along), and the job goes on."""
    before, seen = _batches(out), set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.update(_hosts(ui))
        time.sleep(1)
    assert seen == {"127.0.0.1"}
    wait_for(lambda: _batches(out) >= before + 3, timeout_s=120, what="micro-batches on the surviving executor")


def _back_on_both(ui: str, out: Path) -> None:
    wait_for(lambda: _hosts(ui) == ["127.0.0.1", "127.0.0.2"], timeout_s=120,
             what=lambda: f"an executor back on rack-b ({_hosts(ui)})")
    after = _batches(out)
    wait_for(lambda: _batches(out) >= after + 2, timeout_s=120, what="micro-batches with both executors again")


def test_a_domain_down_takes_the_jobs_executors_off_its_hosts_until_capacity_returns(tmp_path):
    state_dir = tmp_path / "spark"
    state = cluster_up(ClusterConfig(state_dir=state_dir, primary_domains=(("rack-a", 1),), standby_workers=0,
                                     primary_port=BASE + 77, standby_port=BASE + 78, primary_ui=BASE + 90,
                                     standby_ui=BASE + 91, worker_port_base=BASE + 100, worker_ui_base=BASE + 200))
    try:
        add_worker(state_dir, "rack-b", port_base=BASE + 110, ui_base=BASE + 210, host="127.0.0.2")
        dep = JobDeployment(pipeline="topk", root=str(tmp_path / "job"), params=PARAMS, trigger_s=0.5, primary_cores=2,
                            domains=DOMAINS, primary_master=state.master_url("primary"), primary_ui=state.master_ui("primary"),
                            standby_master=state.master_url("primary"), standby_ui=state.master_ui("primary"))
        feed = LiveFeed(load_workload("topk", PARAMS), dep.input, name="executor-faults-feed")  # input in real time
        feed.start()
        submit_stream(primary_app_name("mine"), dep.primary_ui, [str(a) for a in primary_run_argv(dep)])
        try:
            out = dep.primary_output
            wait_for(lambda: (out / "_run.json").exists(), timeout_s=120, what="the driver's _run.json")
            ui = json.loads((out / "_run.json").read_text())["ui"]
            wait_for(lambda: _batches(out) >= 3 and _hosts(ui) == ["127.0.0.1", "127.0.0.2"], timeout_s=300,
                     what=lambda: f"the job on both hosts ({_hosts(ui)})")
            _through_the_commands(tmp_path, dep, ui)
            _through_the_drill_steps(dep, ui)
        finally:
            feed.stop_event.set()
            stop_run(dep.primary_output)
        assert feed.error is None, feed.error
    finally:
        cluster_down(state_dir)


def _through_the_commands(tmp_path: Path, dep: JobDeployment, ui: str) -> None:
    out = dep.primary_output
    (tmp_path / "domains.json").write_text(json.dumps(DOMAINS))
    down = run_cli("faults", "domain-down", "--output", out, "--domain", "rack-b", "--domains", tmp_path / "domains.json",
                   "--json")
    assert down.code == 0, down.err
    record = json.loads(down.out)
    assert record["action"] == "down" and record["domain"] == "rack-b" and len(record["executors"]) == 1
    wait_for(lambda: _hosts(ui) == ["127.0.0.1"], timeout_s=60, what=lambda: f"rack-b's executor gone ({_hosts(ui)})")
    _only_rack_a_for(ui, out, 20)
    up = run_cli("faults", "domain-up", "--output", out, "--json")
    assert up.code == 0, up.err
    assert json.loads(up.out)["requested_total"] == 2
    _back_on_both(ui, out)
    again = run_cli("faults", "domain-up", "--output", out)
    assert again.code == 2 and "no domain of the run" in again.err


def _through_the_drill_steps(dep: JobDeployment, ui: str) -> None:
    cluster = cluster_of(dep)
    assert cluster.kind == "engine-native"
    with pytest.raises(ValueError, match="the failure-domain map has rack-a, rack-b"):
        cluster.undo_of("rack-z", "host-down")
    with pytest.raises(ValueError, match="can only lose its executors"):
        cluster.undo_of("rack-b", "partition")
    before = cluster.capacity()
    assert before == {"rack-a": 1, "rack-b": 1}
    lost = cluster.lose("rack-b", "host-down")
    assert len(lost.hit) == 1 and lost.hit[0].startswith("executor ")
    wait_for(lambda: _hosts(ui) == ["127.0.0.1"], timeout_s=60, what=lambda: f"rack-b's executor gone ({_hosts(ui)})")
    _only_rack_a_for(ui, dep.primary_output, 10)
    assert give_back(json.loads(json.dumps(lost.undo)))  # from the document alone, as the journal keeps it
    _back_on_both(ui, dep.primary_output)
    assert give_back(lost.undo) == []  # again: the domain is up, nothing to do
    wait_for(lambda: cluster.capacity() == before or None, timeout_s=60, what="both domains' executors counted again")
