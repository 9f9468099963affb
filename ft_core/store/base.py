"""One history connection and what every write does inside its transaction: find the job, take its
advisory lock, check a plan belongs to it, append to the event log."""

from __future__ import annotations

from typing import Any

from ft_core.errors import InputError
from ft_core.store.records import JOB_LOCK_BASE, jsonb


class StoreBase:
    """The history tables of one PostgreSQL connection (psycopg2, autocommit off)."""

    def __init__(self, conn):
        self.conn = conn

    @staticmethod
    def _job_id(cur, name: str) -> int:
        cur.execute("SELECT job_id FROM ftops_job WHERE name = %s", (name,))
        row = cur.fetchone()
        if row is None:
            raise InputError(f"job {name!r} is not registered")
        return row[0]

    def _locked_job(self, cur, name: str) -> int:
        """The job's id, after taking its advisory transaction lock (released at commit or rollback)."""
        job_id = self._job_id(cur, name)
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (JOB_LOCK_BASE + job_id,))
        return job_id

    @staticmethod
    def _check_plan_of(cur, plan_id: int, job_id: int, job: str) -> float:
        """The plan's objective; InputError when the plan is not one of this job's."""
        cur.execute("SELECT objective FROM ftops_plan WHERE plan_id = %s AND job_id = %s", (plan_id, job_id))
        row = cur.fetchone()
        if row is None:
            raise InputError(f"plan {plan_id} is not a plan of job {job!r}")
        return row[0]

    @staticmethod
    def _event(cur, job_id: int | None, kind: str, payload: dict[str, Any]) -> int:
        cur.execute("INSERT INTO ftops_event (job_id, kind, payload) VALUES (%s, %s, %s) RETURNING event_id",
                    (job_id, kind, jsonb(payload)))
        return cur.fetchone()[0]

