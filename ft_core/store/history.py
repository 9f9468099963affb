"""Writing and reading the history store, transactionally.

Every public write is one transaction. Writes that read before they write (is this plan the current
one? does this DAG run already have a drill?) first take the job's advisory transaction lock, so two
writers for one job (two DAG runs, a retried task racing its own zombie) are serialized and never
interleave; writes to different jobs do not wait for each other.

DAG tasks are retried and DAG runs are cleared and resumed, so the writes a task makes are idempotent:

- a plan identical to the job's current plan of its kind (same input hash and objective) is not
  stored twice, nor is a topology document or a profile seen before;
- a DAG run owns at most one drill and one recovery run per job: starting it again returns the same id
  (a finished one is reopened, since the DAG run is doing it again);
- a recovery stage only moves forward (pending -> waiting -> started -> done/failed; a failed stage may
  be retried), so a repeated "pending" from a re-run planning task never hides that a stage is done,
  and a resumed run reads which stages are done from :meth:`HistoryStore.recovery_stages`.

Arguments coming from DAGs (reports, stage updates) are validated by the pydantic models below and
rejected with an :class:`~ft_core.errors.InputError` naming the field; ft_core takes plain dicts and
never imports ``spark_jobs``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from ft_core.errors import InputError
from ft_core.store.accuracy import AccuracyRecords
from ft_core.store.checkpoint_validations import CheckpointValidationRecords
from ft_core.store.dag_runs import DagRunRecords
from ft_core.store.domain_locks import DomainLockRecords
from ft_core.store.drills import DrillRecords
from ft_core.store.experiments import ExperimentRecords
from ft_core.store.faults import FaultRecords
from ft_core.store.fleet_recoveries import FleetRecoveryRecords
from ft_core.store.leases import LeaseRecords
from ft_core.store.policies import PolicyRecords
from ft_core.store.records import APPLIED_KEYS, JOB_KEYS, PLAN_KEYS, JobSpec, ProfileKind, Role, StoredPlan, jsonb, rows
from ft_core.store.recovery_runs import RecoveryRecords
from ft_core.store.retention import RetentionRecords
from ft_core.store.stream_progress import StreamProgressRecords


class HistoryStore(DrillRecords, RecoveryRecords, LeaseRecords, FaultRecords, ExperimentRecords, AccuracyRecords,
                   CheckpointValidationRecords, StreamProgressRecords, PolicyRecords, DomainLockRecords, DagRunRecords,
                   FleetRecoveryRecords, RetentionRecords):
    """The history tables of one PostgreSQL connection (psycopg2, autocommit off): jobs, topology
    versions, profiles, plans and applied plans, events; drills, recovery runs, leases, experiment reports,
    predicted accuracy, checkpoint validations, streams' micro-batch progress, the fault journal and the halt,
    per-job and fleet policy, the fleet's failure-domain lock, fleet recoveries, what a DAG run recorded and the
    retention of the most written tables, from the mixins."""

    def register_job(self, job: JobSpec, changed_by: str = "registration") -> int:
        """Insert or update a job by name; returns its id (a None deployment keeps the stored one). A new job's
        apply mode, or a changed one, is recorded as a policy change by ``changed_by``."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT apply_mode FROM ftops_job WHERE name = %s FOR UPDATE", (job.name,))
            before = cur.fetchone()
            cur.execute(
                """INSERT INTO ftops_job (name, workload, primary_master, standby_master, replication_budget,
                                          query_priorities, max_recovery_s, deployment, apply_mode, test_job,
                                          replica_cooldown_s)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (name) DO UPDATE SET workload = EXCLUDED.workload,
                       primary_master = EXCLUDED.primary_master, standby_master = EXCLUDED.standby_master,
                       replication_budget = EXCLUDED.replication_budget, query_priorities = EXCLUDED.query_priorities,
                       max_recovery_s = EXCLUDED.max_recovery_s,
                       deployment = coalesce(EXCLUDED.deployment, ftops_job.deployment),
                       apply_mode = EXCLUDED.apply_mode, test_job = EXCLUDED.test_job,
                       replica_cooldown_s = EXCLUDED.replica_cooldown_s, updated_at = now()
                   RETURNING job_id""",
                (job.name, job.workload, job.primary_master, job.standby_master, job.replication_budget,
                 json.dumps(job.query_priorities), job.max_recovery_s,
                 None if job.deployment is None else jsonb(job.deployment),
                 job.apply_mode or ("auto" if job.test_job else "approve"), job.test_job, job.replica_cooldown_s),
            )
            job_id = cur.fetchone()[0]
            mode = job.apply_mode or ("auto" if job.test_job else "approve")
            if before is None or before[0] != mode:
                self._record_change(cur, job_id, changed_by, {"apply_mode": {"from": before and before[0], "to": mode}},
                                    event=False)
            return job_id

    def job_id(self, name: str) -> int:
        with self.conn, self.conn.cursor() as cur:
            return self._job_id(cur, name)

    def job(self, name: str) -> dict[str, Any]:
        """The registered job's row, its deployment included (InputError when it is not registered)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"SELECT {', '.join(JOB_KEYS)} FROM ftops_job WHERE name = %s", (name,))
            row = cur.fetchone()
        if row is None:
            raise InputError(f"job {name!r} is not registered")
        return dict(zip(JOB_KEYS, row))

    def jobs(self) -> list[dict]:
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT name, workload, replication_budget, max_recovery_s FROM ftops_job ORDER BY name")
            return [dict(zip(("name", "workload", "replication_budget", "max_recovery_s"), r)) for r in cur.fetchall()]

    def has_job(self, job: str) -> bool:
        """Whether ``job`` is registered (one indexed lookup: the console checks every page's job with it)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT 1 FROM ftops_job WHERE name = %s", (job,))
            return cur.fetchone() is not None

    def job_kinds(self, job: str | Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        """Per job (``job``: that one only, or those of a list): ``deployment`` (``runnable``, ``attached`` or None:
        plan-only) and, for a plan-only job, ``rediscover`` (where its newest rates profile says it was discovered, or
        None). One query for the fleet, not one per job (the jobs page, ``ftops job list``)."""
        names = None if job is None else [job] if isinstance(job, str) else list(job)
        with self.conn, self.conn.cursor() as cur:
            cur.execute("""SELECT j.name, CASE WHEN j.deployment IS NULL THEN NULL
                                               ELSE coalesce(j.deployment->>'kind', 'runnable') END, p.rediscover
                           FROM ftops_job j LEFT JOIN LATERAL (
                               SELECT f.doc->'rediscover' AS rediscover FROM ftops_profile f
                               WHERE f.job_id = j.job_id AND f.kind = 'rates' AND j.deployment IS NULL
                               ORDER BY f.created_at DESC, f.profile_id DESC LIMIT 1) p ON true
                           WHERE %s::text[] IS NULL OR j.name = ANY(%s::text[]) ORDER BY j.name""", (names, names))
            return {name: {"deployment": kind, "rediscover": where} for name, kind, where in cur.fetchall()}

    def save_topology(self, job: str, doc: dict[str, Any]) -> int:
        """Store a topology version (a document seen before returns its existing id)."""
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
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

    def save_profile(self, job: str, kind: ProfileKind, doc: dict[str, Any], dag_run_id: str | None = None) -> int:
        """Store a profile (``rates`` or ``checkpoint``); returns its id.

        A retried task that measured the same document in the same DAG run gets the stored id back
        instead of a second row; a different document is a new measurement and is kept (mapped
        profiling tasks of one run store one profile each).
        """
        if kind not in ("rates", "checkpoint"):
            raise InputError(f"profile kind {kind!r}: expected 'rates' or 'checkpoint'")
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            cur.execute(
                """SELECT profile_id FROM ftops_profile WHERE job_id = %s AND kind = %s
                   AND dag_run_id IS NOT DISTINCT FROM %s AND doc = %s::jsonb ORDER BY profile_id LIMIT 1""",
                (job_id, kind, dag_run_id, jsonb(doc)),
            )
            row = cur.fetchone()
            if row:
                return row[0]
            cur.execute("INSERT INTO ftops_profile (job_id, kind, doc, dag_run_id) VALUES (%s, %s, %s, %s) RETURNING profile_id",
                        (job_id, kind, jsonb(doc), dag_run_id))
            return cur.fetchone()[0]

    def latest_profile(self, job: str, kind: ProfileKind) -> dict[str, Any] | None:
        """The job's newest profile of a kind: ``profile_id``, ``doc``, ``dag_run_id``, ``created_at``."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT p.profile_id, p.doc, p.dag_run_id, p.created_at FROM ftops_profile p JOIN ftops_job j USING (job_id)
                   WHERE j.name = %s AND p.kind = %s ORDER BY p.created_at DESC, p.profile_id DESC LIMIT 1""",
                (job, kind),
            )
            row = cur.fetchone()
        return dict(zip(("profile_id", "doc", "dag_run_id", "created_at"), row)) if row else None

    def save_plan(self, job: str, kind: str, *, algorithm: str, objective: float, optimal: bool, payload: dict,
                  input_hash: str, parameters: dict | None = None, topology_id: int | None = None,
                  dag_run_id: str | None = None) -> StoredPlan:
        """Store a plan unless it equals the job's current plan of this kind (same input hash and objective)."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
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
            self._event(cur, job_id, "plan_stored", {"plan_id": plan_id, "kind": kind, "objective": objective})
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

    def plans(self, job: str, kind: str, limit: int = 100) -> list[dict]:
        """The job's plans of a kind, oldest first, with payloads (for the UI and diffs)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT p.plan_id, p.created_at, p.algorithm, p.objective, p.optimal, p.payload, p.topology_id, p.dag_run_id,
                          p.predicted_accuracy, p.accuracy_estimate
                   FROM ftops_plan p JOIN ftops_job j USING (job_id) WHERE j.name = %s AND p.kind = %s
                   ORDER BY p.created_at DESC, p.plan_id DESC LIMIT %s""",
                (job, kind, limit),
            )
            keys = ("plan_id", "created_at", "algorithm", "objective", "optimal", "payload", "topology_id", "dag_run_id",
                    "predicted_accuracy", "accuracy_estimate")
            return [dict(zip(keys, r)) for r in reversed(cur.fetchall())]

    def plan(self, plan_id: int) -> dict[str, Any] | None:
        """One plan with its job's name and payload (None when there is no such plan)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT p.plan_id, j.name, p.kind, p.created_at, p.algorithm, p.parameters, p.objective, p.optimal,
                          p.payload, p.input_hash, p.topology_id, p.dag_run_id, p.predicted_accuracy, p.accuracy_estimate
                   FROM ftops_plan p JOIN ftops_job j USING (job_id) WHERE p.plan_id = %s""",
                (plan_id,),
            )
            row = cur.fetchone()
        return dict(zip(PLAN_KEYS, row)) if row else None

    def latest_topology(self, job: str) -> dict | None:
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT t.doc FROM ftops_topology_version t JOIN ftops_job j USING (job_id)
                   WHERE j.name = %s ORDER BY t.version DESC LIMIT 1""",
                (job,),
            )
            row = cur.fetchone()
        return row[0] if row else None

    def record_applied_plan(self, plan_id: int, job: str, role: Role, spark_app_id: str | None = None,
                            master_url: str | None = None) -> int:
        """Record that a Spark application runs a plan of the job; returns the record's id.

        Idempotent: an open record of the same plan and role with the same application (or with none
        known yet, which this call then fills in) is returned rather than duplicated, so a retried
        submission task does not make one plan look applied twice.
        """
        if role not in ("primary", "replica", "unit"):
            raise InputError(f"role {role!r}: expected 'primary', 'replica' or 'unit'")
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            self._check_plan_of(cur, plan_id, job_id, job)
            cur.execute(
                """SELECT applied_id FROM ftops_applied_plan
                   WHERE job_id = %s AND role = %s AND plan_id = %s AND stopped_at IS NULL
                     AND (spark_app_id IS NULL OR %s IS NULL OR spark_app_id = %s)
                   ORDER BY applied_id LIMIT 1""",
                (job_id, role, plan_id, spark_app_id, spark_app_id),
            )
            row = cur.fetchone()
            if row:
                cur.execute("""UPDATE ftops_applied_plan SET spark_app_id = coalesce(spark_app_id, %s),
                               master_url = coalesce(%s, master_url) WHERE applied_id = %s""",
                            (spark_app_id, master_url, row[0]))
                return row[0]
            cur.execute(
                """INSERT INTO ftops_applied_plan (plan_id, job_id, role, spark_app_id, master_url)
                   VALUES (%s, %s, %s, %s, %s) RETURNING applied_id""",
                (plan_id, job_id, role, spark_app_id, master_url),
            )
            applied_id = cur.fetchone()[0]
            self._event(cur, job_id, "plan_applied", {"plan_id": plan_id, "role": role, "spark_app_id": spark_app_id})
            return applied_id

    def stop_applied_plan(self, job: str, role: Role, plan_id: int | None = None, spark_app_id: str | None = None) -> int:
        """Mark the job's open applied plans of a role stopped (only those of ``plan_id`` / ``spark_app_id``
        when given); returns how many were open. Stopping again is a no-op."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            cur.execute(
                """UPDATE ftops_applied_plan SET stopped_at = now()
                   WHERE job_id = %s AND role = %s AND stopped_at IS NULL
                     AND (%s::bigint IS NULL OR plan_id = %s) AND (%s::text IS NULL OR spark_app_id = %s)
                   RETURNING plan_id""",
                (job_id, role, plan_id, plan_id, spark_app_id, spark_app_id),
            )
            stopped = [r[0] for r in cur.fetchall()]
            if stopped:
                self._event(cur, job_id, "plan_stopped", {"plan_ids": stopped, "role": role})
            return len(stopped)

    def applied_plans(self, job: str) -> list[dict[str, Any]]:
        """The job's applied plans, newest first, with each plan's kind, algorithm and objective."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT a.applied_id, a.plan_id, a.role, a.spark_app_id, a.master_url, a.started_at, a.stopped_at,
                          p.kind, p.algorithm, p.objective
                   FROM ftops_applied_plan a JOIN ftops_plan p USING (plan_id) JOIN ftops_job j ON j.job_id = a.job_id
                   WHERE j.name = %s ORDER BY a.started_at DESC, a.applied_id DESC""",
                (job,),
            )
            return rows(cur, APPLIED_KEYS)

    def running_replica_plan(self, job: str) -> dict[str, Any] | None:
        """The replication plan the job's running replica executes (the current plan can be newer, when it
        did not improve OF enough to be resubmitted); None when no replica runs."""
        running = [a for a in self.applied_plans(job) if a["role"] == "replica" and a["stopped_at"] is None]
        return self.plan(running[0]["plan_id"]) if running else None

    def log_event(self, job: str | None, kind: str, payload: dict[str, Any] | None = None) -> int:
        """Append to the event log (``job`` None: an event of no one job); returns the event's id."""
        if not kind:
            raise InputError("event kind: must not be empty")
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job) if job is not None else None
            return self._event(cur, job_id, kind, payload or {})

    def events(self, job: str, limit: int = 50) -> list[dict[str, Any]]:
        """The job's newest events, newest first."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT e.event_id, e.kind, e.payload, e.created_at FROM ftops_event e JOIN ftops_job j USING (job_id)
                   WHERE j.name = %s ORDER BY e.created_at DESC, e.event_id DESC LIMIT %s""",
                (job, limit),
            )
            return rows(cur, ("event_id", "kind", "payload", "created_at"))



def open_history_store(db_dir) -> HistoryStore:
    """The history store the CLI uses: ``FTOPS_DATABASE_URL``, else the embedded PostgreSQL in ``db_dir``,
    migrated to the newest schema."""
    from ft_core.store.connection import connect
    from ft_core.store.migrations import upgrade
    from ft_core.store.url import database_url

    conn = connect(database_url(db_dir))
    upgrade(conn)
    return HistoryStore(conn)
