"""Airflow tests run against an Airflow home under .state/ (never ~/airflow)."""

from __future__ import annotations

import os
import sys

from tests.conftest import ROOT

os.environ.setdefault("AIRFLOW_HOME", str(ROOT / ".state" / "airflow-test"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags")
os.environ["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(ROOT / "plugins")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")
# SparkSubmitOperator runs `spark-submit` from PATH: the one the pyspark package puts beside this Python.
os.environ["PATH"] = f"{os.path.dirname(os.path.abspath(sys.executable))}{os.pathsep}{os.environ.get('PATH', '')}"
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import subprocess

import pytest


@pytest.fixture(scope="session", autouse=True)
def airflow_db():
    """A migrated Airflow metadata database (SQLite under AIRFLOW_HOME): auth checks revoked tokens there."""
    proc = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
