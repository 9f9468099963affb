"""What the history store takes and returns: the validated records DAGs hand it, the rules a
write follows (a stage only moves forward), and the JSON and row conversions of its tables."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ft_core.errors import InputError
from ft_core.input.names import named

# pg_advisory_xact_lock keys: base + job_id serializes one job's read-then-write history updates.
JOB_LOCK_BASE = 0x6674_6F70_7300_1000

PlanKind = Literal["replication", "recovery", "checkpoint"]
ProfileKind = Literal["rates", "checkpoint"]
DrillOutcome = Literal["passed", "failed", "aborted"]
RunOutcome = Literal["succeeded", "failed"]
StageStatus = Literal["pending", "waiting", "started", "done", "failed"]
Role = Literal["primary", "replica", "unit"]

# How far along a stage is; a write may only keep or raise it (see stage_transition).
STAGE_RANK = {"pending": 0, "waiting": 1, "started": 2, "failed": 3, "done": 4}


class JobSpec(BaseModel):
    """A registered streaming job.

    ``workload`` is the pipeline reference (``spark_jobs.pipeline.loading``), or ``plan-only``.
    ``deployment`` says where its running streams live (input folder, primary/replica output and
    checkpoint folders, pipeline parameters, trigger interval); None leaves the stored one as it is, so
    registering a job's topology again from the CLI does not forget where its streams run.
    ``apply_mode``: ``auto`` acts on new plans and drills at once, ``approve`` waits for a person,
    ``recommend`` only stores plans (None: ``auto`` for a test job, else ``approve``);
    ``replica_cooldown_s``: the least time between two replica changes. ``name`` is an identifier
    (:mod:`ft_core.input.names`), so no caller stores a name that could become a path or a page's markup.
    """

    name: named("job name")
    workload: str = Field(min_length=1)
    apply_mode: Literal["auto", "approve", "recommend"] | None = None
    test_job: bool = False
    replica_cooldown_s: float = Field(default=3600.0, ge=0)
    primary_master: str | None = None
    standby_master: str | None = None
    replication_budget: int = Field(default=0, ge=0)
    query_priorities: dict[str, float] = Field(default_factory=dict)
    max_recovery_s: float | None = Field(default=None, gt=0)
    deployment: dict[str, Any] | None = None


class StoredPlan(BaseModel):
    plan_id: int
    created: bool  # False: identical to the current plan, which is returned instead


class DrillMeasurement(BaseModel):
    """The measured fields of a drill report that have columns (``spark_jobs.drills.documents.DrillReport`` has
    them all); every key of the report, these and the rest, is kept in ``ftops_drill.report``.

    Every field is optional: a drill that failed before its measurement is closed with a report that
    only says why (``{"error": ...}``).
    """

    model_config = ConfigDict(extra="ignore")

    predicted_output_fidelity: float | None = Field(default=None, ge=0, le=1)
    predicted_accuracy: float | None = Field(default=None, ge=0, le=1)
    tentative_accuracy: float | None = Field(default=None, ge=0, le=1)
    # Times are differences of two clocks (file times, the driver's): kept as measured, even a hair below 0.
    time_to_first_tentative_s: float | None = None
    time_to_caught_up_s: float | None = None
    predicted_caught_up_s: float | None = Field(default=None, ge=0)
    lost_windows: int | None = Field(default=None, ge=0)
    duplicated_windows: int | None = Field(default=None, ge=0)
    output_equals_reference: bool | None = None
    failure_window_starts_ms: list[int] = Field(default_factory=list)
    tentative_accuracy_per_window: list[float] = Field(default_factory=list)

    @model_validator(mode="after")
    def _windows_pair_up(self) -> DrillMeasurement:
        starts, accuracies = self.failure_window_starts_ms, self.tentative_accuracy_per_window
        if len(starts) != len(accuracies):
            raise ValueError(f"failure_window_starts_ms has {len(starts)} windows but tentative_accuracy_per_window "
                             f"has {len(accuracies)}: one accuracy per failure window")
        if len(set(starts)) != len(starts):
            raise ValueError("failure_window_starts_ms repeats a window start")
        if any(not 0 <= a <= 1 for a in accuracies):
            raise ValueError("tentative_accuracy_per_window: accuracies are fractions in [0, 1]")
        return self

    def windows(self) -> list[tuple[datetime, float]]:
        """(window start, accuracy) rows for ``ftops_drill_window``."""
        return [(datetime.fromtimestamp(ms / 1000, tz=timezone.utc), acc)
                for ms, acc in zip(self.failure_window_starts_ms, self.tentative_accuracy_per_window)]


class StageUpdate(BaseModel):
    """One write of a recovery stage. Times are datetimes or Unix seconds (``time.time()``)."""

    stage_no: int = Field(ge=1)
    capacity: float = Field(ge=0)
    partitions: list[str]
    placement: dict[str, Any] = Field(default_factory=dict)
    status: StageStatus
    waiting_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class RecoveredQuery(BaseModel):
    """A query of a recovery run and when it was available again (None: not recovered)."""

    query: str = Field(min_length=1)
    priority: float = Field(ge=0)
    recovered_s: float | None = Field(default=None, ge=0)


_Model = TypeVar("_Model", bound=BaseModel)


def validated(model: type[_Model], what: str, data: dict[str, Any]) -> _Model:
    """``model(**data)``, with the first validation problem as an InputError naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or what
        raise InputError(f"{what}: {where}: {err['msg']}") from None


def jsonb(doc: Any) -> str:
    """JSON for a jsonb column: datetimes and other non-JSON values (a report's) become strings, and
    NaN or infinite floats (a mean over no window) become null, which jsonb would otherwise refuse."""
    return json.dumps(finite(doc), default=str, allow_nan=False)


def finite(doc: Any) -> Any:
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [finite(v) for v in doc]
    return doc


def rows(cur, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    return [dict(zip(keys, r)) for r in cur.fetchall()]


def stage_transition(old: str | None, new: str) -> bool:
    """Whether a stage in status ``old`` (None: not recorded) takes the write of status ``new``.

    A stage only moves forward, so a repeated earlier write (a retried planning task recording every
    stage "pending" again) never hides progress; "done" is final; a failed stage may be retried
    (waiting or started again); writing the same status again is accepted (idempotent).
    """
    if old is None or old == new:
        return True
    if old == "done":
        return False
    if old == "failed" and new in ("waiting", "started"):
        return True
    return STAGE_RANK[new] > STAGE_RANK[old]


JOB_KEYS = ("job_id", "name", "workload", "primary_master", "standby_master", "replication_budget",
             "query_priorities", "max_recovery_s", "deployment", "apply_mode", "test_job", "replica_cooldown_s",
             "created_at", "updated_at", "drill_schedule", "tuning_schedule", "priority")
DRILL_KEYS = ("drill_id", "plan_id", "params", "status", "predicted_output_fidelity", "predicted_accuracy", "tentative_accuracy",
               "time_to_first_tentative_s", "time_to_caught_up_s", "lost_windows", "duplicated_windows",
               "output_equals_reference", "error", "dag_run_id", "started_at", "finished_at", "predicted_caught_up_s")
RUN_KEYS = ("run_id", "plan_id", "status", "failure", "dag_run_id", "started_at", "finished_at")
STAGE_KEYS = ("stage_no", "capacity", "partitions", "placement", "status", "waiting_at", "started_at", "finished_at")
APPLIED_KEYS = ("applied_id", "plan_id", "role", "spark_app_id", "master_url", "started_at", "stopped_at",
                 "kind", "algorithm", "objective")
PLAN_KEYS = ("plan_id", "job", "kind", "created_at", "algorithm", "parameters", "objective", "optimal", "payload",
              "input_hash", "topology_id", "dag_run_id", "predicted_accuracy", "accuracy_estimate")


