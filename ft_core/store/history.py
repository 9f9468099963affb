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
import math
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ft_core.errors import InputError

# pg_advisory_xact_lock keys: base + job_id serializes one job's read-then-write history updates.
_PLAN_LOCK_BASE = 0x6674_6F70_7300_1000
_JOB_LOCK_BASE = _PLAN_LOCK_BASE

PlanKind = Literal["replication", "recovery", "checkpoint"]
ProfileKind = Literal["rates", "checkpoint"]
DrillOutcome = Literal["passed", "failed"]
RunOutcome = Literal["succeeded", "failed"]
StageStatus = Literal["pending", "waiting", "started", "done", "failed"]
Role = Literal["primary", "replica", "unit"]

# How far along a stage is; a write may only keep or raise it (see _stage_transition).
_STAGE_RANK = {"pending": 0, "waiting": 1, "started": 2, "failed": 3, "done": 4}


# -- the boundary: what DAGs hand the store ----------------------------------------------------------

class JobSpec(BaseModel):
    """A registered streaming job.

    ``deployment`` says where its running streams live (input folder, primary/replica output and
    checkpoint folders, workload parameters, trigger interval); None leaves the stored one as it is, so
    registering a job's topology again from the CLI does not forget where its streams run.
    """

    name: str = Field(min_length=1)
    workload: str = Field(min_length=1)
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
    """The measured fields of a drill report that have columns (``spark_jobs.drill.DrillReport`` has
    them all); every key of the report, these and the rest, is kept in ``ftops_drill.report``.

    Every field is optional: a drill that failed before its measurement is closed with a report that
    only says why (``{"error": ...}``).
    """

    model_config = ConfigDict(extra="ignore")

    predicted_output_fidelity: float | None = Field(default=None, ge=0, le=1)
    tentative_accuracy: float | None = Field(default=None, ge=0, le=1)
    # Times are differences of two clocks (file times, the driver's): kept as measured, even a hair below 0.
    time_to_first_tentative_s: float | None = None
    time_to_caught_up_s: float | None = None
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


def _validated(model: type[_Model], what: str, data: dict[str, Any]) -> _Model:
    """``model(**data)``, with the first validation problem as an InputError naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or what
        raise InputError(f"{what}: {where}: {err['msg']}") from None


def _json(doc: Any) -> str:
    """JSON for a jsonb column: datetimes and other non-JSON values (a report's) become strings, and
    NaN or infinite floats (a mean over no window) become null, which jsonb would otherwise refuse."""
    return json.dumps(_finite(doc), default=str, allow_nan=False)


def _finite(doc: Any) -> Any:
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: _finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_finite(v) for v in doc]
    return doc


def _rows(cur, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    return [dict(zip(keys, r)) for r in cur.fetchall()]


def _stage_transition(old: str | None, new: str) -> bool:
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
    return _STAGE_RANK[new] > _STAGE_RANK[old]


_JOB_KEYS = ("job_id", "name", "workload", "primary_master", "standby_master", "replication_budget",
             "query_priorities", "max_recovery_s", "deployment", "created_at", "updated_at")
_DRILL_KEYS = ("drill_id", "plan_id", "params", "status", "predicted_output_fidelity", "tentative_accuracy",
               "time_to_first_tentative_s", "time_to_caught_up_s", "lost_windows", "duplicated_windows",
               "output_equals_reference", "error", "dag_run_id", "started_at", "finished_at")
_RUN_KEYS = ("run_id", "plan_id", "status", "failure", "dag_run_id", "started_at", "finished_at")
_STAGE_KEYS = ("stage_no", "capacity", "partitions", "placement", "status", "waiting_at", "started_at", "finished_at")
_APPLIED_KEYS = ("applied_id", "plan_id", "role", "spark_app_id", "master_url", "started_at", "stopped_at",
                 "kind", "algorithm", "objective")
_PLAN_KEYS = ("plan_id", "job", "kind", "created_at", "algorithm", "parameters", "objective", "optimal", "payload",
              "input_hash", "topology_id", "dag_run_id")


class HistoryStore:
    """The history tables of one PostgreSQL connection (psycopg2, autocommit off)."""

    def __init__(self, conn):
        self.conn = conn

    # -- jobs ------------------------------------------------------------------------------------
    def register_job(self, job: JobSpec) -> int:
        """Insert or update a job by name; returns its id (a None deployment keeps the stored one)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """INSERT INTO ftops_job (name, workload, primary_master, standby_master, replication_budget,
                                          query_priorities, max_recovery_s, deployment)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (name) DO UPDATE SET workload = EXCLUDED.workload,
                       primary_master = EXCLUDED.primary_master, standby_master = EXCLUDED.standby_master,
                       replication_budget = EXCLUDED.replication_budget, query_priorities = EXCLUDED.query_priorities,
                       max_recovery_s = EXCLUDED.max_recovery_s,
                       deployment = coalesce(EXCLUDED.deployment, ftops_job.deployment), updated_at = now()
                   RETURNING job_id""",
                (job.name, job.workload, job.primary_master, job.standby_master, job.replication_budget,
                 json.dumps(job.query_priorities), job.max_recovery_s,
                 None if job.deployment is None else _json(job.deployment)),
            )
            return cur.fetchone()[0]

    def job_id(self, name: str) -> int:
        with self.conn, self.conn.cursor() as cur:
            return self._job_id(cur, name)

    def job(self, name: str) -> dict[str, Any]:
        """The registered job's row, its deployment included (InputError when it is not registered)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"SELECT {', '.join(_JOB_KEYS)} FROM ftops_job WHERE name = %s", (name,))
            row = cur.fetchone()
        if row is None:
            raise InputError(f"job {name!r} is not registered")
        return dict(zip(_JOB_KEYS, row))

    def jobs(self) -> list[dict]:
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT name, workload, replication_budget, max_recovery_s FROM ftops_job ORDER BY name")
            return [dict(zip(("name", "workload", "replication_budget", "max_recovery_s"), r)) for r in cur.fetchall()]

    # -- topologies, profiles and plans ------------------------------------------------------------
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
                (job_id, kind, dag_run_id, _json(doc)),
            )
            row = cur.fetchone()
            if row:
                return row[0]
            cur.execute("INSERT INTO ftops_profile (job_id, kind, doc, dag_run_id) VALUES (%s, %s, %s, %s) RETURNING profile_id",
                        (job_id, kind, _json(doc), dag_run_id))
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
                """SELECT p.plan_id, p.created_at, p.algorithm, p.objective, p.optimal, p.payload, p.topology_id, p.dag_run_id
                   FROM ftops_plan p JOIN ftops_job j USING (job_id) WHERE j.name = %s AND p.kind = %s
                   ORDER BY p.created_at DESC, p.plan_id DESC LIMIT %s""",
                (job, kind, limit),
            )
            keys = ("plan_id", "created_at", "algorithm", "objective", "optimal", "payload", "topology_id", "dag_run_id")
            return [dict(zip(keys, r)) for r in reversed(cur.fetchall())]

    def plan(self, plan_id: int) -> dict[str, Any] | None:
        """One plan with its job's name and payload (None when there is no such plan)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT p.plan_id, j.name, p.kind, p.created_at, p.algorithm, p.parameters, p.objective, p.optimal,
                          p.payload, p.input_hash, p.topology_id, p.dag_run_id
                   FROM ftops_plan p JOIN ftops_job j USING (job_id) WHERE p.plan_id = %s""",
                (plan_id,),
            )
            row = cur.fetchone()
        return dict(zip(_PLAN_KEYS, row)) if row else None

    def latest_topology(self, job: str) -> dict | None:
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """SELECT t.doc FROM ftops_topology_version t JOIN ftops_job j USING (job_id)
                   WHERE j.name = %s ORDER BY t.version DESC LIMIT 1""",
                (job,),
            )
            row = cur.fetchone()
        return row[0] if row else None

    # -- applied plans: which Spark application runs which plan ------------------------------------
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
            return _rows(cur, _APPLIED_KEYS)

    # -- drills ------------------------------------------------------------------------------------
    def start_drill(self, job: str, plan_id: int | None, params: dict[str, Any], dag_run_id: str | None = None) -> int:
        """Open a drill of the job against a replication plan; returns its id.

        The predicted output fidelity is the plan's objective, recorded now, so a drill that fails
        before it is measured still shows what it was expected to keep. A DAG run has one drill per
        job: starting it again returns the same id, reopened if it had finished (the run is drilling
        again, and its earlier measurement no longer describes the job).
        """
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            predicted = self._check_plan_of(cur, plan_id, job_id, job) if plan_id is not None else None
            existing = self._drill_of_run(cur, job_id, dag_run_id)
            if existing is not None:
                drill_id, status = existing
                if status != "running":
                    self._reopen_drill(cur, drill_id, plan_id, params, predicted)
                    self._event(cur, job_id, "drill_restarted", {"drill_id": drill_id, "dag_run_id": dag_run_id})
                return drill_id
            cur.execute(
                """INSERT INTO ftops_drill (job_id, plan_id, params, status, predicted_output_fidelity, dag_run_id)
                   VALUES (%s, %s, %s, 'running', %s, %s) RETURNING drill_id""",
                (job_id, plan_id, _json(params), predicted, dag_run_id),
            )
            drill_id = cur.fetchone()[0]
            self._event(cur, job_id, "drill_started", {"drill_id": drill_id, "plan_id": plan_id, "params": params})
            return drill_id

    def finish_drill(self, drill_id: int, report: dict[str, Any], status: DrillOutcome) -> None:
        """Close a drill with its report: the measured columns and one ``ftops_drill_window`` row per
        failure window (its start and tentative accuracy).

        The report is merged into the stored one and a field the report lacks keeps its stored value,
        so closing a measured drill again as failed with only ``{"error": ...}`` adds the reason without
        erasing the measurement; a report with windows replaces the drill's windows.
        """
        if status not in ("passed", "failed"):
            raise InputError(f"drill status {status!r}: expected 'passed' or 'failed'")
        measured = _validated(DrillMeasurement, "drill report", report)
        with self.conn, self.conn.cursor() as cur:
            job_id = self._lock_drill(cur, drill_id)
            cur.execute(
                """UPDATE ftops_drill SET status = %s, finished_at = now(),
                       predicted_output_fidelity = coalesce(%s, predicted_output_fidelity),
                       tentative_accuracy = coalesce(%s, tentative_accuracy),
                       time_to_first_tentative_s = coalesce(%s, time_to_first_tentative_s),
                       time_to_caught_up_s = coalesce(%s, time_to_caught_up_s),
                       lost_windows = coalesce(%s, lost_windows), duplicated_windows = coalesce(%s, duplicated_windows),
                       output_equals_reference = coalesce(%s, output_equals_reference),
                       report = coalesce(report, '{}'::jsonb) || %s::jsonb
                   WHERE drill_id = %s""",
                (status, measured.predicted_output_fidelity, measured.tentative_accuracy,
                 measured.time_to_first_tentative_s, measured.time_to_caught_up_s, measured.lost_windows,
                 measured.duplicated_windows, measured.output_equals_reference, _json(report), drill_id),
            )
            if measured.failure_window_starts_ms:
                cur.execute("DELETE FROM ftops_drill_window WHERE drill_id = %s", (drill_id,))
                cur.executemany("INSERT INTO ftops_drill_window (drill_id, window_start, accuracy) VALUES (%s, %s, %s)",
                                [(drill_id, start, acc) for start, acc in measured.windows()])
            self._event(cur, job_id, "drill_finished", {"drill_id": drill_id, "status": status,
                                                        "tentative_accuracy": measured.tentative_accuracy})

    def drill_status(self, drill_id: int) -> str:
        """``running``, ``passed`` or ``failed`` (InputError when there is no such drill)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT status FROM ftops_drill WHERE drill_id = %s", (drill_id,))
            row = cur.fetchone()
        if row is None:
            raise InputError(f"drill {drill_id} does not exist")
        return row[0]

    def drills(self, job: str, limit: int = 100) -> list[dict[str, Any]]:
        """The job's newest ``limit`` drills, oldest first, each with its failure ``windows``
        (``window_start``, ``accuracy``) and the ``error`` its report gives, if any."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                f"""SELECT * FROM (
                        SELECT {', '.join('d.' + k for k in _DRILL_KEYS if k != 'error')}, d.report->>'error' AS error
                        FROM ftops_drill d JOIN ftops_job j USING (job_id) WHERE j.name = %s
                        ORDER BY d.started_at DESC, d.drill_id DESC LIMIT %s) newest
                    ORDER BY started_at, drill_id""",
                (job, limit),
            )
            keys = tuple(k for k in _DRILL_KEYS if k != "error") + ("error",)
            drills = _rows(cur, keys)
            windows = self._drill_windows(cur, [d["drill_id"] for d in drills])
        for d in drills:
            d["windows"] = windows.get(d["drill_id"], [])
        return drills

    # -- recovery runs -----------------------------------------------------------------------------
    def start_recovery_run(self, job: str, plan_id: int | None, failure: dict[str, Any], dag_run_id: str | None = None) -> int:
        """Open a recovery run of the job for a failure (its domain, time, units: a plain dict); returns its id.

        Idempotent per DAG run: a retried or resumed run gets the same id back, with its stages as
        recorded (reopened to ``running`` if it had finished), so it can resume rather than restart.
        The run keeps the plan and failure it was first opened with.
        """
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            if plan_id is not None:
                self._check_plan_of(cur, plan_id, job_id, job)
            if dag_run_id is not None:
                cur.execute("SELECT run_id, status FROM ftops_recovery_run WHERE job_id = %s AND dag_run_id = %s",
                            (job_id, dag_run_id))
                row = cur.fetchone()
                if row is not None:
                    if row[1] != "running":
                        cur.execute("UPDATE ftops_recovery_run SET status = 'running', finished_at = NULL WHERE run_id = %s",
                                    (row[0],))
                        self._event(cur, job_id, "recovery_resumed", {"run_id": row[0], "dag_run_id": dag_run_id})
                    return row[0]
            cur.execute(
                """INSERT INTO ftops_recovery_run (job_id, plan_id, status, failure, dag_run_id)
                   VALUES (%s, %s, 'running', %s, %s) RETURNING run_id""",
                (job_id, plan_id, _json(failure), dag_run_id),
            )
            run_id = cur.fetchone()[0]
            self._event(cur, job_id, "recovery_started", {"run_id": run_id, "plan_id": plan_id})
            return run_id

    def record_stage(self, run_id: int, stage_no: int, capacity: float, partitions: list[str], placement: dict[str, Any],
                     status: StageStatus, started_at: datetime | float | None = None,
                     finished_at: datetime | float | None = None, *,
                     waiting_at: datetime | float | None = None) -> dict[str, Any]:
        """Create or advance a stage of a recovery run; returns the stage as stored.

        Stages are numbered from 1. A stage only moves forward (pending -> waiting -> started ->
        done/failed; a failed stage may wait or start again); a write that would move it back is
        ignored, so the returned status may differ from ``status``. Entering ``waiting``, ``started``
        or ``done``/``failed`` stamps ``waiting_at``, ``started_at`` or ``finished_at`` (given times,
        datetimes or Unix seconds, win over now) and keeps a time recorded before. A write that jumps
        ahead (pending -> done) records the times it is given, and no others.
        """
        update = _validated(StageUpdate, f"stage {stage_no}", {
            "stage_no": stage_no, "capacity": capacity, "partitions": partitions, "placement": placement,
            "status": status, "waiting_at": waiting_at, "started_at": started_at, "finished_at": finished_at})
        with self.conn, self.conn.cursor() as cur:
            self._lock_run(cur, run_id)
            cur.execute("SELECT status FROM ftops_recovery_stage WHERE run_id = %s AND stage_no = %s", (run_id, stage_no))
            row = cur.fetchone()
            old = row[0] if row else None
            if _stage_transition(old, update.status):
                self._write_stage(cur, run_id, update, retried=old == "failed" and update.status in ("waiting", "started"))
            cur.execute(f"SELECT {', '.join(_STAGE_KEYS)} FROM ftops_recovery_stage WHERE run_id = %s AND stage_no = %s",
                        (run_id, stage_no))
            return dict(zip(_STAGE_KEYS, cur.fetchone()))

    def recovery_stages(self, run_id: int) -> list[dict[str, Any]]:
        """A run's stages in order, with status and times: what a resumed run reads to skip done stages."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"SELECT {', '.join(_STAGE_KEYS)} FROM ftops_recovery_stage WHERE run_id = %s ORDER BY stage_no",
                        (run_id,))
            return _rows(cur, _STAGE_KEYS)

    def record_query_recovery(self, run_id: int, query: str, priority: float, recovered_s: float | None) -> None:
        """When a query of the run was available again, in seconds after the failure (None: not yet).

        Recording a query again updates it, except that a recovered query never becomes unrecovered: a
        later None does not erase a measured time.
        """
        q = _validated(RecoveredQuery, f"query {query!r}",
                       {"query": query, "priority": priority, "recovered_s": recovered_s})
        with self.conn, self.conn.cursor() as cur:
            self._lock_run(cur, run_id)
            cur.execute(
                """INSERT INTO ftops_recovery_query (run_id, query, priority, recovered_s) VALUES (%s, %s, %s, %s)
                   ON CONFLICT (run_id, query) DO UPDATE SET priority = EXCLUDED.priority,
                       recovered_s = coalesce(EXCLUDED.recovered_s, ftops_recovery_query.recovered_s)""",
                (run_id, q.query, q.priority, q.recovered_s),
            )

    def fail_unfinished_stages(self, run_id: int) -> list[int]:
        """Mark the stages that began (waiting or started) but never finished as ``failed``; returns their
        numbers. Called when a run ends: such a stage's wait or restart failed, and a run with one did not
        succeed. Pending stages (never begun: nothing to start, or after a failed stage) stay pending."""
        stalled = [s for s in self.recovery_stages(run_id) if s["status"] in ("waiting", "started")]
        for s in stalled:
            self.record_stage(run_id, s["stage_no"], s["capacity"], s["partitions"], s["placement"], "failed")
        return [s["stage_no"] for s in stalled]

    def finish_recovery_run(self, run_id: int, status: RunOutcome) -> None:
        """Close a recovery run as ``succeeded`` or ``failed`` (again: the status is updated, the first
        finish time kept while the status stays the same)."""
        if status not in ("succeeded", "failed"):
            raise InputError(f"recovery run status {status!r}: expected 'succeeded' or 'failed'")
        with self.conn, self.conn.cursor() as cur:
            job_id, old = self._lock_run(cur, run_id)
            cur.execute(
                """UPDATE ftops_recovery_run SET status = %s,
                       finished_at = CASE WHEN status = %s THEN coalesce(finished_at, now()) ELSE now() END
                   WHERE run_id = %s""",
                (status, status, run_id),
            )
            if old != status:
                self._event(cur, job_id, "recovery_finished", {"run_id": run_id, "status": status})

    def recovery_runs(self, job: str, limit: int = 50) -> list[dict[str, Any]]:
        """The job's newest ``limit`` recovery runs, oldest first, each with its ``stages`` (as in
        :meth:`recovery_stages`) and ``queries`` (``query``, ``priority``, ``recovered_s``)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                f"""SELECT * FROM (
                        SELECT {', '.join('r.' + k for k in _RUN_KEYS)}
                        FROM ftops_recovery_run r JOIN ftops_job j USING (job_id) WHERE j.name = %s
                        ORDER BY r.started_at DESC, r.run_id DESC LIMIT %s) newest
                    ORDER BY started_at, run_id""",
                (job, limit),
            )
            runs = _rows(cur, _RUN_KEYS)
            ids = [r["run_id"] for r in runs]
            cur.execute(f"SELECT run_id, {', '.join(_STAGE_KEYS)} FROM ftops_recovery_stage WHERE run_id = ANY(%s) "
                        "ORDER BY run_id, stage_no", (ids,))
            stages = _rows(cur, ("run_id", *_STAGE_KEYS))
            cur.execute("SELECT run_id, query, priority, recovered_s FROM ftops_recovery_query WHERE run_id = ANY(%s) "
                        "ORDER BY run_id, recovered_s NULLS LAST, query", (ids,))
            queries = _rows(cur, ("run_id", "query", "priority", "recovered_s"))
        for run in runs:
            run["stages"] = [{k: s[k] for k in _STAGE_KEYS} for s in stages if s["run_id"] == run["run_id"]]
            run["queries"] = [{k: q[k] for k in ("query", "priority", "recovered_s")} for q in queries
                              if q["run_id"] == run["run_id"]]
        return runs

    # -- events ------------------------------------------------------------------------------------
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
            return _rows(cur, ("event_id", "kind", "payload", "created_at"))

    # -- helpers: each runs inside the caller's transaction ----------------------------------------
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
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_JOB_LOCK_BASE + job_id,))
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
    def _drill_of_run(cur, job_id: int, dag_run_id: str | None) -> tuple[int, str] | None:
        if dag_run_id is None:
            return None
        cur.execute("SELECT drill_id, status FROM ftops_drill WHERE job_id = %s AND dag_run_id = %s", (job_id, dag_run_id))
        return cur.fetchone()

    @staticmethod
    def _reopen_drill(cur, drill_id: int, plan_id: int | None, params: dict[str, Any], predicted: float | None) -> None:
        cur.execute(
            """UPDATE ftops_drill SET status = 'running', plan_id = %s, params = %s, predicted_output_fidelity = %s,
                   tentative_accuracy = NULL, time_to_first_tentative_s = NULL, time_to_caught_up_s = NULL,
                   lost_windows = NULL, duplicated_windows = NULL, output_equals_reference = NULL, report = NULL,
                   started_at = now(), finished_at = NULL
               WHERE drill_id = %s""",
            (plan_id, _json(params), predicted, drill_id),
        )
        cur.execute("DELETE FROM ftops_drill_window WHERE drill_id = %s", (drill_id,))

    def _lock_drill(self, cur, drill_id: int) -> int:
        """The drill's job id, with the job locked (InputError when there is no such drill)."""
        cur.execute("SELECT job_id FROM ftops_drill WHERE drill_id = %s", (drill_id,))
        row = cur.fetchone()
        if row is None:
            raise InputError(f"drill {drill_id} does not exist")
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_JOB_LOCK_BASE + row[0],))
        return row[0]

    @staticmethod
    def _lock_run(cur, run_id: int) -> tuple[int, str]:
        """(job id, status) of the run, its row locked: one run's stage and query writes never interleave."""
        cur.execute("SELECT job_id, status FROM ftops_recovery_run WHERE run_id = %s FOR UPDATE", (run_id,))
        row = cur.fetchone()
        if row is None:
            raise InputError(f"recovery run {run_id} does not exist")
        return row[0], row[1]

    @staticmethod
    def _write_stage(cur, run_id: int, s: StageUpdate, retried: bool) -> None:
        """Upsert the stage; entering a status stamps its time, a retried stage forgets its last attempt's."""
        cur.execute(
            """INSERT INTO ftops_recovery_stage (run_id, stage_no, capacity, partitions, placement, status)
               VALUES (%s, %s, %s, %s, %s, %s)
               ON CONFLICT (run_id, stage_no) DO UPDATE SET capacity = EXCLUDED.capacity,
                   partitions = EXCLUDED.partitions, placement = EXCLUDED.placement, status = EXCLUDED.status""",
            (run_id, s.stage_no, s.capacity, _json(s.partitions), _json(s.placement), s.status),
        )
        if retried:
            cur.execute("UPDATE ftops_recovery_stage SET waiting_at = NULL, started_at = NULL, finished_at = NULL "
                        "WHERE run_id = %s AND stage_no = %s", (run_id, s.stage_no))
        now = datetime.now(timezone.utc)
        waiting = (s.waiting_at or now) if s.status == "waiting" else s.waiting_at if s.status != "pending" else None
        started = (s.started_at or now) if s.status == "started" else s.started_at if s.status in ("done", "failed") else None
        finished = (s.finished_at or now) if s.status in ("done", "failed") else None
        cur.execute(
            """UPDATE ftops_recovery_stage SET waiting_at = coalesce(waiting_at, %s),
                   started_at = coalesce(started_at, %s), finished_at = coalesce(finished_at, %s)
               WHERE run_id = %s AND stage_no = %s""",
            (waiting, started, finished, run_id, s.stage_no),
        )

    @staticmethod
    def _drill_windows(cur, drill_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
        cur.execute("SELECT drill_id, window_start, accuracy FROM ftops_drill_window WHERE drill_id = ANY(%s) "
                    "ORDER BY drill_id, window_start", (drill_ids,))
        out: dict[int, list[dict[str, Any]]] = {}
        for drill_id, start, accuracy in cur.fetchall():
            out.setdefault(drill_id, []).append({"window_start": start, "accuracy": accuracy})
        return out

    @staticmethod
    def _event(cur, job_id: int | None, kind: str, payload: dict[str, Any]) -> int:
        cur.execute("INSERT INTO ftops_event (job_id, kind, payload) VALUES (%s, %s, %s) RETURNING event_id",
                    (job_id, kind, _json(payload)))
        return cur.fetchone()[0]
