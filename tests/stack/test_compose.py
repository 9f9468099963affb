"""docker-compose.yml: validated by a real compose parser, and consistent with the project.

No Docker engine runs on the project's machines, so nothing is started: Debian's docker-compose
(installed by scripts/system-packages.sh) parses, interpolates and validates the file with
``docker-compose config``, which needs no engine; the resolved configuration is then checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT

SECRETS = {"FTOPS_DB_PASSWORD": "pw-for-the-test", "AIRFLOW_JWT_SECRET": "jwt-for-the-test"}


def compose_config(env: dict[str, str]) -> subprocess.CompletedProcess:
    exe = shutil.which("docker-compose")
    assert exe, "docker-compose is missing: scripts/system-packages.sh installs it"
    clean = {k: v for k, v in os.environ.items() if k not in SECRETS}
    return subprocess.run([exe, "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True, text=True,
                          env={**clean, **env}, cwd=ROOT, timeout=60)


@pytest.fixture(scope="module")
def resolved():
    proc = compose_config(SECRETS)
    assert proc.returncode == 0, proc.stderr
    return yaml.safe_load(proc.stdout)


def load():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_compose_parser_accepts_the_file_and_needs_the_secrets(resolved):
    for missing in SECRETS:
        proc = compose_config({k: v for k, v in SECRETS.items() if k != missing})
        assert proc.returncode != 0 and f"set {missing}" in proc.stderr, proc.stderr
    assert {"postgres", "spark-primary", "spark-standby", "airflow-init", "airflow-apiserver", "airflow-scheduler",
            "airflow-dag-processor", "airflow-triggerer"} <= set(resolved["services"])


def test_airflow_services_share_one_image_and_wait_for_the_migration(resolved):
    services = resolved["services"]
    airflow = {n: s for n, s in services.items() if n.startswith("airflow-")}
    assert {s["image"] for s in airflow.values()} == {"ftops-airflow:dev"}
    assert all(s["build"]["dockerfile"].endswith("docker/airflow.Dockerfile") for s in airflow.values())
    assert (ROOT / "docker" / "airflow.Dockerfile").is_file()
    for name, svc in airflow.items():
        if name != "airflow-init":
            assert svc["depends_on"]["airflow-init"]["condition"] == "service_completed_successfully", name
    assert "ftops db upgrade" in " ".join(services["airflow-init"]["command"])
    env = services["airflow-scheduler"]["environment"]
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/airflow/dags"
    dockerfile = (ROOT / "docker" / "airflow.Dockerfile").read_text()
    assert "ftops dags install --dags-folder /opt/airflow/dags" in dockerfile  # the thin files are where Airflow looks
    def waits_for_data_init(name: str) -> bool:  # directly or through a service that does
        needs = services[name].get("depends_on") or {}
        return needs.get("data-init", {}).get("condition") == "service_completed_successfully" or \
            any(waits_for_data_init(n) for n in needs)

    for name, svc in services.items():  # one owner for the shared volume before anything writes into it
        if any(str(v).startswith("ftops-data") for v in svc.get("volumes", [])) and name != "data-init":
            assert waits_for_data_init(name), name
    assert env["AIRFLOW_CONN_FTOPS_DB"].endswith("@postgres:5432/ftops")
    assert [p["published"] for p in services["airflow-apiserver"]["ports"]] in (["8080"], [8080])


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
            if not name.startswith("airflow-"):
                assert not port.startswith("8080:"), f"{name} publishes Airflow's port 8080"


def test_workers_point_at_their_masters():
    services = load()["services"]
    for name, svc in services.items():
        if name.startswith("worker"):
            master = svc["command"][-1]
            host = master.removeprefix("spark://").split(":")[0]
            assert host in services and host in svc["depends_on"], name


def test_no_secret_in_the_file():
    text = (ROOT / "docker-compose.yml").read_text()
    for value in SECRETS.values():
        assert value not in text
    env = load()["services"]["postgres"]["environment"]
    assert env["POSTGRES_PASSWORD"].startswith("${")
    assert "${AIRFLOW_JWT_SECRET" in text
