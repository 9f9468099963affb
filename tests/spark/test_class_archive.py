"""The suite's Spark JVMs map Spark's classes from the class-data archive (tests/spark_class_archive.py)."""

from __future__ import annotations

import subprocess

from spark_jobs.cluster.standalone import spark_env
from tests.conftest import ROOT, TEST_JVM_OPTIONS
from tests.spark_class_archive import java_options


def test_a_spark_daemon_maps_the_archive_and_the_jdk_warning_is_silenced(tmp_path):
    archive = java_options(ROOT / ".state", TEST_JVM_OPTIONS)  # built here if it is not there yet
    assert archive, "the class archive could not be built: see .state/jvm-class-archive/*.log"
    options = " ".join([TEST_JVM_OPTIONS, *archive])
    log = tmp_path / "cds-%p.log"
    env = spark_env({"JDK_JAVA_OPTIONS": f"{options} -Xlog:cds=info:file={log}"})  # a log file per JVM
    # The master prints its usage and exits; its JVM has the daemons' class path, Spark's launcher another.
    done = subprocess.run([f"{env['SPARK_HOME']}/bin/spark-class", "org.apache.spark.deploy.master.Master", "--help"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert "Usage: Master" in done.stderr, done.stderr[-2000:]
    logs = {p.name: p.read_text() for p in tmp_path.glob("cds-*.log")}
    assert len(logs) == 2, logs.keys()  # the launcher's JVM and the master's
    mapped = [name for name, text in logs.items() if "Mapped dynamic region" in text and "mismatch" not in text]
    assert len(mapped) == 1, logs  # the master used the archive; the launcher (another class path) could not
    assert "[cds" not in done.stdout + done.stderr  # the launcher's "Unable to use shared archive" is not printed
