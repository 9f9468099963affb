"""A DAG run's state follows its leaf tasks only. When a DAG ends in a cleanup or reporting task with
``trigger_rule="all_done"`` (``finish`` of the recovery DAG records failures too), a failure upstream of
it would leave a run that Airflow shows green. :class:`RunFailureWatcher`, downstream of every task with
``one_failed``, is the leaf that fails the run then, as Airflow's own system tests do (their ``watcher``).
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException


class RunFailureWatcher(BaseOperator):
    """Runs only when a task of the run failed (``one_failed``), and fails, naming the failed tasks."""

    ui_color = "#f9d7d7"

    def __init__(self, *, task_id: str = "watcher", **kwargs: Any):
        super().__init__(task_id=task_id, trigger_rule="one_failed", retries=0, **kwargs)

    def execute(self, context: Any) -> None:
        ti = context["ti"]
        states = ti.get_task_states(dag_id=ti.dag_id, run_ids=[ti.run_id]).get(ti.run_id, {})
        failed = sorted(t for t, s in states.items() if s in ("failed", "upstream_failed") and t != self.task_id)
        raise AirflowFailException(f"failed in this run: {', '.join(failed) or 'a task upstream'}; the run is failed")
