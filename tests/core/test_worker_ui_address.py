"""Worker web UIs come from the master's view (joined by address and port); the recorded address and UI port
only for workers it does not list."""

from __future__ import annotations

from spark_jobs.cluster.standalone import Process
from spark_jobs.cluster.worker_ui import reported_worker_uis, worker_ui_url


def _worker(host: str, port: int, ui_port: int) -> Process:
    return Process(f"worker-{port}", "worker", "primary", 1, port, ui_port, "log", "rack-a", host=host)


MASTER_DOC = {"workers": [
    {"id": "w-1", "host": "10.0.0.5", "port": 7100, "webuiaddress": "http://node-5.example:8100/", "state": "ALIVE"},
    {"id": "w-0", "host": "10.0.0.9", "port": 7101, "webuiaddress": "http://10.0.0.9:8101", "state": "DEAD"},
    {"id": "w-2", "host": "10.0.0.6", "port": 7102, "webuiaddress": "", "state": "ALIVE"},
]}


def test_alive_workers_map_to_their_reported_address():
    assert reported_worker_uis(MASTER_DOC) == {("10.0.0.5", 7100): "http://node-5.example:8100"}


def test_a_listed_worker_uses_the_masters_address_not_loopback():
    assert worker_ui_url(_worker("10.0.0.5", 7100, 8100), reported_worker_uis(MASTER_DOC)) == "http://node-5.example:8100"


def test_workers_on_different_hosts_with_the_same_port_are_told_apart():
    doc = {"workers": [{"host": "198.18.3.3", "port": 7100, "webuiaddress": "http://198.18.3.3:8100", "state": "ALIVE"},
                       {"host": "198.18.3.4", "port": 7100, "webuiaddress": "http://198.18.3.4:8100", "state": "ALIVE"}]}
    assert worker_ui_url(_worker("198.18.3.4", 7100, 8100), reported_worker_uis(doc)) == "http://198.18.3.4:8100"


def test_a_worker_the_master_does_not_list_alive_falls_back_to_its_recorded_port():
    reported = reported_worker_uis(MASTER_DOC)
    assert worker_ui_url(_worker("10.0.0.9", 7101, 8101), reported) == "http://10.0.0.9:8101"
    assert worker_ui_url(_worker("127.0.0.1", 7101, 8101), reported_worker_uis(None)) == "http://127.0.0.1:8101"
