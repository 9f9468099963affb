"""A worker's web UI address comes from the master's JSON, a killed worker leaves the master's live ones, and the
cores free outside a domain are the master's count, on a real local standalone cluster.

The second worker binds another loopback address (127.0.0.2, as :mod:`spark_jobs.cluster.worker_hosts`
does): its UI is not on 127.0.0.1, so only the address the master reports reaches it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from spark_jobs.cluster.local_standalone import local_cluster
from spark_jobs.cluster.standalone import (ClusterConfig, add_worker, cluster_down, cluster_up, kill_domain, require_state,
                                          spark_env, spark_home, wait_workers_gone)
from spark_jobs.cluster.web_ui import master_state
from spark_jobs.cluster.worker_hosts import loopback_host
from spark_jobs.cluster.worker_ui import executors_by_worker, reported_worker_uis
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import test_port

PORTS = dict(primary_port=test_port(11477), primary_ui=test_port(11490), standby_port=test_port(11478),
             standby_ui=test_port(11491), worker_port_base=test_port(11500), worker_ui_base=test_port(11600))


def test_worker_ui_address_comes_from_the_masters_json(tmp_path):
    state_dir = tmp_path / "spark"
    state = cluster_up(ClusterConfig(state_dir=state_dir, primary_domains=(("rack-a", 1),), standby_workers=0,
                                     worker_timeout_s=5, **PORTS))
    try:
        other = add_worker(state_dir, "rack-b", host=loopback_host(1), port_base=test_port(11510),
                           ui_base=test_port(11610))
        master_ui = state.master_ui("primary")
        reported = reported_worker_uis(master_state(master_ui))
        assert reported[(other.host, other.port)] == f"http://127.0.0.2:{other.ui_port}"
        first = state.workers("primary")[0]
        assert reported[(first.host, first.port)] == f"http://127.0.0.1:{first.ui_port}"
        workers = require_state(state_dir).workers("primary")
        answered = {w.domain: executors for w, executors in executors_by_worker(master_ui, workers)}
        assert answered == {"rack-a": [], "rack-b": []}  # both workers' own JSON answered, no executors yet
    finally:
        cluster_down(state_dir)


def test_a_killed_worker_is_waited_for_until_the_master_no_longer_lists_it_alive(tmp_path):
    """What recovery-runtime's rehearsal does with the replacement worker it timed: kill it and wait until the master
    cannot place an executor on it, the other worker untouched. On loopback the master drops it about at once (the
    wait returns on its first look); the wait is for a master that notices later."""
    state_dir = tmp_path / "spark"
    state = cluster_up(ClusterConfig(state_dir=state_dir, primary_domains=(("rack-a", 1),), standby_workers=0,
                                     worker_timeout_s=5, **PORTS))
    try:
        added = add_worker(state_dir, "rehearsal", port_base=test_port(11520), ui_base=test_port(11620))

        def alive() -> set:
            return {(w["host"], w["port"]) for w in master_state(state.master_ui("primary"))["workers"]
                    if w["state"] == "ALIVE"}
        assert (added.host, added.port) in alive()
        killed = kill_domain(state_dir, "rehearsal")
        assert [p.name for p in killed] == [added.name]
        wait_workers_gone(state, killed, timeout_s=60)
        first = state.workers("primary")[0]
        assert (added.host, added.port) not in alive() and (first.host, first.port) in alive()
    finally:
        cluster_down(state_dir)


def test_the_cores_free_outside_a_domain_are_the_live_workers_free_cores_there(tmp_path):
    """What a first drill's catch-up forecast asks (spark_jobs.drills.catch_up): can the master relaunch a lost
    executor outside the domain at once. An application holding one of the two workers' cores leaves one free, on
    the worker it does not use."""
    state_dir = tmp_path / "spark"
    state = cluster_up(ClusterConfig(state_dir=state_dir, primary_domains=(("rack-a", 1),), standby_workers=0,
                                     worker_timeout_s=5, **PORTS))
    app = None
    try:
        add_worker(state_dir, "rack-b", host=loopback_host(1), port_base=test_port(11530), ui_base=test_port(11630))
        cluster = local_cluster(state_dir)
        assert (cluster.free_cores("rack-a"), cluster.free_cores("rack-b")) == (1, 1)  # nothing runs yet
        job = tmp_path / "hold.py"
        job.write_text("import time\nfrom pyspark.sql import SparkSession\n"
                       "SparkSession.builder.appName('hold-a-core').getOrCreate()\ntime.sleep(300)\n")
        app = subprocess.Popen([str(spark_home() / "bin" / "spark-submit"), "--master", state.master_url("primary"),
                                "--total-executor-cores", "1", "--conf", "spark.ui.enabled=false", str(job)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               env=spark_env({"PYSPARK_PYTHON": sys.executable}))
        hosting = wait_for(lambda: cluster.executor_domains("hold-a-core") or None, timeout_s=120, interval_s=1.0,
                           what="the application's executor")
        assert sum(hosting.values()) == 1
        (used,) = hosting
        other = "rack-b" if used == "rack-a" else "rack-a"
        assert cluster.free_cores(used) == 1 and cluster.free_cores(other) == 0  # the free core is where it is not
    finally:
        if app is not None:  # spark-submit and the Python driver it started: its session
            os.killpg(app.pid, signal.SIGKILL)
            app.wait()
        cluster_down(state_dir)
