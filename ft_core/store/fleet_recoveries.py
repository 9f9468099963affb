"""Fleet recoveries in the history store (migration 015): the jobs lost with a failure domain, restarted in the
planned order as capacity returned, each with its planned, predicted and measured time back (issue 33, item 3).

A run is opened once per DAG run (a retried task or a resumed run gets it back, its jobs as first recorded); a
job's restart and its time back are each recorded once (the first write wins: a retried task does not move them).
Times are seconds after the run's ``failed_at``.

    # run_id = store.open_fleet_recovery("manual__1", "staged", failed_at, plan, [{"job": "billing", ...}])
    # store.fleet_restarted(run_id, "billing", restarted_at, predicted_back_s=41.5)
    # store.fleet_back(run_id, "billing", back_at, restart_delay_s=12.0)
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ft_core.errors import InputError
from ft_core.store.base import StoreBase
from ft_core.store.records import jsonb, rows

RUN_KEYS = ("run_id", "dag_run_id", "policy", "failed_at", "status", "plan", "started_at", "finished_at", "outcome")
JOB_KEYS = ("run_id", "job", "priority", "stage", "planned_start_s", "planned_back_s", "inputs", "restarted_at",
            "predicted_back_s", "restart_delay_s", "back_at", "measured_back_s")
_JOBS = f"""SELECT r.run_id, j.name, r.priority, r.stage, r.planned_start_s, r.planned_back_s, r.inputs, r.restarted_at,
                   r.predicted_back_s, r.restart_delay_s, r.back_at, r.measured_back_s
            FROM ftops_fleet_recovery_job r JOIN ftops_job j USING (job_id)"""


def _ts(value: datetime | float) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromtimestamp(value, tz=timezone.utc)


class FleetRecoveryRecords(StoreBase):
    """Open a fleet recovery, record each job's restart and time back, finish it, read it back."""

    def open_fleet_recovery(self, dag_run_id: str | None, policy: str, failed_at: datetime | float, plan: dict[str, Any],
                            jobs: list[dict[str, Any]]) -> int:
        """Open a run (``jobs``: ``job``, ``priority``, ``stage``, ``planned_start_s``, ``planned_back_s``,
        ``inputs``); the same DAG run's run id when it has one already (its jobs as first recorded)."""
        if not jobs:
            raise InputError("a fleet recovery needs at least one job")
        with self.conn, self.conn.cursor() as cur:
            if dag_run_id is not None:
                cur.execute("SELECT run_id FROM ftops_fleet_recovery WHERE dag_run_id = %s", (dag_run_id,))
                row = cur.fetchone()
                if row is not None:
                    cur.execute("UPDATE ftops_fleet_recovery SET status = 'running', finished_at = NULL, outcome = NULL "
                                "WHERE run_id = %s", (row[0],))
                    return row[0]
            cur.execute("""INSERT INTO ftops_fleet_recovery (dag_run_id, policy, failed_at, plan)
                           VALUES (%s, %s, %s, %s) RETURNING run_id""", (dag_run_id, policy, _ts(failed_at), jsonb(plan)))
            run_id = cur.fetchone()[0]
            for j in jobs:
                job_id = self._job_id(cur, j["job"])
                cur.execute("""INSERT INTO ftops_fleet_recovery_job (run_id, job_id, priority, stage, planned_start_s,
                                                                      planned_back_s, inputs)
                               VALUES (%s, %s, %s, %s, %s, %s, %s)""",
                            (run_id, job_id, j["priority"], j.get("stage"), j.get("planned_start_s"),
                             j.get("planned_back_s"), jsonb(j.get("inputs", {}))))
                self._event(cur, job_id, "fleet_recovery_started", {"run_id": run_id, "stage": j.get("stage"),
                                                                     "dag_run_id": dag_run_id})
            return run_id

    def fleet_restarted(self, run_id: int, job: str, restarted_at: datetime | float, predicted_back_s: float | None) -> None:
        """Record the job's restart (the first one recorded stays) and its time back as predicted then."""
        self._update(run_id, job, "restarted_at = coalesce(restarted_at, %s), "
                                  "predicted_back_s = coalesce(predicted_back_s, %s)", (_ts(restarted_at), predicted_back_s))

    def fleet_back(self, run_id: int, job: str, back_at: datetime | float, restart_delay_s: float | None) -> None:
        """Record when the job was back (caught up with its input; the first one recorded stays)."""
        self._update(run_id, job, """back_at = coalesce(back_at, %s), restart_delay_s = coalesce(restart_delay_s, %s),
                                     measured_back_s = coalesce(measured_back_s, extract(epoch FROM %s - (
                                         SELECT failed_at FROM ftops_fleet_recovery WHERE run_id = %s)))""",
                     (_ts(back_at), restart_delay_s, _ts(back_at), run_id))

    def finish_fleet_recovery(self, run_id: int, status: str, outcome: str) -> None:
        if status not in ("done", "failed"):
            raise InputError(f"fleet recovery status {status!r}: expected done or failed")
        with self.conn, self.conn.cursor() as cur:
            cur.execute("UPDATE ftops_fleet_recovery SET status = %s, outcome = %s, finished_at = now() WHERE run_id = %s "
                        "RETURNING run_id", (status, outcome, run_id))
            if cur.fetchone() is None:
                raise InputError(f"fleet recovery {run_id} does not exist")

    def abandon_fleet_recovery(self, run_id: int, outcome: str) -> bool:
        """Record a run whose holder died as failed, only while it is still ``running`` (a run that recorded its own
        end keeps it); whether it was."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("UPDATE ftops_fleet_recovery SET status = 'failed', outcome = %s, finished_at = now() "
                        "WHERE run_id = %s AND status = 'running' RETURNING run_id", (outcome, run_id))
            return cur.fetchone() is not None

    def fleet_recovery(self, run_id: int) -> dict[str, Any]:
        """The run and its jobs (in stage order)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"SELECT {', '.join(RUN_KEYS)} FROM ftops_fleet_recovery WHERE run_id = %s", (run_id,))
            found = rows(cur, RUN_KEYS)
            if not found:
                raise InputError(f"fleet recovery {run_id} does not exist")
            cur.execute(f"{_JOBS} WHERE r.run_id = %s ORDER BY r.stage NULLS LAST, r.planned_start_s, j.name", (run_id,))
            return {**found[0], "jobs": rows(cur, JOB_KEYS)}

    def running_fleet_recoveries(self, job: str | None = None) -> list[dict[str, Any]]:
        """The fleet recoveries still ``running`` (in which ``job`` takes part, when given): ``run_id``,
        ``dag_run_id`` and ``jobs`` (names), oldest first."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("""SELECT f.run_id, f.dag_run_id, array_agg(j.name ORDER BY j.name)
                           FROM ftops_fleet_recovery f JOIN ftops_fleet_recovery_job r USING (run_id)
                                JOIN ftops_job j USING (job_id)
                           WHERE f.status = 'running'
                           GROUP BY f.run_id HAVING %s::text IS NULL OR %s = ANY(array_agg(j.name))
                           ORDER BY f.run_id""", (job, job))
            return [{"run_id": r[0], "dag_run_id": r[1], "jobs": list(r[2])} for r in cur.fetchall()]

    def job_fleet_recoveries(self, job: str, limit: int = 20) -> list[dict[str, Any]]:
        """The job's rows in its newest ``limit`` fleet recoveries, newest first, each with its run's policy,
        failure time and status (index-backed: ``ftops_fleet_recovery_job_of``)."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job)
            cur.execute("""SELECT f.policy, f.failed_at, f.status, r.run_id, j.name, r.priority, r.stage, r.planned_start_s,
                                  r.planned_back_s, r.inputs, r.restarted_at, r.predicted_back_s, r.restart_delay_s,
                                  r.back_at, r.measured_back_s
                           FROM ftops_fleet_recovery_job r JOIN ftops_job j USING (job_id)
                                JOIN ftops_fleet_recovery f USING (run_id)
                           WHERE r.job_id = %s ORDER BY r.run_id DESC LIMIT %s""", (job_id, limit))
            return rows(cur, ("policy", "failed_at", "status", *JOB_KEYS))

    def fleet_recovery_of(self, dag_run_id: str) -> int | None:
        """The fleet recovery a DAG run opened (None: none yet)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT run_id FROM ftops_fleet_recovery WHERE dag_run_id = %s", (dag_run_id,))
            row = cur.fetchone()
            return None if row is None else row[0]

    def _update(self, run_id: int, job: str, assignments: str, params: tuple) -> None:
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job)
            cur.execute(f"UPDATE ftops_fleet_recovery_job SET {assignments} WHERE run_id = %s AND job_id = %s "
                        "RETURNING job_id", (*params, run_id, job_id))
            if cur.fetchone() is None:
                raise InputError(f"job {job!r} is not in fleet recovery {run_id}")
