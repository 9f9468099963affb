"""The installed stack: PySpark's Python side matches the JVM, and the Airflow providers import."""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import subprocess
import sys
from pathlib import Path


def test_pyspark_python_matches_the_jvm():
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    proc = subprocess.run([str(spark_home / "bin" / "spark-submit"), "--version"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    jvm = re.search(r"version (\d+\.\d+\.\d+)", proc.stdout + proc.stderr)
    assert jvm, proc.stderr
    assert pyspark.__version__ == jvm.group(1) == "4.3.0"


def test_pyspark_client_is_not_installed_over_pyspark():
    names = {d.metadata["Name"].lower() for d in md.distributions()}
    assert "pyspark-client" not in names


def test_airflow_and_providers_import():
    code = ("import airflow, airflow.providers.apache.spark.operators.spark_submit, "
            "airflow.providers.postgres.hooks.postgres, airflow.providers.standard.operators.python; "
            "print(airflow.__version__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "AIRFLOW_HOME": os.environ.get("AIRFLOW_HOME", "/tmp/ftops-airflow-test")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("3.3.")
