"""Airflow tests run against an Airflow home under .state/ (never ~/airflow)."""

from __future__ import annotations

import os

from tests.conftest import ROOT

os.environ.setdefault("AIRFLOW_HOME", str(ROOT / ".state" / "airflow-test"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags")
os.environ["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(ROOT / "plugins")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")

import subprocess
import sys

import pytest


@pytest.fixture(scope="session", autouse=True)
def airflow_db():
    """A migrated Airflow metadata database (SQLite under AIRFLOW_HOME): auth checks revoked tokens there."""
    proc = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
