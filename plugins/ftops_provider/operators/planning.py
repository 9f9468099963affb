"""Operators that keep the history store current and recompute replication plans."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator

from ftops_provider.arguments import checked_name
from ftops_provider.hooks.history import HistoryStoreHook


class UpgradeHistoryOperator(BaseOperator):
    """Apply pending history-store migrations (idempotent; safe when several DAG runs start at once)."""

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", **kwargs):
        super().__init__(**kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> list[int]:
        applied = HistoryStoreHook(self.ftops_db_conn_id).upgrade()
        self.log.info("history store migrations applied now: %s", applied or "none (up to date)")
        return applied


class PlanReplicationOperator(BaseOperator):
    """Recompute a job's replication plan from its latest topology and store it with this run's id.

    ``exact`` when the topology has at most ``exact_max_tasks`` tasks (proven optimum within
    ``exact_time_limit`` s), ``structure-aware`` otherwise. A plan identical to the current one is
    not stored again. Returns the plan's id, whether it was new, its OF and the OF gain.
    """

    template_fields = ("job_name",)

    def __init__(self, *, job_name: str, exact_max_tasks: int = 200, exact_time_limit: float = 60.0,
                 ftops_db_conn_id: str = "ftops_db", **kwargs):
        super().__init__(**kwargs)
        self.job_name = job_name
        self.exact_max_tasks = exact_max_tasks
        self.exact_time_limit = exact_time_limit
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        checked_name(self.job_name)
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            return self._plan(store, context["run_id"])
        finally:
            store.conn.close()

    def _plan(self, store, run_id: str) -> dict[str, Any]:
        # The planners (numpy, scipy, HiGHS) load here, not when the DAG file is parsed.
        from ft_core.replication.plan import fidelity_under
        from ft_core.replication.planners import plan_replication
        from ft_core.topology.document import parse_topology
        from ft_core.topology.task_graph import build_task_graph

        job = store.job(self.job_name) if store.has_job(self.job_name) else None  # one row, not the fleet's list
        doc = store.latest_topology(self.job_name)
        if job is None or doc is None:
            raise ValueError(f"job {self.job_name!r} is not registered with a topology (ftops job register)")
        graph = build_task_graph(parse_topology(doc))
        algorithm = "exact" if graph.n <= self.exact_max_tasks else "structure-aware"
        plan = plan_replication(graph, job["replication_budget"], algorithm, time_limit=self.exact_time_limit)
        previous = store.current_plan(self.job_name, "replication")
        stored = store.save_plan(
            self.job_name, "replication", algorithm=plan.algorithm, objective=plan.output_fidelity, optimal=plan.optimal,
            payload=plan.model_dump(mode="json"), input_hash=plan.input_hash,
            parameters={"budget": plan.budget, "time_limit": self.exact_time_limit},
            topology_id=store.save_topology(self.job_name, doc), dag_run_id=run_id,
        )
        # on the same rates: the previous plan's stored objective used the rates of its own day
        gain = plan.output_fidelity - (fidelity_under(graph, previous["payload"].get("tasks", [])) if previous else 0.0)
        self.log.info("job %s: %s plan OF %.4f (%s), gain %.4f, %s", self.job_name, plan.algorithm, plan.output_fidelity,
                      "optimal" if plan.optimal else "heuristic", gain, "stored" if stored.created else "unchanged")
        return {"plan_id": stored.plan_id, "created": stored.created, "output_fidelity": plan.output_fidelity, "gain": gain}
