"""ftops_replan: recompute every registered job's replication plan from its latest topology.

Tasks: apply history-store migrations -> list registered jobs -> one planning task per job
(dynamic mapping). Plans go to the history store (connection ``ftops_db``) with this run's id;
an unchanged plan is not stored twice. Nothing heavy happens at import time.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

from ftops_provider.operators.planning import PlanReplicationOperator, UpgradeHistoryOperator

with DAG(
    dag_id="ftops_replan",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["ftops"],
    doc_md=__doc__,
) as dag:
    upgrade = UpgradeHistoryOperator(task_id="upgrade_history")

    @task
    def registered_jobs() -> list[str]:
        from ftops_provider.hooks.history import HistoryStoreHook

        store = HistoryStoreHook().store()
        try:
            return [j["name"] for j in store.jobs()]
        finally:
            store.conn.close()

    jobs = registered_jobs()
    upgrade >> jobs
    PlanReplicationOperator.partial(task_id="plan_replication").expand(job_name=jobs)
