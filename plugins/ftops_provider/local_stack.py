"""The whole local stack on the embedded defaults: PostgreSQL, the Spark clusters, a running job and Airflow.

``up`` starts what is not running yet (PostgreSQL from the system binaries, the primary and standby
Spark standalone clusters of ``spark_jobs.cluster.standalone``, the four Airflow components of
:class:`~ftops_provider.local_airflow.LocalAirflow`), applies the history-store migrations, registers
the sample jobs (the ``topk`` and ``incidents`` workloads, topologies emitted by their own specs, with
deployments under ``$FTOPS_HOME/jobs/``) and starts the ``topk`` job: its seeded input generator and its
primary (through ftops's detached launcher, as the DAGs resubmit it); its replica is started by
``ftops_profile_and_plan`` from the plan it computes, and started again by ``up`` after a ``down`` (the plan
the history store says runs). ``down`` stops all of it, also after a crash
(every part keeps its pids in its own state folder). ``trigger`` runs a DAG through Airflow's REST API
and waits for its end, as a user clicking "Trigger" would. Everything lives under ``$FTOPS_HOME``
(:mod:`ft_core.home`: ``.state/`` in a checkout).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ft_core.errors import InputError
from ft_core.home import ftops_home
from ft_core.store.connection import connect
from ft_core.store.embedded import EmbeddedPostgres
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from ftops_provider.local_airflow import LocalAirflow
from spark_jobs.runtime.processes import same_process, signal_group, start_time

# The demo's jobs are test jobs: their plans and drills apply at once (no approval waits in a demo).
SAMPLE_JOBS = (
    JobSpec(name="topk", workload="topk", replication_budget=4, max_recovery_s=180, test_job=True, replica_cooldown_s=0,
            primary_master="spark://127.0.0.1:7077", standby_master="spark://127.0.0.1:7078"),
    JobSpec(name="incidents", workload="incidents", replication_budget=6, max_recovery_s=180, test_job=True,
            replica_cooldown_s=0, primary_master="spark://127.0.0.1:7077", standby_master="spark://127.0.0.1:7078"),
)
RUNNING_JOB = "topk"  # the sample job whose streams the stack runs (two cores hold one job comfortably)
SAMPLE_PARAMS = {"topk": ["rate=100", "window_s=4", "slide_s=2", "watermark_s=1", "p1=4"],
                 "incidents": ["rate=100", "window_s=4", "slide_s=2", "watermark_s=1", "p1=4"]}


def stack_connections(db_url: str, masters: dict[str, str] | None = None) -> dict[str, str]:
    """The Airflow connections ftops's DAGs use, as ``AIRFLOW_CONN_*`` environment variables: the history
    store, each pool's master for spark-submit (``spark_primary``, ``spark_standby``) and each master's web
    UI for the deferred waits (``ftops_spark_master``, ``ftops_spark_standby``). ``masters``: as a job
    deployment names them (default: the local stack's loopback cluster)."""
    from urllib.parse import urlparse

    from spark_jobs.cluster.standalone import local_masters

    m = masters or local_masters()

    def spark(url: str) -> str:
        host, port = url.removeprefix("spark://").rsplit(":", 1)
        return json.dumps({"conn_type": "spark", "host": f"spark://{host}", "port": int(port)})

    def ui(web: str, master: str) -> str:
        where = urlparse(web)
        return json.dumps({"conn_type": "ftops_spark_master", "host": where.hostname, "port": where.port,
                           "extra": {"master_url": master}})

    return {"AIRFLOW_CONN_FTOPS_DB": db_url,
            "AIRFLOW_CONN_SPARK_PRIMARY": spark(m["primary_master"]), "AIRFLOW_CONN_SPARK_STANDBY": spark(m["standby_master"]),
            "AIRFLOW_CONN_FTOPS_SPARK_MASTER": ui(m["primary_ui"], m["primary_master"]),
            "AIRFLOW_CONN_FTOPS_SPARK_STANDBY": ui(m["standby_ui"], m["standby_master"])}


@dataclass
class LocalStack:
    state: Path = field(default_factory=ftops_home)
    airflow_port: int = 8080
    db_port: int = 5433
    progress: object = field(default=lambda _: None)
    # "namespaces": every Spark daemon on a host of its own (spark_jobs.cluster.netns, root only); None: the
    # network of the clusters already running, loopback when starting them
    network: str | None = None

    @property
    def postgres(self) -> EmbeddedPostgres:
        return EmbeddedPostgres(self.state / "postgres", self.db_port)

    @property
    def airflow(self) -> LocalAirflow:
        return LocalAirflow(home=self.state / "airflow-local", port=self.airflow_port)

    @property
    def spark_state(self) -> Path:
        return self.state / "spark"

    def connections(self) -> dict[str, str]:
        """Airflow connections as environment variables of the Airflow processes (never written to disk)."""
        # the demo triggers its runs itself: no scheduled run may start beside them (FTOPS_SCHEDULES)
        return {**stack_connections(self.postgres.url(), self.masters()), "FTOPS_DATABASE_URL": self.postgres.url(),
                "FTOPS_SCHEDULES": "manual"}

    def _cluster(self):
        """The stack's Spark clusters' state (None: not started)."""
        from spark_jobs.cluster.standalone import ClusterState

        state = ClusterState.load(self.spark_state.resolve())
        return state if state is not None and state.processes else None

    def clusters_started(self) -> bool:
        """Whether the stack's Spark clusters were started (and not stopped by ``down``): their state is recorded."""
        return self._cluster() is not None

    def masters(self) -> dict[str, str]:
        """The masters and web UIs of the stack's clusters, as a job deployment names them."""
        from spark_jobs.cluster.standalone import local_masters

        state = self._cluster()
        return local_masters() if state is None else state.masters()

    def spark_network(self) -> str:
        """Where the stack's Spark daemons run (``namespaces``: hosts of their own, or ``loopback``), or will when
        :meth:`up` starts them: the running clusters', else the network asked for, else loopback."""
        state = self._cluster()
        if state is None:
            return self.network or "loopback"
        return "namespaces" if state.network else "loopback"

    def up(self) -> None:
        from spark_jobs.cluster.standalone import ClusterConfig, cluster_up

        postgres = self.postgres
        self.progress(f"starting PostgreSQL (embedded, {postgres.host}:{postgres.port})")
        postgres.start()
        network = self.spark_network()
        if self._cluster() is None:
            self.progress(f"starting the Spark clusters (primary: rack-a, rack-b; standby) on {network}")
            cluster_up(ClusterConfig(state_dir=self.spark_state, network=network))
        elif self.network and self.network != network:
            raise InputError(f"--network {self.network}: the stack's Spark clusters already run on {network}; "
                             "`ftops stack down` first")
        self.register_sample_jobs()
        self.start_running_job()
        if not any(self.airflow.alive().values()):
            self.progress(f"starting Airflow (api-server, scheduler, dag-processor, triggerer) on port {self.airflow_port}")
            self.airflow.up(extra_env=self.connections(), progress=self.progress)

    def down(self) -> list[str]:
        from spark_jobs.cluster.standalone import cluster_down

        stopped = [f"airflow {c}" for c in self.airflow.down()]
        stopped += self.stop_running_job()
        stopped += [f"spark {p}" for p in cluster_down(self.spark_state)]
        if self.postgres.running() and self.postgres.stop():
            stopped.append("postgres")
        return stopped

    def deployment(self, job: JobSpec):
        from spark_jobs.runtime.job_streams import JobDeployment

        state = self._cluster()  # namespaces: executors call drivers back at the gateway (driver_confs)
        return JobDeployment(pipeline=job.workload, root=str((self.state / "jobs" / job.name).resolve()),
                             params=SAMPLE_PARAMS[job.workload], trigger_s=2.0, cluster_state=str(self.spark_state.resolve()),
                             spark_conf=state.driver_confs() if state else {}, **self.masters())

    @contextmanager
    def store(self) -> Iterator[HistoryStore]:
        """The stack's history store, on a connection closed afterwards."""
        conn = connect(self.postgres.url())
        try:
            yield HistoryStore(conn)
        finally:
            conn.close()

    def register_sample_jobs(self) -> list[str]:
        from spark_jobs.pipeline.loading import load_workload

        with self.store() as store:
            upgrade(store.conn)
            for job in SAMPLE_JOBS:
                dep = self.deployment(job)
                store.register_job(job.model_copy(update={"deployment": dep.model_dump(), "primary_master": dep.primary_master,
                                                          "standby_master": dep.standby_master}))
                store.save_topology(job.name, load_workload(job.workload, dep.params).topology(name=job.name).to_document())
        return [j.name for j in SAMPLE_JOBS]

    # -- the running sample job ------------------------------------------------------------
    @property
    def _feed_pid_file(self) -> Path:
        return self.state / "jobs" / RUNNING_JOB / "feed.pid"

    def _feed_record(self) -> tuple[int, float | None] | None:
        """The input generator's (pid, start time); a file of an older version holds the pid alone."""
        try:
            doc = json.loads(self._feed_pid_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return (doc, None) if isinstance(doc, int) else (int(doc["pid"]), doc.get("started"))

    def _feed_running(self) -> bool:
        record = self._feed_record()
        return record is not None and same_process(*record)

    def start_running_job(self) -> None:
        """The sample job's input generator, its primary and the replica of its applied plan, if it has one
        (idempotent: nothing runs twice)."""
        import subprocess
        import sys

        from spark_jobs.runtime.detached_submit import submit_stream
        from spark_jobs.runtime.job_streams import primary_app_name, primary_run_argv, replica_app_name, replica_run_argv

        dep = self.deployment(next(j for j in SAMPLE_JOBS if j.name == RUNNING_JOB))
        dep.input.mkdir(parents=True, exist_ok=True)
        if not self._feed_running():
            self.progress(f"starting the {RUNNING_JOB} input generator ({dep.input})")
            cmd = [sys.executable, "-m", "spark_jobs.cli.workload", "generate", "--pipeline", dep.pipeline, "--input", str(dep.input),
                   "--realtime", *[a for p in dep.params for a in ("--param", p)]]
            with (self.state / "jobs" / RUNNING_JOB / "feed.log").open("a") as log:
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, cwd=self.state)
            self._feed_pid_file.write_text(json.dumps({"pid": proc.pid, "started": start_time(proc.pid)}))
        self.progress(f"starting the {RUNNING_JOB} primary on {dep.primary_master} (if it is not running)")
        store_env = {"FTOPS_DATABASE_URL": self.postgres.url()}  # the drivers write their progress there
        submit_stream(primary_app_name(RUNNING_JOB), dep.primary_ui, [str(a) for a in primary_run_argv(dep)],
                      extra_env=store_env)
        with self.store() as store:  # `down` stopped the replica the store says runs: start it again
            plan = store.running_replica_plan(RUNNING_JOB)
        if plan is not None:
            self.progress(f"starting the {RUNNING_JOB} replica of plan #{plan['plan_id']} on {dep.standby_master} "
                          "(if it is not running)")
            argv = replica_run_argv(dep, plan["plan_id"], plan["payload"].get("tasks", []))
            submit_stream(replica_app_name(RUNNING_JOB, plan["plan_id"]), dep.standby_ui, [str(a) for a in argv],
                          extra_env=store_env)

    def stop_running_job(self) -> list[str]:
        """Stop the sample job's streams (primary and every replica) and its generator."""
        import signal

        from spark_jobs.runtime.launch import stop_run

        dep = self.deployment(next(j for j in SAMPLE_JOBS if j.name == RUNNING_JOB))
        stopped = []
        outputs = [dep.primary_output, *sorted((dep.path / "replica").glob("plan-*"))]
        for out in outputs:
            if (out / "_submit.json").exists() and stop_run(out):
                stopped.append(f"stream {out.relative_to(dep.path)}")
        if self._feed_running():
            signal_group(self._feed_record()[0], signal.SIGTERM)
            stopped.append(f"{RUNNING_JOB} input generator")
        self._feed_pid_file.unlink(missing_ok=True)
        return stopped

    # -- Airflow REST ----------------------------------------------------------------------
    def trigger(self, dag_id: str, conf: dict | None = None, timeout_s: float = 900) -> dict:
        """Unpause ``dag_id``, trigger a run with ``conf`` and wait for it to finish; returns the run."""
        return self.airflow.run_dag(dag_id, conf, timeout_s, self.progress)
