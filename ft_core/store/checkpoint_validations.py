"""Validations of checkpoint recommendations: predicted against measured recovery, kept beside the plan.

Problem: Chiron (paper 004) recommends a checkpoint interval from models of profiling runs; a model can be
wrong for a job (issue 15: 157% off with the paper's Eq. 4). So the tuning DAG runs the recommended
interval with injected failures and applies the recommendation only when the measured recovery time is
within a bound of the predicted one. Each such validation run is a row of ``ftops_checkpoint_validation``
(migration 006) beside the ``checkpoint`` plan it validates, with the verdict and its reason, so the
history says why an interval was or was not applied.

Algorithm: one insert per validation (an upsert per plan and DAG run, so a retried task writes one row),
under the job's advisory lock, with a ``checkpoint_validated`` event; reads join the applied plans to
say whether the validated plan was applied. O(1) per write, O(k) to read the k newest.

    >>> v = CheckpointValidation(interval_ms=2000, variant="eq2", predicted_recovery_s=38.6, measured_recovery_s=34.4,
    ...     max_recovery_error=0.2, validated=True, reason="validated")
    >>> round(v.recovery_error, 4)
    0.1221
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field

from ft_core.store.base import StoreBase
from ft_core.store.records import jsonb, rows

VALIDATION_KEYS = ("validation_id", "plan_id", "interval_ms", "variant", "predicted_recovery_s", "measured_recovery_s",
                   "recovery_error", "max_recovery_error", "validated", "reason", "dag_run_id", "created_at", "applied")


class CheckpointValidation(BaseModel):
    """One validation run of a checkpoint plan (what the DAG's validation step stores)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    interval_ms: float = Field(gt=0)
    variant: str = Field(min_length=1)
    predicted_recovery_s: float = Field(ge=0)
    measured_recovery_s: float = Field(ge=0)
    max_recovery_error: float = Field(ge=0)
    validated: bool
    reason: str = Field(min_length=1)
    report: dict[str, Any] = Field(default_factory=dict)

    @computed_field
    @property
    def recovery_error(self) -> float | None:
        """``|predicted - measured| / measured`` (None when nothing was measured)."""
        if self.measured_recovery_s <= 0:
            return None
        return abs(self.predicted_recovery_s - self.measured_recovery_s) / self.measured_recovery_s


class CheckpointValidationRecords(StoreBase):
    """Writes and reads of ``ftops_checkpoint_validation``."""

    def save_checkpoint_validation(self, job: str, plan_id: int, validation: CheckpointValidation,
                                   dag_run_id: str | None = None) -> int:
        """Store a validation of one of the job's checkpoint plans; a retry in the same DAG run replaces it."""
        v = CheckpointValidation.model_validate(validation.model_dump(exclude={"recovery_error"}))
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            self._check_plan_of(cur, plan_id, job_id, job)
            error = v.recovery_error if v.recovery_error is not None and math.isfinite(v.recovery_error) else None
            values = (v.interval_ms, v.variant, v.predicted_recovery_s, v.measured_recovery_s, error,
                      v.max_recovery_error, v.validated, v.reason, jsonb(v.report))
            cur.execute(
                """INSERT INTO ftops_checkpoint_validation (plan_id, job_id, interval_ms, variant, predicted_recovery_s,
                       measured_recovery_s, recovery_error, max_recovery_error, validated, reason, report, dag_run_id)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (plan_id, dag_run_id) DO UPDATE SET interval_ms = EXCLUDED.interval_ms,
                       variant = EXCLUDED.variant, predicted_recovery_s = EXCLUDED.predicted_recovery_s,
                       measured_recovery_s = EXCLUDED.measured_recovery_s, recovery_error = EXCLUDED.recovery_error,
                       max_recovery_error = EXCLUDED.max_recovery_error, validated = EXCLUDED.validated,
                       reason = EXCLUDED.reason, report = EXCLUDED.report, created_at = now()
                   RETURNING validation_id""",
                (plan_id, job_id, *values, dag_run_id),
            )
            validation_id = cur.fetchone()[0]
            self._event(cur, job_id, "checkpoint_validated", {"plan_id": plan_id, "validation_id": validation_id,
                                                              "validated": v.validated, "reason": v.reason})
            return validation_id

    def checkpoint_validations(self, job: str, limit: int = 20) -> list[dict[str, Any]]:
        """The job's newest validations first; ``applied``: whether the validated plan was applied to the primary."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job)
            cur.execute(
                """SELECT v.validation_id, v.plan_id, v.interval_ms, v.variant, v.predicted_recovery_s,
                          v.measured_recovery_s, v.recovery_error, v.max_recovery_error, v.validated, v.reason,
                          v.dag_run_id, v.created_at,
                          EXISTS (SELECT 1 FROM ftops_applied_plan a WHERE a.plan_id = v.plan_id AND a.role = 'primary')
                   FROM ftops_checkpoint_validation v WHERE v.job_id = %s
                   ORDER BY v.created_at DESC, v.validation_id DESC LIMIT %s""",
                (job_id, limit),
            )
            return rows(cur, VALIDATION_KEYS)
