"""Spark's external shuffle service on a local standalone cluster (``ClusterConfig.shuffle_service_port``): the first
worker runs it, and on one machine it serves the executors of every worker, on whatever loopback address each binds.

``ftops bench redundancy --shuffle-service`` relies on this: a paused executor's map outputs are read from the
service, not from the paused JVM. A real cluster and a real application: the job's shuffle is read through the
service, and the service's log names both executors, the one on 127.0.0.2 included.
"""

from __future__ import annotations

import re
import subprocess
import sys

from spark_jobs.cluster.standalone import ClusterConfig, add_worker, cluster_down, cluster_up, spark_env, spark_home
from spark_jobs.cluster.worker_hosts import loopback_host
from tests.conftest import test_port

PORTS = dict(primary_port=test_port(11677), primary_ui=test_port(11690), standby_port=test_port(11678),
             standby_ui=test_port(11691), worker_port_base=test_port(11700), worker_ui_base=test_port(11800))
SERVICE_PORT = test_port(11737)
JOB = """
import sys
from operator import add
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("shuffle-service-check").getOrCreate()
counts = spark.sparkContext.parallelize(range(1000), 4).map(lambda x: (x % 7, 1)).reduceByKey(add, 4).collect()
print("COUNTS", sorted(counts))
spark.stop()
"""


def test_one_shuffle_service_serves_the_executors_of_every_worker(tmp_path):
    state_dir = tmp_path / "spark"
    state = cluster_up(ClusterConfig(state_dir=state_dir, primary_domains=(("rack-a", 1),), standby_workers=0,
                                     worker_timeout_s=5, shuffle_service_port=SERVICE_PORT, **PORTS))
    try:
        add_worker(state_dir, "rack-a", host=loopback_host(1), port_base=test_port(11710), ui_base=test_port(11810))
        job = tmp_path / "job.py"
        job.write_text(JOB)
        done = subprocess.run(
            [str(spark_home() / "bin" / "spark-submit"), "--master", state.master_url("primary"),
             "--total-executor-cores", "2", "--conf", "spark.shuffle.service.enabled=true",
             "--conf", f"spark.shuffle.service.port={SERVICE_PORT}", "--conf", "spark.ui.enabled=false", str(job)],
            capture_output=True, text=True, timeout=300, env=spark_env({"PYSPARK_PYTHON": sys.executable}))
        assert done.returncode == 0, done.stderr[-3000:]
        assert "COUNTS [(0, 143), (1, 143), (2, 143), (3, 143), (4, 143), (5, 143), (6, 142)]" in done.stdout
        first = state.workers("primary")[0]
        log = open(first.log).read()
        assert f"Starting shuffle service on port {SERVICE_PORT}" in log
        registered = set(re.findall(r"Registered executor \S*\[appId=[^,]+,execId=(\d+)\]", log))
        assert registered == {"0", "1"}, log[-3000:]  # the executor on 127.0.0.2 registered with it too
    finally:
        cluster_down(state_dir)
