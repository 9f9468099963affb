"""The job ``ftops drill run`` drills: its pipeline registered as a job of a history store of the drill's own and
deployed on the drill's private cluster, so the drill engine (:mod:`spark_jobs.drills.engine`) drills it exactly as
it drills any registered job (issue 35, item 6: one engine behind ``drill run``, ``drill job`` and the drill DAG).

Problem: ``drill run`` is a self-contained experiment (a fresh cluster, a seeded input, a replica plan) while the
engine drills a *registered* job: it takes its lease, journals its faults, reads its replica plan and its progress
from the store. The private job bridges the two without a second copy of any drill step:

1. an empty embedded PostgreSQL of its own (:class:`~ft_core.store.embedded.EmbeddedPostgres` in ftops's state
   folder, ``drill-stores/``, on a port the OS picks), migrated to the newest schema, removed when the drill ends
   (the engine writes the experiment report to ``<work>/drills/drill-<id>/experiment.json`` as well);
2. the job registered there (``apply_mode=auto``, a test job) with a :class:`JobDeployment` whose folders are the
   drill's (``<work>/input``, ``<work>/primary``, ``<work>/replica/plan-N``, ...), whose masters are the private
   cluster's and whose Spark confs carry the event log (the replica's cost) and, on a namespace network, where
   executors call the drivers back;
3. the drill's plan stored as the job's replication plan (with its predicted accuracy, when estimated) and recorded
   as applied once its replica runs; an empty plan stores nothing and starts no replica;
4. the primary and the replica submitted detached, as ``ftops job start`` and a plan run submit them
   (:func:`spark_jobs.drills.reconcile.submit_primary`, :func:`~spark_jobs.drills.reconcile.resubmit_replica`),
   their drivers writing their progress to the private store.

Everything it starts is stopped by :meth:`PrivateJob.stop` (the store) and the cluster's own stop (the drivers are
registered in its state).

    # job = PrivateJob("drill-topk", work, state, config, workload); job.start_store(); job.register(tasks, 1.0, None)
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from ft_core.replication.predicted_accuracy import AccuracyEstimate
from spark_jobs.pipeline.definition import Workload
from spark_jobs.runtime.job_streams import JobDeployment, primary_app_name, replica_app_name


def job_name(workload: str) -> str:
    """The private job's name: ``drill-`` and the pipeline's name as an identifier.

    >>> job_name("topk"), job_name("sensor alerts/v2")
    ('drill-topk', 'drill-sensor-alerts-v2')
    """
    return "drill-" + (re.sub(r"[^A-Za-z0-9_]+", "-", workload).strip("-")[:50] or "pipeline")


class PrivateJob:
    """A drill's job, its store and its streams (see the module docstring)."""

    def __init__(self, name: str, work: Path, cluster_state, config, workload: Workload):
        import os
        import time

        from ft_core.home import ftops_home
        from ft_core.store.embedded import EmbeddedPostgres, free_port

        self.name, self.work, self.workload = name, work, workload
        # in ftops's state folder, not the work dir: as root the server runs as the postgres user, who may not
        # reach a work dir inside a private folder (a test's tmp_path)
        state = ftops_home() / "drill-stores" / f"{os.getpid()}-{time.time_ns()}"
        self.server = EmbeddedPostgres(state, free_port())
        self.deployment = _deployment(work, cluster_state, config, workload)
        self.plan_id: int | None = None

    # the store
    def start_store(self) -> None:
        """Start the private store and bring it to the newest schema (once: the engine opens a connection per wait)."""
        from ft_core.store.migrations import upgrade

        self.server.start()
        store = self.store()
        try:
            upgrade(store.conn)
        finally:
            store.conn.close()

    def store(self):
        """A new connection to the private store."""
        from ft_core.store.connection import connect
        from ft_core.store.history import HistoryStore

        return HistoryStore(connect(self.server.url()))

    @property
    def driver_env(self) -> dict[str, str]:
        """What the drivers need to write their progress to the private store."""
        return {"FTOPS_DATABASE_URL": self.server.url()}

    def stop(self) -> None:
        """Stop the store and remove it (the experiment report stays in the work dir)."""
        import shutil

        self.server.stop()
        shutil.rmtree(self.server.state_dir, ignore_errors=True)

    # the job
    def register(self, tasks: list[str], output_fidelity: float, estimate: AccuracyEstimate | None,
                 algorithm: str) -> None:
        """Register the job and store its replication plan (none when ``tasks`` is empty)."""
        from ft_core.store.records import JobSpec

        dep = self.deployment
        spec = JobSpec(name=self.name, workload=dep.pipeline, apply_mode="auto", test_job=True,
                       primary_master=dep.primary_master, standby_master=dep.standby_master,
                       replication_budget=len(tasks), query_priorities=self.workload.queries(),
                       deployment=dep.model_dump())
        store = self.store()
        try:
            store.register_job(spec, changed_by="ftops drill run")
            topology_id = store.save_topology(self.name, self.workload.topology(name=self.name).to_document())
            if tasks:
                digest = hashlib.sha256(json.dumps(sorted(tasks)).encode()).hexdigest()
                self.plan_id = store.save_plan(self.name, "replication", algorithm=algorithm, objective=output_fidelity,
                                               optimal=False, payload={"tasks": sorted(tasks)}, input_hash=digest,
                                               parameters={"budget": len(tasks)}, topology_id=topology_id).plan_id
                if estimate is not None:
                    store.record_predicted_accuracy(self.plan_id, estimate.model_dump(mode="json"))
        finally:
            store.conn.close()

    def submit(self) -> None:
        """Submit the primary and the plan's replica; return once both run with their cores."""
        from spark_jobs.drills.reconcile import resubmit_replica, submit_primary

        dep = self.deployment
        dep.input.mkdir(parents=True, exist_ok=True)
        submit_primary(self.name, dep, self.driver_env, wait=True)
        if self.plan_id is None:
            return
        store = self.store()
        try:
            resubmit_replica(self.name, dep, store.plan(self.plan_id), self.driver_env, wait=True)
            store.record_applied_plan(self.plan_id, self.name, "replica", master_url=dep.standby_master)
        finally:
            store.conn.close()

    # where things are
    @property
    def replica_output(self) -> Path | None:
        return None if self.plan_id is None else self.deployment.replica_output(self.plan_id)

    def app_names(self) -> dict[str, str]:
        """Role -> the Spark application name of each stream."""
        names = {"primary": primary_app_name(self.name)}
        if self.plan_id is not None:
            names["replica"] = replica_app_name(self.name, self.plan_id)
        return names


def _deployment(work: Path, state, config, workload: Workload) -> JobDeployment:
    from spark_jobs.drills.documents import DrillPorts
    from spark_jobs.runtime.event_log import event_log_conf

    events = dict(item.split("=", 1) for item in event_log_conf(work / "events"))  # the replica's cost, afterwards
    conf = {**state.driver_confs(), **events,
            "spark.ui.port": str(DrillPorts.from_base(config.port_base).primary_driver_ui)}  # the replica's: the next
    return JobDeployment(pipeline=workload.ref or config.pipeline, root=str(work), input_dir=str(work / "input"),
                         params=list(config.params), trigger_s=config.trigger_s, primary_cores=config.primary_workers,
                         replica_cores=config.standby_workers, cluster_state=str(work / "spark"),
                         primary_master=state.master_url("primary"), standby_master=state.master_url("standby"),
                         primary_ui=state.master_ui("primary"), standby_ui=state.master_ui("standby"), spark_conf=conf)

