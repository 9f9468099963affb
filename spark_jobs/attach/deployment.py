"""Where an attached job lives and how ftops (re)submits it: the ``deployment`` document of a job registered by
``ftops job submit`` (issue 34, items 1 and 4).

An attached job is the user's unchanged PySpark application, submitted through ftops's launcher
(:mod:`spark_jobs.attach.launcher`). Its deployment keeps the submit line (the application file and its
arguments, the master, the Spark confs) so ftops can start it again from its checkpoint (the checkpoint is the
application's own: wherever its code puts it), and ftops's folder for the job (``<root>/control``: the driver's
records and a drill's requests; ``<root>/logs``: each submission's log). Secrets are never stored: a conf whose
key names a secret (password, secret, token, credential, key) is refused as ``--conf`` and given as
``--conf-env KEY=ENV_VAR`` instead, whose value is read from the environment at every submission (an Airflow
worker gets it from a connection or a secret backend the same way).

    >>> dep = AttachedDeployment(app="/apps/clicks.py", root="/jobs/clicks", master="spark://10.0.0.2:7077",
    ...                          conf={"spark.executor.cores": "1"}, conf_env={"spark.hadoop.fs.s3a.secret.key": "S3_SECRET"})
    >>> dep.submit_argv("clicks", {"S3_SECRET": "x"})[1:7]
    ['--master', 'spark://10.0.0.2:7077', '--conf', 'spark.executor.cores=1', '--conf', 'spark.hadoop.fs.s3a.secret.key=x']
    >>> dep.shown_argv("clicks")[5:7]
    ['--conf', 'spark.hadoop.fs.s3a.secret.key=$S3_SECRET']
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ft_core.errors import InputError

SECRET_KEY = re.compile(r"(password|passwd|secret|token|credential|[._]key$|apikey)", re.IGNORECASE)
LAUNCHER = importlib.util.find_spec("spark_jobs.attach.launcher").origin


class AttachedDeployment(BaseModel):
    """The deployment document of an attached job."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["attached"] = "attached"
    app: str = Field(description="the application file, absolute (what the user gives spark-submit)")
    app_args: list[str] = Field(default_factory=list)
    root: str = Field(description="ftops's folder for the job: control/ (records, requests), logs/")
    master: str | None = Field(default=None, description="spark-submit --master (None: spark-submit's own default)")
    primary_ui: str | None = Field(default=None, description="the master's web UI (a standalone master), if known")
    conf: dict[str, str] = Field(default_factory=dict, description="Spark confs of the submission")
    conf_env: dict[str, str] = Field(default_factory=dict, description="conf key -> environment variable with its value")
    domains: dict[str, str] | None = Field(default=None, description="worker host -> failure domain")
    cluster_state: str | None = Field(default=None, description="a local cluster ftops started (drills fail its domains)")

    @field_validator("conf")
    @classmethod
    def _no_secrets(cls, conf: dict[str, str]) -> dict[str, str]:
        secret = sorted(k for k in conf if SECRET_KEY.search(k))
        if secret:
            raise ValueError(f"{secret[0]!r} names a secret: give it as --conf-env {secret[0]}=ENV_VAR (read from the "
                             "environment at every submission, never stored)")
        return conf

    # what the drill engine and the cluster seam ask of every deployment
    @property
    def path(self) -> Path:
        return Path(self.root)

    @property
    def control(self) -> Path:
        return self.path / "control"

    @property
    def primary_output(self) -> Path:
        """Where the driver keeps its records and reads a drill's requests (``_run.json``, ``_faults/``)."""
        return self.control

    @property
    def standby_ui(self) -> None:
        return None

    def submit_argv(self, job: str, env: dict[str, str] | None = None) -> list[str]:
        """The spark-submit command of the job (secrets from ``env``, default this process's environment)."""
        from spark_jobs.cluster.standalone import spark_home

        values = os.environ if env is None else env
        missing = sorted(v for v in self.conf_env.values() if v not in values)
        if missing:
            raise InputError(f"--conf-env: the environment has no {missing[0]} (the value of a secret conf)")
        argv = [str(spark_home() / "bin" / "spark-submit")] + (["--master", self.master] if self.master else [])
        for key, value in [*sorted(self.conf.items()), *sorted((k, values[v]) for k, v in self.conf_env.items())]:
            argv += ["--conf", f"{key}={value}"]
        return [*argv, LAUNCHER, "--job", job, "--control", str(self.control), "--", self.app, *self.app_args]

    def shown_argv(self, job: str) -> list[str]:
        """The command as logs and records show it: secrets as their variable's name."""
        shown = self.model_copy(update={"conf_env": {}}).submit_argv(job)
        secrets = [a for k, v in sorted(self.conf_env.items()) for a in ("--conf", f"{k}=${v}")]
        i = shown.index(LAUNCHER)
        return [*shown[:i], *secrets, *shown[i:]]


def submit(job: str, dep: AttachedDeployment, extra_env: dict[str, str] | None = None) -> int:
    """Start the job detached (a session of its own: it outlives the submitting process), recorded in
    ``control/_submit.json`` like ftops's own runs; returns its process group."""
    from spark_jobs.cluster.standalone import spark_env
    from spark_jobs.runtime.processes import start_time

    env = spark_env({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, **(extra_env or {})})
    env.pop("SPARK_NO_DAEMONIZE", None)
    argv = dep.submit_argv(job, env)
    logs = dep.path / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    dep.control.mkdir(parents=True, exist_ok=True)
    log = logs / f"driver-{time.time():.3f}.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    (dep.control / "_submit.json").write_text(json.dumps({"pgid": proc.pid, "started": start_time(proc.pid),
                                                          "log": str(log), "command": dep.shown_argv(job)}, indent=2))
    return proc.pid
