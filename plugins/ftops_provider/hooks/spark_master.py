"""SparkMasterHook: a Spark standalone master's state (workers, cores, applications) from its JSON.

Connection (type ``ftops_spark_master``): host (required: a connection without one is refused with its
name, never taken for this machine) and port (default 8090) of the master's web UI; ``extra.master_url``
is the ``spark://`` URL applications use (default ``spark://<host>:7077``).
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook

from ft_core.errors import InputError
from spark_jobs.cluster.master_room import alive_workers, free_cores
from spark_jobs.cluster.web_ui import master_state, post_form


class SparkMasterHook(BaseHook):
    conn_name_attr = "spark_master_conn_id"
    default_conn_name = "ftops_spark_master"
    conn_type = "ftops_spark_master"
    hook_name = "Spark standalone master (ftops)"

    def __init__(self, spark_master_conn_id: str = default_conn_name, timeout_s: float = 10.0):
        super().__init__()
        self.spark_master_conn_id = spark_master_conn_id
        self.timeout_s = timeout_s

    def _connection(self):
        """The Airflow connection; InputError naming it when it has no host."""
        conn = self.get_connection(self.spark_master_conn_id)
        if not conn.host:
            raise InputError(f"Airflow connection {self.spark_master_conn_id!r} has no host: set the host (and port) "
                             "of the Spark master's web UI", field=self.spark_master_conn_id)
        return conn

    def _base_url(self) -> str:
        conn = self._connection()
        return f"http://{conn.host}:{conn.port or 8090}"

    def ui_url(self) -> str:
        """The master web UI's base URL (what the triggers poll)."""
        return self._base_url()

    def master_url(self) -> str:
        """The ``spark://`` URL applications are submitted to (``extra.master_url``, else host:7077)."""
        conn = self._connection()
        return conn.extra_dejson.get("master_url") or f"spark://{conn.host}:7077"

    def master_state(self) -> dict[str, Any]:
        """The master's ``/json/`` document."""
        return master_state(self._base_url(), timeout_s=self.timeout_s)

    def alive_workers(self) -> list[dict[str, Any]]:
        return alive_workers(self.master_state())

    def free_cores(self) -> int:
        return free_cores(self.alive_workers())

    def active_apps(self) -> list[dict[str, Any]]:
        return self.master_state().get("activeapps", [])

    def kill_app(self, app_id: str) -> None:
        """Ask the master to kill an application (its UI's kill endpoint; spark.ui.killEnabled)."""
        post_form(self._base_url() + "/app/kill/", {"id": app_id, "terminate": "true"},
                  what=f"killing application {app_id}", timeout_s=self.timeout_s)
