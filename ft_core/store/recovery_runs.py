"""Recovery runs in the history store: stages that only move forward, and when each query was back."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ft_core.errors import InputError
from ft_core.store.base import StoreBase
from ft_core.store.records import (
    RUN_KEYS,
    STAGE_KEYS,
    RecoveredQuery,
    RunOutcome,
    StageStatus,
    StageUpdate,
    jsonb,
    rows,
    stage_transition,
    validated,
)


class RecoveryRecords(StoreBase):
    """Recovery runs, their stages (waiting, started, done or failed) and per-query recovery times."""

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
                (job_id, plan_id, jsonb(failure), dag_run_id),
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
        update = validated(StageUpdate, f"stage {stage_no}", {
            "stage_no": stage_no, "capacity": capacity, "partitions": partitions, "placement": placement,
            "status": status, "waiting_at": waiting_at, "started_at": started_at, "finished_at": finished_at})
        with self.conn, self.conn.cursor() as cur:
            self._lock_run(cur, run_id)
            cur.execute("SELECT status FROM ftops_recovery_stage WHERE run_id = %s AND stage_no = %s", (run_id, stage_no))
            row = cur.fetchone()
            old = row[0] if row else None
            if stage_transition(old, update.status):
                self._write_stage(cur, run_id, update, retried=old == "failed" and update.status in ("waiting", "started"))
            cur.execute(f"SELECT {', '.join(STAGE_KEYS)} FROM ftops_recovery_stage WHERE run_id = %s AND stage_no = %s",
                        (run_id, stage_no))
            return dict(zip(STAGE_KEYS, cur.fetchone()))

    def recovery_stages(self, run_id: int) -> list[dict[str, Any]]:
        """A run's stages in order, with status and times: what a resumed run reads to skip done stages."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"SELECT {', '.join(STAGE_KEYS)} FROM ftops_recovery_stage WHERE run_id = %s ORDER BY stage_no",
                        (run_id,))
            return rows(cur, STAGE_KEYS)

    def record_query_recovery(self, run_id: int, query: str, priority: float, recovered_s: float | None) -> None:
        """When a query of the run was available again, in seconds after the failure (None: not yet).

        Recording a query again updates it, except that a recovered query never becomes unrecovered: a
        later None does not erase a measured time.
        """
        q = validated(RecoveredQuery, f"query {query!r}",
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
        :meth:`recovery_stages`), ``queries`` (``query``, ``priority``, ``recovered_s``) and ``has_report``
        (whether its experiment report was written)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                f"""SELECT * FROM (
                        SELECT {', '.join('r.' + k for k in RUN_KEYS)}, r.experiment IS NOT NULL AS has_report
                        FROM ftops_recovery_run r JOIN ftops_job j USING (job_id) WHERE j.name = %s
                        ORDER BY r.started_at DESC, r.run_id DESC LIMIT %s) newest
                    ORDER BY started_at, run_id""",
                (job, limit),
            )
            runs = rows(cur, (*RUN_KEYS, "has_report"))
            ids = [r["run_id"] for r in runs]
            cur.execute(f"SELECT run_id, {', '.join(STAGE_KEYS)} FROM ftops_recovery_stage WHERE run_id = ANY(%s) "
                        "ORDER BY run_id, stage_no", (ids,))
            stages = rows(cur, ("run_id", *STAGE_KEYS))
            cur.execute("SELECT run_id, query, priority, recovered_s FROM ftops_recovery_query WHERE run_id = ANY(%s) "
                        "ORDER BY run_id, recovered_s NULLS LAST, query", (ids,))
            queries = rows(cur, ("run_id", "query", "priority", "recovered_s"))
        for run in runs:
            run["stages"] = [{k: s[k] for k in STAGE_KEYS} for s in stages if s["run_id"] == run["run_id"]]
            run["queries"] = [{k: q[k] for k in ("query", "priority", "recovered_s")} for q in queries
                              if q["run_id"] == run["run_id"]]
        return runs

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
            (run_id, s.stage_no, s.capacity, jsonb(s.partitions), jsonb(s.placement), s.status),
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

