"""Predicted tentative accuracy in the history store (issue 15): a plan's estimate, set after the plan.

A replication plan is stored by the planning task; its predicted accuracy comes later (a replay of the
job's recent input, :mod:`ft_core.replication.predicted_accuracy`) and goes into the plan's own columns
(``predicted_accuracy``: the mean; ``accuracy_estimate``: the whole estimate with its spread). A new
estimate of the same plan (the next hour's input) replaces the old one: the column says what the plan
is expected to keep now. Drills copy it when they start (:mod:`ft_core.store.drills`).
"""

from __future__ import annotations

from typing import Any

from ft_core.errors import InputError
from ft_core.replication.predicted_accuracy import AccuracyEstimate
from ft_core.store.base import StoreBase
from ft_core.store.records import JOB_LOCK_BASE, jsonb, validated


class AccuracyRecords(StoreBase):
    """A plan's predicted tentative accuracy: written once estimated, read by drills, the UI and the CLI."""

    def record_predicted_accuracy(self, plan_id: int, estimate: dict[str, Any]) -> None:
        """Store the estimate (an :class:`AccuracyEstimate` document) on the plan; its tasks must be the plan's."""
        checked = validated(AccuracyEstimate, "accuracy estimate", estimate)
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT job_id, payload FROM ftops_plan WHERE plan_id = %s AND kind = 'replication'", (plan_id,))
            row = cur.fetchone()
            if row is None:
                raise InputError(f"plan {plan_id}: no replication plan has this id")
            job_id, payload = row
            if sorted(payload.get("tasks", [])) != sorted(checked.tasks):
                raise InputError(f"accuracy estimate: its tasks are not those of plan {plan_id}")
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (JOB_LOCK_BASE + job_id,))
            cur.execute(
                """UPDATE ftops_plan SET predicted_accuracy = %s, accuracy_estimate = %s, accuracy_estimated_at = now()
                   WHERE plan_id = %s""",
                (checked.mean, jsonb(checked.model_dump(mode="json")), plan_id),
            )
            self._event(cur, job_id, "accuracy_estimated", {"plan_id": plan_id, "predicted_accuracy": checked.mean,
                                                            "stdev": checked.stdev, "windows": checked.windows})

    def predicted_accuracy(self, plan_id: int) -> dict[str, Any] | None:
        """``{"predicted_accuracy", "accuracy_estimate", "accuracy_estimated_at"}`` of a plan (None: no such plan)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT predicted_accuracy, accuracy_estimate, accuracy_estimated_at FROM ftops_plan "
                        "WHERE plan_id = %s", (plan_id,))
            row = cur.fetchone()
        return dict(zip(("predicted_accuracy", "accuracy_estimate", "accuracy_estimated_at"), row)) if row else None
