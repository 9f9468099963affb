"""The predicted tentative accuracy of a job's current replication plan (issue 15), in the planning DAG.

After ``plan_replication`` stored the job's plan, :class:`EstimateAccuracyOperator` replays the job's
recent input (its newest ``recent_files`` files per source) through its pipeline, whole and restricted
to the plan's tasks, on a *local* master (``local[2]`` by default: never the job's cluster cores), and
stores the estimate on the plan (:meth:`ft_core.store.accuracy.AccuracyRecords.record_predicted_accuracy`).
A plan-only job (no pipeline ftops runs) or a job without input files yet is skipped, not failed.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator

from ftops_provider.arguments import checked_name
from ftops_provider.hooks.history import HistoryStoreHook


class EstimateAccuracyOperator(BaseOperator):
    """Estimate and store the predicted tentative accuracy of the job's current replication plan."""

    template_fields = ("job_name",)

    def __init__(self, *, job_name: str, recent_files: int = 240, master: str = "local[2]", timeout_s: float = 900.0,
                 ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name, self.recent_files, self.master = job_name, recent_files, master
        self.timeout_s, self.ftops_db_conn_id = timeout_s, ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowSkipException

        from ftops_provider.operators.profiling import job_and_deployment
        from spark_jobs.accuracy.estimator import estimate_accuracy
        from spark_jobs.pipeline.input_files import latest_event_ms

        checked_name(self.job_name)
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            _job, dep = job_and_deployment(store, self.job_name, required=False, attached_ok=True)
            plan = store.current_plan(self.job_name, "replication")
            if dep is None or plan is None or getattr(dep, "kind", "") == "attached":
                raise AirflowSkipException(f"job {self.job_name!r} has no pipeline ftops runs or no replication plan: "
                                           "nothing to replay")
            workload = dep.workload()
            if any(latest_event_ms(s, dep.input) is None for s in workload.stream_sources()):
                raise AirflowSkipException(f"job {self.job_name!r}: no input in {dep.input} yet")
            estimate = estimate_accuracy(workload, [plan["payload"].get("tasks", [])], input_dir=dep.input,
                                         recent_files=self.recent_files, master=self.master, timeout_s=self.timeout_s)[0]
            store.record_predicted_accuracy(plan["plan_id"], estimate.model_dump(mode="json"))
        finally:
            store.conn.close()
        self.log.info("job %s: plan #%s predicted accuracy %s (OF %.3f)", self.job_name, plan["plan_id"],
                      estimate.spread(), plan["objective"])
        return {"plan_id": plan["plan_id"], "predicted_accuracy": estimate.mean, "stdev": estimate.stdev,
                "windows": estimate.windows}
