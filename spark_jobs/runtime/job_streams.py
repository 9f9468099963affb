"""Where a registered job's streams live, and the submissions that (re)start them.

Problem: the Airflow DAGs operate on jobs that already run: profile the primary from its metrics,
resubmit the replica with a new plan, drill a failure domain under both. The history store keeps, per
job, a *deployment* document saying where its streams live; this module turns it into paths, unique
application names and the ``ftops workload run`` arguments of each submission, so the CLI, the stack
and the operators agree on one layout:

    <input> (default <root>/input)     the job's input: one folder per file source
    <root>/primary, <root>/primary-ckpt
    <root>/replica/plan-<id>, <root>/replica-ckpt/plan-<id>   one lineage per replication plan

A replica restricted to a new plan is a different query (other key groups), so it gets a new
checkpoint lineage and output folder; application names carry the plan id, which makes each
submission idempotent (a retry finds the application its first try started).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ft_core.errors import InputError
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.loading import load_workload


# Spark confs every stream's driver sets itself (spark_jobs.runtime.run_pipeline.configure)
FTOPS_SETS = frozenset({"spark.sql.shuffle.partitions", "spark.sql.session.timeZone"})


class JobDeployment(BaseModel):
    """The ``deployment`` document of a registered job."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["runnable"] = "runnable"  # written with the pipeline API (an attached job's is AttachedDeployment)
    pipeline: str = Field(description="the pipeline: module.path:attribute, a .py file, or a sample's name")
    root: str = Field(description="folder of the job's outputs and checkpoints (and input, unless input_dir)")
    input_dir: str | None = Field(default=None, description="the job's input folder (default <root>/input)")
    params: list[str] = Field(default_factory=list, description="pipeline parameters key=value")
    trigger_s: float = Field(default=2.0, gt=0)
    primary_cores: int = Field(default=1, ge=1, description="executor cores of the primary (one per executor)")
    replica_cores: int = Field(default=1, ge=1)
    cluster_state: str | None = Field(default=None, description="local cluster state (drills inject failures there)")
    domains: dict[str, str] | None = Field(default=None, description="worker host (or id) -> failure domain")
    primary_master: str = Field(description="the primary's Spark master (spark://HOST:PORT): `ftops job register --master`")
    standby_master: str = Field(description="the replica's master: --standby-master")
    primary_ui: str = Field(description="the primary master's web UI: --master-ui")
    standby_ui: str = Field(description="the standby master's web UI: --standby-ui")
    spark_conf: dict[str, str] = Field(default_factory=dict, description="Spark confs of every stream of the job "
                                       "(primary, replica, profiling copies): `ftops job register --conf KEY=VALUE`, "
                                       "e.g. spark.driver.host where executors call the driver back")

    profile_master: str | None = Field(default=None, description="where checkpoint-profiling copies of the job run: "
                                       "a Spark master URL (`--profile-master`); None: local[1] inside the Airflow worker")

    def profiling_settings(self) -> dict[str, Any]:
        """How the job's checkpoint-profiling and validation copies run (spark_jobs.profiling.settings.RunSettings):
        on its profiling master, with its own Spark confs."""
        return {"spark_conf": self.spark_conf, **({"master": self.profile_master} if self.profile_master else {})}

    @field_validator("spark_conf")
    @classmethod
    def _spark_keys(cls, conf: dict[str, str]) -> dict[str, str]:
        bad = sorted(k for k in conf if not k.startswith("spark.") or k != k.strip() or "=" in k)
        if bad:
            raise ValueError(f"{bad[0]!r} is not a Spark conf key (spark.*)")
        own = sorted(set(conf) & FTOPS_SETS)
        if own:
            raise ValueError(f"{own[0]!r} is set by ftops for every stream (the pipeline's key groups and windows "
                             "depend on it), not per job")
        return conf

    @model_validator(mode="before")
    @classmethod
    def _workload_was_the_pipeline(cls, data):
        """Deployments stored before the pipeline API named a sample as ``workload``."""
        if isinstance(data, dict) and "workload" in data and "pipeline" not in data:
            data = {("pipeline" if k == "workload" else k): v for k, v in data.items()}
        return data

    @model_validator(mode="before")
    @classmethod
    def _local_cluster_masters(cls, data):
        """A deployment on a local cluster ftops started (``cluster_state``, the local stack's sample jobs) that
        names no masters runs on that stack's default ports; any other deployment must name its masters."""
        masters = ("primary_master", "standby_master", "primary_ui", "standby_ui")
        if isinstance(data, dict) and data.get("cluster_state") and not all(data.get(k) for k in masters):
            from spark_jobs.cluster.standalone import local_masters

            data = {**local_masters(), **{k: v for k, v in data.items() if v is not None}}
        return data

    def workload(self) -> Workload:
        """The pipeline bound to the deployment's parameters."""
        return load_workload(self.pipeline, self.params)

    @property
    def path(self) -> Path:
        return Path(self.root)

    @property
    def input(self) -> Path:
        return Path(self.input_dir) if self.input_dir else self.path / "input"

    @property
    def primary_output(self) -> Path:
        return self.path / "primary"

    @property
    def primary_checkpoint(self) -> Path:
        return self.path / "primary-ckpt"

    def replica_output(self, plan_id: int) -> Path:
        return self.path / "replica" / f"plan-{plan_id}"

    def replica_checkpoint(self, plan_id: int) -> Path:
        return self.path / "replica-ckpt" / f"plan-{plan_id}"

    def plan_file(self, plan_id: int) -> Path:
        return self.path / "plans" / f"plan-{plan_id}.json"


def parse_deployment(doc: dict | None, job: str):
    """The job's deployment: :class:`JobDeployment` (a runnable job) or, for a job submitted with ``ftops job submit``,
    :class:`spark_jobs.attach.deployment.AttachedDeployment`."""
    if not doc:
        raise InputError(f"job {job!r} has no deployment: it is plan-only; register it with `ftops job register --pipeline "
                         "... --input ... --master ...` (or submit it with `ftops job submit`) to run, drill and recover it")
    try:
        if doc.get("kind") == "attached":
            from spark_jobs.attach.deployment import AttachedDeployment

            return AttachedDeployment.model_validate(doc)
        return JobDeployment.model_validate(doc)
    except Exception as exc:  # pydantic's message names the field
        raise InputError(f"job {job!r}: invalid deployment document: {exc}") from None


def primary_app_name(job: str, interval_s: float | None = None) -> str:
    return f"ftops-{job}-primary" + ("" if interval_s is None else f"-t{interval_s:g}")


def replica_app_name(job: str, plan_id: int) -> str:
    return f"ftops-{job}-replica-p{plan_id}"


def app_job(app_name: str) -> str | None:
    """The job whose primary or replica ``app_name`` is (None: not one of ftops's streams).

    >>> app_job("ftops-topk-replica-p2"), app_job("ftops-shop-orders-primary-t2"), app_job("holder")
    ('topk', 'shop-orders', None)
    """
    import re

    found = re.fullmatch(r"ftops-(.+)-(?:primary(?:-t[0-9.e+-]+)?|replica-p[0-9]+)", app_name)
    return found.group(1) if found else None


def _common(dep: JobDeployment, trigger_s: float | None) -> list[str]:
    argv = ["--trigger-s", trigger_s or dep.trigger_s]
    for item in dep.params:
        argv += ["--param", item]
    if dep.cluster_state:
        argv += ["--state-dir", dep.cluster_state]
    for key, value in sorted(dep.spark_conf.items()):
        argv += ["--conf", f"{key}={value}"]
    return argv


def primary_run_argv(dep: JobDeployment, trigger_s: float | None = None) -> list[str]:
    """``ftops workload run`` arguments of the primary (the whole pipeline, checkpointing)."""
    return ["--pipeline", dep.pipeline, "--role", "primary", "--input", dep.input, "--output", dep.primary_output,
            "--checkpoint", dep.primary_checkpoint, "--master", dep.primary_master,
            "--total-executor-cores", dep.primary_cores, "--pool", "primary", *_common(dep, trigger_s)]


def replica_run_argv(dep: JobDeployment, plan_id: int, tasks: list[str]) -> list[str]:
    """``ftops workload run`` arguments of the replica restricted to plan ``plan_id`` (writes the plan file)."""
    plan = dep.plan_file(plan_id)
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(json.dumps({"plan_id": plan_id, "tasks": sorted(tasks)}))
    return ["--pipeline", dep.pipeline, "--role", "replica", "--plan", plan, "--input", dep.input, "--output", dep.replica_output(plan_id),
            "--checkpoint", dep.replica_checkpoint(plan_id), "--master", dep.standby_master,
            "--total-executor-cores", dep.replica_cores, "--pool", "standby", *_common(dep, None)]


def measured_topology(dep: JobDeployment, name: str, last_batches: int = 60) -> tuple[dict, str]:
    """The job's topology document with task rates measured from the primary's metrics (its last
    ``last_batches`` micro-batches), or the pipeline's expected rates when the primary has none yet;
    returns the document and where its rates came from."""
    from spark_jobs.pipeline import rates
    from spark_jobs.pipeline.metrics import read_metrics

    workload = dep.workload()
    records = read_metrics(dep.primary_output / "_metrics" / "metrics.jsonl")[-last_batches:]
    if len(records) >= 2:
        return rates.measured_topology(records, workload, name=name).to_document(), f"measured over {len(records)} batches"
    return workload.topology(name=name).to_document(), "expected (the primary has reported no metrics yet)"
