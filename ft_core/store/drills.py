"""Drills in the history store: opened per DAG run, closed with their measured report and windows."""

from __future__ import annotations

from typing import Any

from ft_core.errors import InputError
from ft_core.store.base import StoreBase
from ft_core.store.records import DRILL_KEYS, JOB_LOCK_BASE, DrillMeasurement, DrillOutcome, jsonb, rows, validated

# a drill's fault time (epoch s): its report's, else its experiment timeline's "failure injected" (older drills)
_FAILED_AT = """coalesce((d.report->>'failed_at')::float8,
                (SELECT (e->>'at')::float8 FROM jsonb_array_elements(d.experiment->'timeline') e
                 WHERE e->>'event' = 'failure injected' LIMIT 1))"""
# a job's cluster: its deployment's primary master (an attached job's: its master)
_MASTER = "coalesce(j.deployment->>'primary_master', j.deployment->>'master')"


class DrillRecords(StoreBase):
    """Drills: predicted output fidelity and predicted accuracy against measured tentative accuracy, per
    failure window."""

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
            accuracy = self._plan_accuracy(cur, plan_id)
            existing = self._drill_of_run(cur, job_id, dag_run_id)
            if existing is not None:
                drill_id, status = existing
                if status != "running":
                    self._reopen_drill(cur, drill_id, plan_id, params, predicted, accuracy)
                    self._event(cur, job_id, "drill_restarted", {"drill_id": drill_id, "dag_run_id": dag_run_id})
                return drill_id
            cur.execute(
                """INSERT INTO ftops_drill (job_id, plan_id, params, status, predicted_output_fidelity, predicted_accuracy,
                                           dag_run_id)
                   VALUES (%s, %s, %s, 'running', %s, %s, %s) RETURNING drill_id""",
                (job_id, plan_id, jsonb(params), predicted, accuracy, dag_run_id),
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
        if status not in ("passed", "failed", "aborted"):
            raise InputError(f"drill status {status!r}: expected 'passed', 'failed' or 'aborted'")
        measured = validated(DrillMeasurement, "drill report", report)
        with self.conn, self.conn.cursor() as cur:
            job_id = self._lock_drill(cur, drill_id)
            cur.execute(
                """UPDATE ftops_drill SET status = %s, finished_at = now(),
                       predicted_output_fidelity = coalesce(%s, predicted_output_fidelity),
                       predicted_accuracy = coalesce(%s, predicted_accuracy),
                       tentative_accuracy = coalesce(%s, tentative_accuracy),
                       time_to_first_tentative_s = coalesce(%s, time_to_first_tentative_s),
                       time_to_caught_up_s = coalesce(%s, time_to_caught_up_s),
                       predicted_caught_up_s = coalesce(%s, predicted_caught_up_s),
                       lost_windows = coalesce(%s, lost_windows), duplicated_windows = coalesce(%s, duplicated_windows),
                       output_equals_reference = coalesce(%s, output_equals_reference),
                       report = coalesce(report, '{}'::jsonb) || %s::jsonb
                   WHERE drill_id = %s""",
                (status, measured.predicted_output_fidelity, measured.predicted_accuracy, measured.tentative_accuracy,
                 measured.time_to_first_tentative_s, measured.time_to_caught_up_s, measured.predicted_caught_up_s,
                 measured.lost_windows,
                 measured.duplicated_windows, measured.output_equals_reference, jsonb(report), drill_id),
            )
            if measured.failure_window_starts_ms:
                cur.execute("DELETE FROM ftops_drill_window WHERE drill_id = %s", (drill_id,))
                cur.executemany("INSERT INTO ftops_drill_window (drill_id, window_start, accuracy) VALUES (%s, %s, %s)",
                                [(drill_id, start, acc) for start, acc in measured.windows()])
            self._event(cur, job_id, "drill_finished", {"drill_id": drill_id, "status": status,
                                                        "tentative_accuracy": measured.tentative_accuracy})

    def drill_status(self, drill_id: int) -> str:
        """``running``, ``passed``, ``failed`` or ``aborted`` (InputError when there is no such drill)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT status FROM ftops_drill WHERE drill_id = %s", (drill_id,))
            row = cur.fetchone()
        if row is None:
            raise InputError(f"drill {drill_id} does not exist")
        return row[0]

    def abandon_running_drills(self, job: str, reason: str, keep_dag_run_id: str | None = None) -> list[int]:
        """Close the job's drills still ``running`` (but the one of ``keep_dag_run_id``) as ``aborted`` with
        ``reason``: called by whoever just took the job's lease, since no one else can be drilling it (their
        holder died and its lease expired). Returns the ids closed."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            cur.execute(
                """UPDATE ftops_drill SET status = 'aborted', finished_at = now(),
                       report = coalesce(report, '{}'::jsonb) || jsonb_build_object('error', %s::text)
                   WHERE job_id = %s AND status = 'running' AND (%s::text IS NULL OR dag_run_id IS DISTINCT FROM %s)
                   RETURNING drill_id""",
                (reason, job_id, keep_dag_run_id, keep_dag_run_id),
            )
            closed = sorted(r[0] for r in cur.fetchall())
            for drill_id in closed:
                self._event(cur, job_id, "drill_finished", {"drill_id": drill_id, "status": "aborted", "error": reason})
        return closed

    def drill_report(self, drill_id: int) -> dict[str, Any]:
        """The drill's stored report (every key its writers gave; empty while nothing was recorded)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT report FROM ftops_drill WHERE drill_id = %s", (drill_id,))
            row = cur.fetchone()
        if row is None:
            raise InputError(f"drill {drill_id} does not exist")
        return row[0] or {}

    def drills(self, job: str, limit: int = 100) -> list[dict[str, Any]]:
        """The job's newest ``limit`` drills, oldest first, each with its failure ``windows``
        (``window_start``, ``accuracy``), the ``error`` its report gives, if any, and ``has_report``
        (whether its experiment report was written)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                f"""SELECT * FROM (
                        SELECT {', '.join('d.' + k for k in DRILL_KEYS if k != 'error')}, d.report->>'error' AS error,
                               d.experiment IS NOT NULL AS has_report
                        FROM ftops_drill d JOIN ftops_job j USING (job_id) WHERE j.name = %s
                        ORDER BY d.started_at DESC, d.drill_id DESC LIMIT %s) newest
                    ORDER BY started_at, drill_id""",
                (job, limit),
            )
            keys = tuple(k for k in DRILL_KEYS if k != "error") + ("error", "has_report")
            drills = rows(cur, keys)
            windows = self._drill_windows(cur, [d["drill_id"] for d in drills])
        for d in drills:
            d["windows"] = windows.get(d["drill_id"], [])
        return drills

    def drill_timings(self, job: str, before_ts: float, limit: int = 5) -> list[dict[str, Any]]:
        """The job's newest ``limit`` drills whose fault came before ``before_ts`` (epoch s) and whose primary caught
        up, newest first: ``drill_id``, ``failed_at`` (epoch s: the report's, else the experiment timeline's
        "failure injected"), ``capacity_alive_s``, ``time_to_caught_up_s`` and the drill's ``params``: what the
        next drill's catch-up prediction learns from (:mod:`ft_core.recovery.drill_catch_up`)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                f"""SELECT * FROM (
                       SELECT d.drill_id, {_FAILED_AT} AS failed_at,
                              (d.report->>'capacity_alive_s')::float8, d.time_to_caught_up_s, d.params
                       FROM ftops_drill d JOIN ftops_job j USING (job_id)
                       WHERE j.name = %s AND d.time_to_caught_up_s IS NOT NULL) measured
                   WHERE failed_at < %s ORDER BY failed_at DESC LIMIT %s""",
                (job, before_ts, limit))
            return rows(cur, ("drill_id", "failed_at", "capacity_alive_s", "time_to_caught_up_s", "params"))

    def cluster_capacity_timings(self, job: str, before_ts: float, limit: int = 5) -> list[dict[str, Any]]:
        """The newest ``limit`` drills whose fault came before ``before_ts`` and whose capacity came back, of the job
        and of every job on the same primary master (a worker's join is the cluster's, not a job's), newest first:
        ``drill_id``, ``job``, ``failed_at``, ``capacity_alive_s`` and ``params``."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                f"""SELECT * FROM (
                       SELECT d.drill_id, j.name, {_FAILED_AT} AS failed_at,
                              (d.report->>'capacity_alive_s')::float8 AS capacity_alive_s, d.params
                       FROM ftops_drill d JOIN ftops_job j USING (job_id)
                       WHERE d.report->>'capacity_alive_s' IS NOT NULL
                         AND (j.name = %(job)s OR {_MASTER} = (SELECT {_MASTER} FROM ftops_job j WHERE j.name = %(job)s))
                   ) measured
                   WHERE failed_at < %(before)s ORDER BY failed_at DESC LIMIT %(limit)s""",
                {"job": job, "before": before_ts, "limit": limit})
            return rows(cur, ("drill_id", "job", "failed_at", "capacity_alive_s", "params"))

    @staticmethod
    def _plan_accuracy(cur, plan_id: int | None) -> float | None:
        """The plan's predicted tentative accuracy (None: no plan, or not estimated)."""
        if plan_id is None:
            return None
        cur.execute("SELECT predicted_accuracy FROM ftops_plan WHERE plan_id = %s", (plan_id,))
        row = cur.fetchone()
        return row[0] if row else None

    @staticmethod
    def _drill_of_run(cur, job_id: int, dag_run_id: str | None) -> tuple[int, str] | None:
        if dag_run_id is None:
            return None
        cur.execute("SELECT drill_id, status FROM ftops_drill WHERE job_id = %s AND dag_run_id = %s", (job_id, dag_run_id))
        return cur.fetchone()

    @staticmethod
    def _reopen_drill(cur, drill_id: int, plan_id: int | None, params: dict[str, Any], predicted: float | None,
                      accuracy: float | None) -> None:
        cur.execute(
            """UPDATE ftops_drill SET status = 'running', plan_id = %s, params = %s, predicted_output_fidelity = %s,
                   predicted_accuracy = %s, tentative_accuracy = NULL, time_to_first_tentative_s = NULL, time_to_caught_up_s = NULL,
                   lost_windows = NULL, duplicated_windows = NULL, output_equals_reference = NULL, report = NULL,
                   started_at = now(), finished_at = NULL
               WHERE drill_id = %s""",
            (plan_id, jsonb(params), predicted, accuracy, drill_id),
        )
        cur.execute("DELETE FROM ftops_drill_window WHERE drill_id = %s", (drill_id,))

    def _lock_drill(self, cur, drill_id: int) -> int:
        """The drill's job id, with the job locked (InputError when there is no such drill)."""
        cur.execute("SELECT job_id FROM ftops_drill WHERE drill_id = %s", (drill_id,))
        row = cur.fetchone()
        if row is None:
            raise InputError(f"drill {drill_id} does not exist")
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (JOB_LOCK_BASE + row[0],))
        return row[0]

    @staticmethod
    def _drill_windows(cur, drill_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
        cur.execute("SELECT drill_id, window_start, accuracy FROM ftops_drill_window WHERE drill_id = ANY(%s) "
                    "ORDER BY drill_id, window_start", (drill_ids,))
        out: dict[int, list[dict[str, Any]]] = {}
        for drill_id, start, accuracy in cur.fetchall():
            out.setdefault(drill_id, []).append({"window_start": start, "accuracy": accuracy})
        return out

