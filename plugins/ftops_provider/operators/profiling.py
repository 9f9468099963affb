"""Profiling running jobs and planning what-if recoveries, into the history store.

- :class:`ProfileJobOperator`: task rates of a running job from its primary's per-micro-batch metrics
  (``spark_jobs.runtime.job_streams.measured_topology``), stored as a ``rates`` profile and a topology version,
  which :class:`~ftops_provider.operators.planning.PlanReplicationOperator` then plans from; a job
  discovered from a Spark UI (plan-only) is discovered there again (``spark_jobs.discovery.rediscovery``).
- :class:`WhatIfRecoveryOperator`: for each failure domain of the job's primary pool, the failure timeline
  (``ft_core.simulation.failure_timeline``) if that domain failed now under the current replication plan: tentative
  output fidelity, the staged restart as replacement nodes arrive, per-query recovery times; stored as a
  ``recovery`` plan per domain (objective: the priority-weighted recovery time in seconds).
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator

from ftops_provider.arguments import checked_name
from ftops_provider.hooks.history import HistoryStoreHook


def job_and_deployment(store, job_name: str, required: bool = True, attached_ok: bool = False):
    """The registered job's row and its deployment document (validated; None when the job has none and
    ``required`` is off: a job registered with a topology only, whose streams ftops does not manage). An attached
    job's deployment (``ftops job submit``) only where the caller handles it (``attached_ok``): every other step
    needs a pipeline ftops runs, and says so."""
    from ft_core.errors import InputError
    from spark_jobs.attach.drill_support import is_attached
    from spark_jobs.runtime.job_streams import parse_deployment

    job = store.job(job_name)
    if not job.get("deployment") and not required:
        return job, None
    dep = parse_deployment(job.get("deployment"), job_name)
    if is_attached(dep) and not attached_ok:
        raise InputError(f"job {job_name!r} is attached (submitted with `ftops job submit`; ftops did not write it): this "
                         "step needs a pipeline ftops runs. ftops profiles it from its Spark UI, plans for it "
                         "(recommend-only), drills and restarts it")
    return job, dep


class ProfileJobOperator(BaseOperator):
    """Measure a running job's task rates and store them (profile + topology version); returns their ids."""

    template_fields = ("job_name",)

    def __init__(self, *, job_name: str, last_batches: int = 60, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name = job_name
        self.last_batches = last_batches
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.attach.drill_support import is_attached
        from spark_jobs.attach.ui_profile import profile_attached
        from spark_jobs.discovery.rediscovery import rediscover_job
        from spark_jobs.runtime.job_streams import measured_topology

        checked_name(self.job_name)
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            _, dep = job_and_deployment(store, self.job_name, required=False, attached_ok=True)
            if is_attached(dep):  # its topology and rates from its own driver's UI
                found = profile_attached(store, self.job_name, dep, self.last_batches, context["run_id"])
                self.log.info("job %s (attached): rates %s", self.job_name, found["source"])
                return found
            if dep is None and (found := rediscover_job(store, self.job_name, self.last_batches, context["run_id"])):
                self.log.info("job %s (discovered, plan-only): rates %s", self.job_name, found["source"])
                return found
            if dep is None:
                self.log.info("job %s has no deployment: planning from its stored topology", self.job_name)
                return {"profile_id": None, "topology_id": None, "source": "stored topology (no deployment)"}
            doc, source = measured_topology(dep, self.job_name, self.last_batches)
            topology_id = store.save_topology(self.job_name, doc)
            rates = {t: v["rate"] for t, v in doc["tasks"].items()}
            profile_id = store.save_profile(self.job_name, "rates", {"rates": rates, "source": source,
                                                                      "topology_id": topology_id}, context["run_id"])
        finally:
            store.conn.close()
        self.log.info("job %s: rates %s; topology version %s", self.job_name, source, topology_id)
        return {"profile_id": profile_id, "topology_id": topology_id, "source": source}


def task_domains(task_ids: list[str], domains: list[str]) -> dict[str, str]:
    """The model of where a job's tasks run: key groups spread evenly over the primary's failure domains
    (Spark places partitions on whatever executors it has; with executors in every domain, each domain
    holds about an equal share of every operator's key groups)."""
    by_op: dict[str, list[str]] = {}
    for t in task_ids:
        by_op.setdefault(t.split("[")[0], []).append(t)
    return {t: domains[i % len(domains)] for tasks in by_op.values() for i, t in enumerate(tasks)}


class WhatIfRecoveryOperator(BaseOperator):
    """Simulate the failure of each of the job's failure domains now; store one recovery plan per domain."""

    template_fields = ("job_name",)

    def __init__(self, *, job_name: str, replacement_after_s: float = 120.0, detection_s: float = 10.0,
                 ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.job_name = job_name
        self.replacement_after_s = replacement_after_s
        self.detection_s = detection_s
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        checked_name(self.job_name)
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            return self._plan(store, context["run_id"])
        finally:
            store.conn.close()

    def _domains(self, dep) -> list[str]:
        from pathlib import Path

        from spark_jobs.cluster.standalone import ClusterState

        state = ClusterState.load(Path(dep.cluster_state).resolve()) if dep and dep.cluster_state else None
        found = sorted({w.domain for w in state.workers("primary") if w.domain}) if state else []
        return found or ["rack-a", "rack-b"]

    def _plan(self, store, run_id: str) -> dict[str, Any]:
        from ft_core.input_hash import input_hash
        from ft_core.simulation.failure_timeline import Arrival, TimelineParams, simulate
        from ft_core.topology.document import parse_topology
        from ft_core.topology.task_graph import build_task_graph

        _, dep = job_and_deployment(store, self.job_name, required=False, attached_ok=True)
        doc = store.latest_topology(self.job_name)
        if doc is None:  # an attached job whose driver's UI has not been read yet
            return {}
        graph = build_task_graph(parse_topology(doc))
        plan = store.current_plan(self.job_name, "replication")
        replicated = {graph.index[t] for t in (plan["payload"].get("tasks", []) if plan else [])}
        domains = self._domains(dep)
        where = task_domains(graph.task_ids, domains)
        out = {}
        for domain in domains:
            failed = {graph.index[t] for t, d in where.items() if d == domain}
            cores = getattr(dep, "primary_cores", len(domains))  # an attached job's: as many as it has domains
            lost_nodes = max(1, round(len(failed) / max(1, graph.n) * cores))
            params = TimelineParams(detection_s=self.detection_s, checkpoint_interval_s=getattr(dep, "trigger_s", 10.0),
                                    arrivals=[Arrival(size=1.0, at_s=self.replacement_after_s)] * lost_nodes)
            timeline = simulate(graph, replicated, failed, params)
            objective = timeline.priority_weighted_recovery_s if timeline.priority_weighted_recovery_s is not None else -1.0
            stored = store.save_plan(
                self.job_name, "recovery", algorithm=f"what-if {timeline.policy}", objective=objective, optimal=False,
                payload={"domain": domain, "timeline": timeline.model_dump(mode="json")},
                input_hash=input_hash({"domain": domain, "topology": doc, "replicated": sorted(replicated),
                                       "params": params.model_dump(mode="json")}),
                parameters={"domain": domain, "replacement_after_s": self.replacement_after_s,
                            "replication_plan_id": plan["plan_id"] if plan else None},
                topology_id=store.save_topology(self.job_name, doc), dag_run_id=run_id)
            out[domain] = {"plan_id": stored.plan_id, "tentative_output_fidelity": timeline.tentative_output_fidelity,
                           "priority_weighted_recovery_s": timeline.priority_weighted_recovery_s}
            self.log.info("job %s, if %s failed now: tentative OF %.3f, queries back after %s s (weighted)", self.job_name,
                          domain, timeline.tentative_output_fidelity, timeline.priority_weighted_recovery_s)
        return out
