"""Writing and reading the plan history, transactionally.

Two writers (say, two DAG runs) never interleave a job's plans: each plan write takes a per-job
advisory transaction lock, reads the job's current plan of that kind, and stores the new one only
if it differs (a plan with the same input hash and objective as the current one is not stored
twice). Every write is one transaction.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field

from ft_core.errors import InputError

_PLAN_LOCK_BASE = 0x6674_6F70_7300_1000


class JobSpec(BaseModel):
    """A registered streaming job."""

    name: str = Field(min_length=1)
    workload: str = Field(min_length=1)
    primary_master: str | None = None
    standby_master: str | None = None
    replication_budget: int = Field(default=0, ge=0)
    query_priorities: dict[str, float] = Field(default_factory=dict)
    max_recovery_s: float | None = Field(default=None, gt=0)


class StoredPlan(BaseModel):
    plan_id: int
    created: bool  # False: identical to the current plan, which is returned instead


class HistoryStore:
    def __init__(self, conn):
        self.conn = conn

    def register_job(self, job: JobSpec) -> int:
        """Insert or update a job by name; returns its id."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """INSERT INTO ftops_job (name, workload, primary_master, standby_master, replication_budget,
                                          query_priorities, max_recovery_s)
                   VALUES (%s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (name) DO UPDATE SET workload = EXCLUDED.workload,
                       primary_master = EXCLUDED.primary_master, standby_master = EXCLUDED.standby_master,
                       replication_budget = EXCLUDED.replication_budget, query_priorities = EXCLUDED.query_priorities,
                       max_recovery_s = EXCLUDED.max_recovery_s, updated_at = now()
                   RETURNING job_id""",
                (job.name, job.workload, job.primary_master, job.standby_master, job.replication_budget,
                 json.dumps(job.query_priorities), job.max_recovery_s),
            )
            return cur.fetchone()[0]

    def job_id(self, name: str) -> int:
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT job_id FROM ftops_job WHERE name = %s", (name,))
            row = cur.fetchone()
        if row is None:
            raise InputError(f"job {name!r} is not registered")
        return row[0]

    def save_topology(self, job: str, doc: dict[str, Any]) -> int:
        """Store a topology version (a document seen before returns its existing id)."""
        job_id = self.job_id(job)
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_PLAN_LOCK_BASE + job_id,))
            cur.execute("SELECT topology_id FROM ftops_topology_version WHERE job_id = %s AND doc_hash = %s", (job_id, digest))
            row = cur.fetchone()
            if row:
                return row[0]
            cur.execute(
                """INSERT INTO ftops_topology_version (job_id, version, doc, doc_hash)
                   SELECT %s, coalesce(max(version), 0) + 1, %s, %s FROM ftops_topology_version WHERE job_id = %s
                   RETURNING topology_id""",
                (job_id, json.dumps(doc), digest, job_id),
            )
            return cur.fetchone()[0]

    def save_plan(self, job: str, kind: str, *, algorithm: str, objective: float, optimal: bool, payload: dict,
                  input_hash: str, parameters: dict | None = None, topology_id: int | None = None,
                  dag_run_id: str | None = None) -> StoredPlan:
        """Store a plan unless it equals the job's current plan of this kind (same input hash and objective)."""
        job_id = self.job_id(job)
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_PLAN_LOCK_BASE + job_id,))
            cur.execute(
                """SELECT plan_id, input_hash, objective FROM ftops_plan WHERE job_id = %s AND kind = %s
                   ORDER BY created_at DESC, plan_id DESC LIMIT 1""",
                (job_id, kind),
            )
            current = cur.fetchone()
            if current and current[1] == input_hash and abs(current[2] - objective) <= 1e-12:
                return StoredPlan(plan_id=current[0], created=False)
            cur.execute(
                """INSERT INTO ftops_plan (job_id, kind, algorithm, parameters, objective, optimal, payload, input_hash,
                                           topology_id, dag_run_id)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING plan_id""",
                (job_id, kind, algorithm, json.dumps(parameters or {}), objective, optimal, json.dumps(payload),
                 input_hash, topology_id, dag_run_id),
            )
            plan_id = cur.fetchone()[0]
            cur.execute("INSERT INTO ftops_event (job_id, kind, payload) VALUES (%s, 'plan_stored', %s)",
                        (job_id, json.dumps({"plan_id": plan_id, "kind": kind, "objective": objective})))
            return StoredPlan(plan_id=plan_id, created=True)

    def current_plan(self, job: str, kind: str) -> dict | None:
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT plan_id, algorithm, objective, optimal, payload, input_hash, created_at
                   FROM ftops_current_plan WHERE job = %s AND kind = %s""",
                (job, kind),
            )
            row = cur.fetchone()
        if row is None:
            return None
        keys = ("plan_id", "algorithm", "objective", "optimal", "payload", "input_hash", "created_at")
        return dict(zip(keys, row))

    def plan_history(self, job: str, kind: str) -> list[dict]:
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT plan_id, created_at, algorithm, objective, objective_change, previous_plan_id
                   FROM ftops_plan_changes WHERE job = %s AND kind = %s ORDER BY created_at, plan_id""",
                (job, kind),
            )
            keys = ("plan_id", "created_at", "algorithm", "objective", "objective_change", "previous_plan_id")
            return [dict(zip(keys, row)) for row in cur.fetchall()]

    def jobs(self) -> list[dict]:
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT name, workload, replication_budget, max_recovery_s FROM ftops_job ORDER BY name")
            return [dict(zip(("name", "workload", "replication_budget", "max_recovery_s"), r)) for r in cur.fetchall()]

    def plans(self, job: str, kind: str, limit: int = 100) -> list[dict]:
        """The job's plans of a kind, oldest first, with payloads (for the UI and diffs)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT p.plan_id, p.created_at, p.algorithm, p.objective, p.optimal, p.payload, p.topology_id, p.dag_run_id
                   FROM ftops_plan p JOIN ftops_job j USING (job_id) WHERE j.name = %s AND p.kind = %s
                   ORDER BY p.created_at DESC, p.plan_id DESC LIMIT %s""",
                (job, kind, limit),
            )
            keys = ("plan_id", "created_at", "algorithm", "objective", "optimal", "payload", "topology_id", "dag_run_id")
            return [dict(zip(keys, r)) for r in reversed(cur.fetchall())]

    def latest_topology(self, job: str) -> dict | None:
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT t.doc FROM ftops_topology_version t JOIN ftops_job j USING (job_id)
                   WHERE j.name = %s ORDER BY t.version DESC LIMIT 1""",
                (job,),
            )
            row = cur.fetchone()
        return row[0] if row else None
