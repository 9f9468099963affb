"""docker-compose.yml: structure and consistency (no Docker engine runs on the project's machines).

A real compose parser is not installable from the project's own files here (Debian's docker-compose
needs apt); this test parses the YAML with its merge keys and checks what the project relies on.
"""

from __future__ import annotations

import yaml

from tests.conftest import ROOT


def load():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_and_failure_domains():
    services = load()["services"]
    assert {"postgres", "spark-primary", "spark-standby"} <= set(services)
    domains = {s.get("labels", {}).get("ftops.failure-domain") for s in services.values()} - {None}
    assert {"rack-a", "rack-b", "standby"} <= domains


def test_spark_uses_the_locked_version_and_keeps_8080_free():
    services = load()["services"]
    lock = (ROOT / "requirements.lock").read_text()
    assert "pyspark==4.3.0" in lock
    for name, svc in services.items():
        if name.startswith(("spark", "worker")):
            assert svc["image"].startswith("apache/spark:4.3.0"), name
        for port in svc.get("ports", []):
            assert not port.startswith("8080:"), f"{name} publishes Airflow's port 8080"


def test_workers_point_at_their_masters():
    services = load()["services"]
    for name, svc in services.items():
        if name.startswith("worker"):
            master = svc["command"][-1]
            host = master.removeprefix("spark://").split(":")[0]
            assert host in services and host in svc["depends_on"], name


def test_no_secret_in_the_file():
    env = load()["services"]["postgres"]["environment"]
    assert env["POSTGRES_PASSWORD"].startswith("${")
