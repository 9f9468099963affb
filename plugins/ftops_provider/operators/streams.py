"""(Re)submitting and stopping long-running streaming applications from Airflow.

:class:`StreamSubmitOperator` is a ``SparkSubmitOperator`` whose application is ftops's launcher
(``spark_jobs/runtime/detached_submit.py``): spark-submit runs the launcher, which starts the real streaming driver
in a session of its own and returns once the master lists it RUNNING. Why not submit the stream directly:

- PySpark applications on a standalone master run in client mode only, so the driver would live inside the
  task's spark-submit for the stream's lifetime, holding a worker slot for weeks and dying with the task;
- the provider's ``durable`` option (Airflow 3.3) reconnects to a *cluster-mode* driver on retry, which
  does not apply to client mode, and standalone cluster-mode status polling has open bugs (#71881,
  #46334, ecosystem notes section 2.4).

Retries never submit twice: every submission has a unique application name (job, role, plan or interval)
and both this operator and the launcher skip the submission when the master already runs that name. An
Airflow kill of the task cannot orphan or stop the stream: it is outside the task's process group, and
its process group is recorded in the job's output folder (and the local cluster state) for
:class:`StopStreamOperator` and ``ftops cluster down``. The replaced application is stopped only after
the new one runs (the DAG orders the tasks that way).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseOperator

from spark_jobs.runtime.driver_address import driver_address_env

# The launcher is a file spark-submit runs: the module's file wherever the package is installed (site-packages,
# or the checkout of an editable install); ftops must be installed in the Python it runs with (PYSPARK_PYTHON).
LAUNCHER = importlib.util.find_spec("spark_jobs.runtime.detached_submit").origin


def _launcher_defaults(kwargs: dict) -> None:
    """The launcher needs no Spark UI, and its child spark-submit must find this environment's Python."""
    kwargs.setdefault("name", "ftops-launcher")
    kwargs.setdefault("conf", {"spark.ui.enabled": "false"})
    kwargs.setdefault("driver_memory", "256m")
    kwargs.setdefault("env_vars", {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                                   **driver_address_env()})


def store_env(operator: SparkSubmitOperator, ftops_db_conn_id: str, what: str) -> dict[str, str]:
    """``FTOPS_DATABASE_URL`` for the drivers ``operator`` submits, from the history store's connection: they write
    their micro-batches' progress there, where the triggers read it (``spark_jobs.runtime.progress_store``). Not on
    YARN or Kubernetes, where the provider passes env_vars as ``--conf`` on the command line."""
    from airflow.sdk.log import mask_secret

    from ftops_provider.hooks.history import HistoryStoreHook

    hook = operator._get_hook()
    if hook._is_yarn or hook._is_kubernetes:  # the provider's own flags: no public way to ask
        operator.log.warning("%s: the driver gets no history-store URL on this master (it would be on the command "
                             "line); its progress is read from its folders", what)
        return {}
    try:
        dsn = HistoryStoreHook(ftops_db_conn_id).dsn()
    except Exception as exc:  # noqa: BLE001 -- a stream runs without it; the waits then read its folders
        operator.log.warning("%s: no history-store URL for the driver (%s); its progress is read from its folders",
                             what, exc)
        return {}
    mask_secret(dsn)
    return {"FTOPS_DATABASE_URL": dsn}


class StreamSubmitOperator(SparkSubmitOperator):
    """Submit a streaming workload run detached (see the module docstring); returns the application.

    :param app_name: the unique application name (idempotency key).
    :param run_args: the ``ftops workload run`` arguments (``spark_jobs.runtime.job_streams`` builds them).
    :param master_ui: the master's web UI URL, polled until the application runs.
    """

    template_fields = (*SparkSubmitOperator.template_fields, "app_name", "run_args", "master_ui")

    def __init__(self, *, app_name: str, run_args: list[str], master_ui: str, conn_id: str = "spark_primary",
                 ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        _launcher_defaults(kwargs)
        super().__init__(application=LAUNCHER, conn_id=conn_id, **kwargs)
        self.app_name = app_name
        self.run_args = run_args
        self.master_ui = master_ui
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.runtime.detached_submit import active_apps

        running = active_apps(self.master_ui, self.app_name)
        if running:
            self.log.info("%s already runs as %s (a retry, or submitted before): not submitting again",
                          self.app_name, running[0]["id"])
            return {"app_id": running[0]["id"], "name": self.app_name, "submitted": False}
        self.application_args = ["stream", "--name", self.app_name, "--master-ui", self.master_ui, "--no-wait",
                                 "--", *map(str, self.run_args)]
        self.env_vars = {**(self.env_vars or {}), **store_env(self, self.ftops_db_conn_id, self.app_name)}
        super().execute(context)
        self.log.info("%s started; a deferred SparkAppSensor waits until it runs", self.app_name)
        return {"app_id": None, "name": self.app_name, "submitted": True}


class UnitsStageSubmitOperator(SparkSubmitOperator):
    """Start the applications of one stage of a staged recovery through the same launcher (returns the stage)."""

    template_fields = (*SparkSubmitOperator.template_fields, "units_dir", "schedule_path", "stage", "prefix")

    def __init__(self, *, units_dir: str, schedule_path: str, stage: int | str, prefix: str = "recovery",
                 conn_id: str = "spark_primary", ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        _launcher_defaults(kwargs)
        super().__init__(application=LAUNCHER, conn_id=conn_id, **kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id
        self.units_dir = units_dir
        self.schedule_path = schedule_path
        self.stage = stage
        self.prefix = prefix

    def execute(self, context: Any) -> None:
        self.application_args = ["units-stage", "--dir", str(self.units_dir), "--schedule", str(self.schedule_path),
                                 "--stage", str(self.stage), "--prefix", self.prefix]
        self.env_vars = {**(self.env_vars or {}), **store_env(self, self.ftops_db_conn_id, f"stage {self.stage}")}
        super().execute(context)


class StopStreamOperator(BaseOperator):
    """Stop a detached run gracefully (between micro-batches) by its output folder; a run that is not
    running any more is fine (idempotent). Returns whether something was stopped."""

    template_fields = ("output_dir",)

    def __init__(self, *, output_dir: str, timeout_s: float = 60.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.output_dir = output_dir
        self.timeout_s = timeout_s

    def execute(self, context: Any) -> bool:
        from spark_jobs.runtime.launch import stop_run

        if not self.output_dir or not (Path(self.output_dir) / "_submit.json").exists():
            self.log.info("nothing to stop at %r", self.output_dir)
            return False
        stopped = stop_run(Path(self.output_dir), timeout_s=self.timeout_s)
        self.log.info("%s %s", self.output_dir, "stopped" if stopped else "was not running")
        return stopped
