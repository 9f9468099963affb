"""Per-job policy and the fleet's policy in the history store (issue 33): what the scheduled runs do to each job.

A job's policy is its drill schedule, its checkpoint-tuning schedule (``ft_core.fleet.schedules``: cron or preset,
NULL for none), its priority (the weight fleet-wide staged recovery gives it) and its apply mode (``auto``,
``approve``, ``recommend``: version 4). Defaults: no schedule (a drill injects real faults, so nothing is drilled or
tuned on a schedule until someone asks for it, test jobs included), priority 1, apply ``approve`` (``auto`` for a
test job). Every change is one row of ``ftops_policy_change`` with who made it and each field's old and new value;
the fleet's policy (``ftops_fleet``: how many drills may hold failure domains at once) is changed the same way,
with no job.

What a kind of job accepts: a plan-only job (no deployment) has nothing to drill, tune or apply (``recommend``, no
schedules); a drill schedule needs a job ftops may act on (not ``recommend``); a tuning schedule needs a job whose
pipeline ftops can copy (a runnable job, not an attached one).

    # store.set_policy("alerts", {"drill_schedule": "@weekly", "priority": 3}, changed_by="ops via ftops job set")
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ft_core.errors import InputError
from ft_core.fleet.job_state import STALE_AFTER_S
from ft_core.store.base import StoreBase
from ft_core.store.records import jsonb, rows

POLICY_FIELDS = ("drill_schedule", "tuning_schedule", "priority", "apply_mode")
FLAGS = {"drill_schedule": "--drill-schedule", "tuning_schedule": "--tuning-schedule", "priority": "--priority",
         "apply_mode": "--apply"}
APPLY_MODES = ("auto", "approve", "recommend")
OPERATIONS = ("drill", "tuning")
_SINCE = {  # the last start of the operation, else when its schedule was set
    "drill": "coalesce((SELECT max(d.started_at) FROM ftops_drill d WHERE d.job_id = j.job_id), j.drill_schedule_at)",
    "tuning": "coalesce(t.started_at, j.tuning_schedule_at)",
}


def checked_policy(changes: dict[str, Any]) -> dict[str, Any]:
    """``changes`` validated field by field (InputError naming the command's flag)."""
    from ft_core.fleet.schedules import check_schedule
    from ft_core.input.quantities import Priority, check

    unknown = set(changes) - set(POLICY_FIELDS)
    if unknown:
        raise InputError(f"policy: unknown field(s) {', '.join(sorted(unknown))}; expected {', '.join(POLICY_FIELDS)}")
    out = {}
    for field, value in changes.items():
        flag = FLAGS[field]
        if field.endswith("_schedule"):
            out[field] = check_schedule(value, flag)
        elif field == "priority":
            out[field] = check(Priority, value, flag)
        elif value not in APPLY_MODES:
            raise InputError(f"{flag}: expected one of {', '.join(APPLY_MODES)}, got {value!r}", field=flag)
        else:
            out[field] = value
    return out


def policy_problem(job: str, policy: dict[str, Any], changed: set[str], kind: str) -> InputError | None:
    """Why a job of ``kind`` (``plan-only``, ``attached``, ``runnable``) cannot have ``policy``; the message names
    the flag that was changed (None: it can).

    >>> policy_problem("x", {"drill_schedule": "@weekly", "tuning_schedule": None, "apply_mode": "recommend"},
    ...                {"drill_schedule"}, "runnable").args[0]
    "--drill-schedule: job 'x' is in recommend mode, and ftops does not drill it: give it --apply auto or approve first"
    """
    def problem(fields: tuple[str, ...], reason: str) -> InputError:
        flag = FLAGS[next((f for f in fields if f in changed), fields[0])]
        return InputError(f"{flag}: job {job!r} {reason}", field=flag)

    if kind == "plan-only":
        for field in ("drill_schedule", "tuning_schedule"):
            if policy[field] is not None:
                return problem((field,), "is plan-only (no streams of its own that ftops runs): nothing to "
                                         f"{'drill' if field == 'drill_schedule' else 'tune'} on a schedule")
        if policy["apply_mode"] != "recommend":
            return problem(("apply_mode",), "is plan-only: ftops only recommends for it (--apply recommend)")
    if policy["drill_schedule"] is not None and policy["apply_mode"] == "recommend":
        return problem(("drill_schedule", "apply_mode"), "is in recommend mode, and ftops does not drill it: give it "
                                                         "--apply auto or approve first")
    if policy["tuning_schedule"] is not None and kind == "attached":
        return problem(("tuning_schedule",), "is attached: its checkpoint interval is its own code's (tuning copies a "
                                             "pipeline written with ftops's API)")
    return None


def job_kind(workload: str, has_deployment: bool) -> str:
    """``plan-only``, ``attached`` or ``runnable``."""
    if not has_deployment or workload == "plan-only":
        return "plan-only"
    return "attached" if workload == "attached" else "runnable"


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    from ft_core.fleet.schedules import shown

    return {"drill_schedule": shown(row["drill_schedule"]), "tuning_schedule": shown(row["tuning_schedule"]),
            "priority": row["priority"], "apply": row["apply_mode"]}


# The jobs pages' joins, one text for both reads: the live lease holding a job (l), and its newest micro-batch (s:
# migration 014's ftops_stream, by its key and its job index). A job's streams are its primary's (ftops's own drivers)
# or, for a job attached to unchanged code, its queries'; s.batch_end is their newest batch's end, s.lag_ms (output
# behind input) the largest lag among those that ran in the last STALE_AFTER_S (a query renamed or reset leaves its
# stream behind, with its last lag), else the newest one's; a batch before its stream's first watermark (Spark reports
# the epoch until a window closes) has no lag.
_HELD = "LEFT JOIN ftops_lease l ON l.job_id = j.job_id AND l.expires_at > now()"
_NEWEST_BATCH = (
    "LEFT JOIN LATERAL (SELECT max(batch_end) AS batch_end, coalesce(max(input_watermark_ms - watermark_ms) "
    f"FILTER (WHERE batch_end > now() - interval '{STALE_AFTER_S:g} seconds' AND watermark_ms > 0), "
    "(array_agg(input_watermark_ms - watermark_ms ORDER BY batch_end DESC) FILTER (WHERE watermark_ms > 0))[1]) AS lag_ms "
    "FROM ftops_stream WHERE stream = 'ftops-' || j.name || '-primary' OR (job = j.name AND role = 'attached')) s ON true")


class PolicyRecords(StoreBase):
    """Read and change per-job policy and the fleet's policy; what the scheduled runs read (due jobs, turns)."""

    def set_policy(self, job: str, changes: dict[str, Any], changed_by: str) -> dict[str, Any]:
        """Change the job's policy (fields of :data:`POLICY_FIELDS`; a schedule ``"none"`` removes it) and record
        what changed, by whom; returns the policy as the commands show it. Nothing changed: nothing recorded."""
        new_values = checked_policy(changes)
        if not changed_by.strip():
            raise InputError("changed_by: say who changes the policy")
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            cur.execute(f"SELECT {', '.join(POLICY_FIELDS)}, workload, deployment IS NOT NULL FROM ftops_job "
                        "WHERE job_id = %s", (job_id,))
            *values, workload, has_deployment = cur.fetchone()
            old = dict(zip(POLICY_FIELDS, values))
            new = {**old, **new_values}
            diff = {f: {"from": old[f], "to": new[f]} for f in POLICY_FIELDS if new[f] != old[f]}
            error = policy_problem(job, new, set(diff) or set(new_values), job_kind(workload, has_deployment))
            if error is not None:
                raise error
            if diff:
                assignments = [f"{f} = %s" for f in diff] + [f"{f}_at = now()" for f in diff if f.endswith("_schedule")]
                cur.execute(f"UPDATE ftops_job SET {', '.join(assignments)}, updated_at = now() WHERE job_id = %s",
                            (*(new[f] for f in diff), job_id))
                self._record_change(cur, job_id, changed_by, diff)
            return {"job": job, **_shown(new)}

    @staticmethod
    def _record_change(cur, job_id: int | None, changed_by: str, diff: dict[str, Any], event: bool = True) -> None:
        """One ``ftops_policy_change`` row (and a ``policy_changed`` event, but for a registration's: registering is
        not an event of the log)."""
        cur.execute("INSERT INTO ftops_policy_change (job_id, changed_by, changes) VALUES (%s, %s, %s)",
                    (job_id, changed_by, jsonb(diff)))
        if event:
            StoreBase._event(cur, job_id, "policy_changed", {"changed_by": changed_by, "changes": diff})

    def policy(self, job: str) -> dict[str, Any]:
        """The job's policy as the commands show it, with when each operation last started."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                f"""SELECT {', '.join(POLICY_FIELDS)},
                           (SELECT max(d.started_at) FROM ftops_drill d WHERE d.job_id = j.job_id),
                           (SELECT t.started_at FROM ftops_fleet_turn t WHERE t.job_id = j.job_id AND t.operation = 'tuning')
                    FROM ftops_job j WHERE j.name = %s""", (job,))
            row = cur.fetchone()
        if row is None:
            raise InputError(f"job {job!r} is not registered")
        doc = _shown(dict(zip(POLICY_FIELDS, row)))
        return {**doc, "last_drill_started_at": _iso(row[4]), "last_tuning_started_at": _iso(row[5]),
                "refused": self.refusals(job).get(job, {})}

    def policies(self) -> dict[str, dict[str, Any]]:
        """Every job's policy by name (one query, for ``ftops job list``)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"SELECT name, {', '.join(POLICY_FIELDS)} FROM ftops_job ORDER BY name")
            return {r[0]: _shown(dict(zip(POLICY_FIELDS, r[1:]))) for r in cur.fetchall()}

    def policy_changes(self, job: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The newest policy changes of ``job`` (None: the fleet's own), newest first."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job) if job is not None else None
            cur.execute("""SELECT change_id, changed_by, changed_at, changes FROM ftops_policy_change
                           WHERE job_id IS NOT DISTINCT FROM %s ORDER BY changed_at DESC, change_id DESC LIMIT %s""",
                        (job_id, limit))
            return rows(cur, ("change_id", "changed_by", "changed_at", "changes"))

    def scheduled(self, operation: str) -> list[dict[str, Any]]:
        """The jobs with a schedule for ``operation`` (``drill``, ``tuning``): name, schedule, since (the last start,
        else when the schedule was set), picked_at (a scheduled run's last pick) and priority: the input of
        :func:`ft_core.fleet.schedules.due`."""
        if operation not in OPERATIONS:
            raise InputError(f"operation {operation!r}: expected drill or tuning")
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                f"""SELECT j.name, j.{operation}_schedule, {_SINCE[operation]}, t.picked_at, j.priority
                    FROM ftops_job j LEFT JOIN ftops_fleet_turn t ON t.job_id = j.job_id AND t.operation = %s
                    WHERE j.{operation}_schedule IS NOT NULL ORDER BY j.name""", (operation,))
            return rows(cur, ("job", "schedule", "since", "picked_at", "priority"))

    def pick(self, operation: str, jobs: list[str], picked_by: str) -> int:
        """Record that a scheduled run took ``jobs`` for ``operation`` now; returns how many."""
        if operation not in OPERATIONS:
            raise InputError(f"operation {operation!r}: expected drill or tuning")
        with self.conn, self.conn.cursor() as cur:
            cur.execute(
                """INSERT INTO ftops_fleet_turn (job_id, operation, picked_at, picked_by)
                   SELECT job_id, %s, now(), %s FROM ftops_job WHERE name = ANY(%s)
                   ON CONFLICT (job_id, operation) DO UPDATE SET picked_at = now(), picked_by = EXCLUDED.picked_by""",
                (operation, picked_by, list(jobs)))
            return cur.rowcount

    def refuse(self, operation: str, job: str, reason: str) -> None:
        """Record that a scheduled run could not operate the due ``job`` (``reason``, cut to 2,000 characters): shown
        by :meth:`policy` until the operation next starts."""
        if operation not in OPERATIONS:
            raise InputError(f"operation {operation!r}: expected drill or tuning")
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job)
            cur.execute("""INSERT INTO ftops_fleet_turn (job_id, operation, refused_at, refused_reason)
                           VALUES (%s, %s, now(), %s) ON CONFLICT (job_id, operation)
                           DO UPDATE SET refused_at = now(), refused_reason = EXCLUDED.refused_reason""",
                        (job_id, operation, reason[:2000]))

    def refusals(self, job: str | None = None) -> dict[str, dict[str, Any]]:
        """The standing refusals of every job (``job``: that one), ``{job: {operation: {at, reason}}}`` in one query:
        a scheduled run skipped the job since the operation last started (``ftops job fleet``, :meth:`policy`)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("""SELECT j.name, t.operation, t.refused_at, t.refused_reason FROM ftops_fleet_turn t
                            JOIN ftops_job j USING (job_id)
                            WHERE t.refused_at IS NOT NULL AND (%s::text IS NULL OR j.name = %s)
                              AND t.refused_at > coalesce(CASE t.operation
                                WHEN 'drill' THEN (SELECT max(d.started_at) FROM ftops_drill d WHERE d.job_id = j.job_id)
                                ELSE t.started_at END, '-infinity') ORDER BY j.name, t.operation""", (job, job))
            found: dict[str, dict[str, Any]] = {}
            for name, operation, at, reason in cur.fetchall():
                found.setdefault(name, {})[operation] = {"at": at.isoformat(), "reason": reason}
            return found

    def fleet_states(self) -> list[dict[str, Any]]:
        """One row per job, by name, with what the console's jobs page counts, filters and sorts every job by (one
        query, index-backed at 5,000 jobs: `ftops bench fleet`): its priority, the kind of the live lease on it (the
        experiment holding it), its newest drill's start, and its primary stream's newest micro-batch (an attached job: its
        queries') (end, and its output watermark's lag behind its input's). The page's own rows come from :meth:`fleet_overview`."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"""SELECT j.name, j.priority, l.kind,
                                  (SELECT max(started_at) FROM ftops_drill WHERE job_id = j.job_id),
                                  s.batch_end, s.lag_ms
                           FROM ftops_job j
                           {_HELD} {_NEWEST_BATCH}
                           ORDER BY j.name""")
            keys = ("job", "priority", "experiment", "last_drill_at", "last_batch_at", "lag_ms")
            return [dict(zip(keys, r)) for r in cur.fetchall()]

    def fleet_overview(self, jobs: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """One row per job (``jobs``: those only), by name, for the rows of the console's jobs page, in one query:
        :meth:`fleet_states`'s columns and its workload and replica budget, its drill schedule (and since when it
        counts), apply mode, the lease's holder, its newest drill's status and predicted and measured accuracy, why a
        scheduled drill skipped it since, and its current replication plan's OF, predicted accuracy and replicas."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"""SELECT j.name, j.workload, j.replication_budget, j.drill_schedule,
                                  coalesce(d.started_at, j.drill_schedule_at), j.priority,
                                  j.apply_mode, l.kind, l.holder, d.status, d.started_at, t.refused_reason, p.objective,
                                  s.batch_end, s.lag_ms, p.predicted_accuracy,
                                  jsonb_array_length(coalesce(p.payload->'tasks', '[]')), d.predicted_output_fidelity,
                                  d.predicted_accuracy, d.tentative_accuracy
                           FROM ftops_job j
                           {_HELD}
                           LEFT JOIN LATERAL (SELECT status, started_at, predicted_output_fidelity, predicted_accuracy,
                                                     tentative_accuracy FROM ftops_drill WHERE job_id = j.job_id
                                              ORDER BY started_at DESC, drill_id DESC LIMIT 1) d ON true
                           LEFT JOIN ftops_fleet_turn t ON t.job_id = j.job_id AND t.operation = 'drill'
                                AND t.refused_at > coalesce(d.started_at, '-infinity')
                           LEFT JOIN LATERAL (SELECT objective, predicted_accuracy, payload FROM ftops_plan WHERE job_id = j.job_id
                                              AND kind = 'replication' ORDER BY created_at DESC, plan_id DESC LIMIT 1) p
                                ON true
                           {_NEWEST_BATCH}
                           WHERE %s::text[] IS NULL OR j.name = ANY(%s::text[])
                           ORDER BY j.name""", (_names(jobs), _names(jobs)))
            keys = ("job", "workload", "replication_budget", "drill_schedule", "drill_since", "priority", "apply",
                    "experiment", "holder", "last_drill", "last_drill_at", "skipped", "plan_of", "last_batch_at", "lag_ms",
                    "plan_accuracy", "plan_replicas", "drill_predicted_of", "drill_predicted_accuracy", "drill_accuracy")
            return [dict(zip(keys, r)) for r in cur.fetchall()]

    def tuning_started(self, job: str) -> None:
        """Record that a checkpoint tuning of the job starts now (the next one is due from its schedule after it)."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job)
            cur.execute("""INSERT INTO ftops_fleet_turn (job_id, operation, started_at) VALUES (%s, 'tuning', now())
                           ON CONFLICT (job_id, operation) DO UPDATE SET started_at = now()""", (job_id,))

    def fleet_policy(self) -> dict[str, Any]:
        """The fleet's policy: ``max_drills``, the drills that may hold failure domains at once."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT max_drills FROM ftops_fleet")
            return {"max_drills": cur.fetchone()[0]}

    def set_fleet_policy(self, max_drills: int, changed_by: str) -> dict[str, Any]:
        """Change the fleet's limit on drills at once (recorded like a job's policy, with no job)."""
        if isinstance(max_drills, bool) or not isinstance(max_drills, int) or not 1 <= max_drills <= 1000:
            raise InputError(f"--max-drills: must be a whole number from 1 to 1000, got {max_drills!r}")
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SELECT max_drills FROM ftops_fleet FOR UPDATE")
            old = cur.fetchone()[0]
            if old != max_drills:
                cur.execute("UPDATE ftops_fleet SET max_drills = %s", (max_drills,))
                self._record_change(cur, None, changed_by, {"max_drills": {"from": old, "to": max_drills}})
            return {"max_drills": max_drills}


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _names(jobs: Sequence[str] | None) -> list[str] | None:
    if isinstance(jobs, str):
        raise TypeError("jobs: a list of job names, not one name")
    return None if jobs is None else list(jobs)
