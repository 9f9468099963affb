"""What the "Fault tolerance" JSON APIs return (pydantic: the OpenAPI schema documents them), the
comparison of two plans that both the diff page and its API show, and what kind of job a job is."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class JobKind(BaseModel):
    """Whether ftops runs the job's streams (``runnable``) or only plans for it (``plan-only``), and why."""

    kind: str
    summary: str
    reason: str

    @classmethod
    def from_store(cls, store, job: str) -> JobKind:
        return cls.from_kind(store.job_kinds(job)[job])

    @classmethod
    def from_kind(cls, info: dict) -> JobKind:
        """From one entry of ``HistoryStore.job_kinds()``."""
        if info["deployment"] == "attached":
            return cls(kind="attached", summary="attached", reason="its own unchanged application, submitted with "
                       "`ftops job submit`: ftops records its progress, drills and restarts it, and recommends plans "
                       "(no replica: ftops cannot run part of a job it did not write)")
        if info["deployment"]:
            return cls(kind="runnable", summary="runnable", reason="written with the ftops pipeline API: ftops runs "
                       "its primary and its replicas")
        where = info.get("rediscover")
        if where:
            return cls(kind="plan-only", summary=f"plan-only: discovered from the Spark UI at {where['spark_ui']}",
                       reason=f"discovered from the Spark UI at {where['spark_ui']}, not written with the ftops pipeline "
                       "API: ftops plans, simulates and keeps its history, but cannot run a replica of it")
        return cls(kind="plan-only", summary="plan-only: from a topology document", reason="registered from a "
                   "topology document: ftops plans, simulates and keeps its history, but has no deployment of its "
                   "streams to run")


class DrillWindowOut(BaseModel):
    window_start: datetime
    accuracy: float


class DrillOut(BaseModel):
    """A drill: what the plan predicted, what was measured, and its failure windows."""

    drill_id: int
    plan_id: int | None
    status: str
    params: dict[str, Any]
    predicted_output_fidelity: float | None
    predicted_accuracy: float | None = None
    tentative_accuracy: float | None
    prediction_error: float | None
    accuracy_prediction_error: float | None = None
    time_to_first_tentative_s: float | None
    time_to_caught_up_s: float | None
    predicted_caught_up_s: float | None = Field(default=None, description="the drill's forecast, made before its fault")
    lost_windows: int | None
    duplicated_windows: int | None
    output_equals_reference: bool | None
    error: str | None
    dag_run_id: str | None
    started_at: datetime
    finished_at: datetime | None
    windows: list[DrillWindowOut]
    has_report: bool = Field(default=False, description="its experiment report was written (the drill ended)")

    @classmethod
    def from_store(cls, drill: dict[str, Any]) -> DrillOut:
        measured = drill["tentative_accuracy"]

        def gap(predicted: float | None) -> float | None:
            return None if predicted is None or measured is None else abs(measured - predicted)

        return cls.model_validate({**drill, "prediction_error": gap(drill["predicted_output_fidelity"]),
                                   "accuracy_prediction_error": gap(drill.get("predicted_accuracy"))})


class StageOut(BaseModel):
    stage_no: int
    capacity: float
    partitions: list[str]
    placement: dict[str, Any]
    status: str
    waiting_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None


class QueryOut(BaseModel):
    query: str
    priority: float
    recovered_s: float | None


class RecoveryRunOut(BaseModel):
    """A recovery run with its stages and per-query recovery times (seconds after the failure)."""

    run_id: int
    plan_id: int | None
    status: str
    failure: dict[str, Any]
    dag_run_id: str | None
    started_at: datetime
    finished_at: datetime | None
    stages: list[StageOut]
    queries: list[QueryOut]
    has_report: bool = Field(default=False, description="its experiment report was written (the run ended)")


class PlanDiff(BaseModel):
    """What changed from plan ``a`` to plan ``b`` of one job and kind."""

    job: str
    kind: str
    a: int
    b: int
    algorithm: tuple[str, str]
    objective: tuple[float, float]
    objective_change: float
    added_tasks: list[str]
    removed_tasks: list[str]
    kept_tasks: int
    parameters_changed: dict[str, tuple[Any, Any]]
    payload_keys_changed: list[str]


def plan_diff(a: dict[str, Any], b: dict[str, Any]) -> PlanDiff:
    """Compare two stored plans (``HistoryStore.plan`` rows): replicated tasks added and removed (for
    replication plans, whose payload lists ``tasks``), objective, algorithm, parameters, and which other
    payload fields differ (recovery and checkpoint plans have no task list; their payloads differ by key)."""
    before, after = set(a["payload"].get("tasks", [])), set(b["payload"].get("tasks", []))
    params = {k: (a["parameters"].get(k), b["parameters"].get(k))
              for k in sorted(set(a["parameters"]) | set(b["parameters"])) if a["parameters"].get(k) != b["parameters"].get(k)}
    keys = sorted(k for k in set(a["payload"]) | set(b["payload"]) if k != "tasks" and a["payload"].get(k) != b["payload"].get(k))
    return PlanDiff(job=b["job"], kind=b["kind"], a=a["plan_id"], b=b["plan_id"], algorithm=(a["algorithm"], b["algorithm"]),
                    objective=(a["objective"], b["objective"]), objective_change=b["objective"] - a["objective"],
                    added_tasks=sorted(after - before), removed_tasks=sorted(before - after), kept_tasks=len(before & after),
                    parameters_changed=params, payload_keys_changed=keys)
