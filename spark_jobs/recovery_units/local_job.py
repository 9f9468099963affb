"""Short local Spark jobs of a units deployment, each in a process of its own: the shape analysis at deploy
time (:mod:`.shapes`) and the failure-free reference of a verification (:mod:`.reference`).

Problem: the callers are the CLI, Airflow workers and tests, which must not host a JVM (a session would
outlive the call, or collide with one the caller already has). So a job is ``python -m <module> ...`` with
a ``local[1]`` session (no UI, UTC, one shuffle partition), writing its result as JSON to ``--out``:
``{"result": ...}``, or ``{"error": "..."}`` for bad input, which :func:`run_local_job` raises again as
one :class:`~ft_core.errors.InputError` line in the caller; any other failure is an ExternalError naming
the job's log.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ft_core.errors import ExternalError, InputError
from spark_jobs.runtime.driver_address import use_driver_address


def local_session(name: str):
    from pyspark.sql import SparkSession

    use_driver_address()  # the one rule for drivers ftops starts: loopback unless SPARK_LOCAL_HOSTNAME names the host
    spark = (SparkSession.builder.appName(name).master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_local_job(module: str, args: list[str], out: Path, log: Path, timeout_s: float = 900.0) -> Any:
    """Run ``python -m module args --out OUT`` to completion; its result (InputError for its bad input)."""
    from spark_jobs.cluster.standalone import spark_env

    out.unlink(missing_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    env = spark_env({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
    with log.open("w") as fh:
        proc = subprocess.run([sys.executable, "-m", module, *map(str, args), "--out", str(out)], stdout=fh,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, timeout=timeout_s,
                              cwd=str(Path(__file__).resolve().parents[2]))
    doc = json.loads(out.read_text()) if out.exists() else {}
    if "error" in doc:
        raise InputError(doc["error"])
    if proc.returncode != 0 or "result" not in doc:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-8:])
        raise ExternalError(f"{module} failed (exit {proc.returncode}); see {log}:\n{tail}")
    return doc["result"]


def job_main(out: Path, job: Callable[[], Any]) -> int:
    """Run ``job`` and write its result (or its InputError) to ``out``; exit status 0, 2 or 1."""
    try:
        result = job()
    except InputError as exc:
        out.write_text(json.dumps({"error": str(exc)}))
        return 2
    out.write_text(json.dumps({"result": result}, default=str))
    return 0
