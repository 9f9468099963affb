"""The local Spark standalone cluster, for real: JVM masters and workers on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket

import pytest

from ft_core.errors import InputError
from spark_jobs.cluster.standalone import ClusterConfig, ClusterState, cluster_down, cluster_status, cluster_up
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import test_port

# Ports away from the defaults, so a developer's own cluster does not collide with the tests.
PORTS = dict(primary_port=test_port(11077), primary_ui=test_port(11090), standby_port=test_port(11078),
             standby_ui=test_port(11091), worker_port_base=test_port(11100), worker_ui_base=test_port(11200))


def _domains(state_dir):
    report = cluster_status(state_dir)
    return {(w["domain"], w["state"]) for pool in report["pools"].values() for w in pool["workers"]}


def _pids_alive(pids):
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            stat = open(f"/proc/{pid}/stat").read()
            if ") Z" not in stat:
                alive.append(pid)
        except (ProcessLookupError, FileNotFoundError):
            pass
    return alive


def test_up_status_correlated_failure_replacement_and_down(tmp_path, cli):
    state_dir = tmp_path / "spark"
    config = ClusterConfig(state_dir=state_dir, worker_timeout_s=4, **PORTS)
    cluster_up(config)
    try:
        assert _domains(state_dir) == {("rack-a", "ALIVE"), ("rack-b", "ALIVE"), ("standby", "ALIVE")}
        res = cli("cluster", "kill-domain", "rack-a", "--state-dir", state_dir)
        assert res.code == 0, res.err
        # the master notices the lost heartbeats
        wait_for(lambda: ("rack-a", "DEAD") in _domains(state_dir), timeout_s=60, interval_s=1, what="rack-a DEAD")
        res = cli("cluster", "add-worker", "--domain", "rack-c", "--state-dir", state_dir)
        assert res.code == 0, res.err
        assert ("rack-c", "ALIVE") in _domains(state_dir)
        status = cli("cluster", "status", "--json", "--state-dir", state_dir).json()
        assert status["pools"]["primary"]["master"] == f"spark://127.0.0.1:{test_port(11077)}"
    finally:
        pids = [p.pid for p in ClusterState.load(state_dir).processes]
        stopped = cluster_down(state_dir)
    assert len(stopped) == 5  # two masters, rack-b, standby, rack-c (rack-a was already dead)
    assert _pids_alive(pids) == []
    res = cli("cluster", "status", "--state-dir", state_dir)
    assert res.code == 2 and "run `ftops cluster up` first" in res.err


def test_port_in_use_is_refused_and_stale_state_is_cleaned(tmp_path):
    state_dir = tmp_path / "spark"
    state_dir.mkdir()
    stale = {"state_dir": str(state_dir), "worker_timeout_s": 5, "processes": [
        {"name": "master-primary", "role": "master", "pool": "primary", "pid": 2 ** 22 + 1, "port": 1, "ui_port": 2, "log": "x"}]}
    (state_dir / "cluster.json").write_text(json.dumps(stale))
    with socket.socket() as blocker:
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the port may be in TIME_WAIT
        blocker.bind(("127.0.0.1", PORTS["primary_ui"]))
        blocker.listen()
        with pytest.raises(InputError, match=f"port {PORTS['primary_ui']} on 127.0.0.1 is in use"):
            cluster_up(ClusterConfig(state_dir=state_dir, **PORTS))
    assert not (state_dir / "cluster.json").exists()  # the crash's stale pids were dropped, nothing was started


def test_bad_worker_spec_exits_2(cli, tmp_path):
    res = cli("cluster", "up", "--workers", "rack-a:0", "--state-dir", tmp_path)
    assert res.code == 2 and "--workers" in res.err
