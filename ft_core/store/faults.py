"""The fault journal and the fleet-wide halt: no fault ftops injects outlives the process that injected it.

Problem (issue 35): an experiment that dies after it injected a fault (a drill SIGKILLed after it failed a
domain, an Airflow worker lost mid-task) leaves the fault in place: the job stays down until a person acts.
Chaos Mesh's answer is to record every injected fault with how to restore it and to reconcile from those
records; AWS FIS and Gremlin add stop conditions and a halt-all button.

Model: a *fault* is a row of ``ftops_fault`` written **before** the fault is applied, by the holder of the
job's lease (:mod:`ft_core.store.leases`), with an ``undo`` document (what the cluster seam needs to give the
capacity back, heal the link, resubmit the driver: ``spark_jobs.cluster.seam``) and ``undo_by`` (when it must
be undone at the latest). Undoing it closes it. A fault still open whose holder no longer holds a live lease
on its job is *orphaned*: its holder died. Whoever finds an orphaned fault undoes it before doing anything
else (``spark_jobs.drills.reconcile``).

The halt is one row of ``ftops_halt``: while it is there :meth:`FaultRecords.open_fault` refuses every new
fault (:class:`HaltedError`), so an experiment racing a halt cannot inject after it; experiments check it at
every poll and abort (their finish undoes their faults), and ``ftops halt`` undoes what is still open.

    # fault = store.open_fault("alerts", "drill", 7, holder, "domain_down", "rack-a", undo, undo_within_s=600)
    # ... apply it ...; store.fault_applied(fault)
    # ... later: give the capacity back ...; store.close_fault(fault, holder, "capacity given back")
"""

from __future__ import annotations

from typing import Any, Literal

from ft_core.errors import FtopsError, InputError
from ft_core.store.base import StoreBase
from ft_core.store.records import jsonb, rows

FaultKind = Literal["domain_down", "partition", "driver_killed", "executors_paused"]
FAULT_KINDS = ("domain_down", "partition", "driver_killed", "executors_paused")
EXPERIMENT_KINDS = ("drill", "recovery", "fault_profile", "fleet_recovery")
FAULT_KEYS = ("fault_id", "job", "experiment_kind", "experiment_id", "holder", "kind", "target", "undo", "undo_by",
              "opened_at", "applied_at", "closed_at", "closed_by", "outcome")
_SELECT = f"""SELECT f.fault_id, j.name, f.experiment_kind, f.experiment_id, f.holder, f.kind, f.target, f.undo, f.undo_by,
                     f.opened_at, f.applied_at, f.closed_at, f.closed_by, f.outcome
              FROM ftops_fault f JOIN ftops_job j USING (job_id)"""
# An open fault whose holder no longer holds a live lease on its job: the holder died (or gave the lease up
# without closing it, a bug that the same repair covers).
_ORPHANED = """f.closed_at IS NULL AND NOT EXISTS (
                   SELECT 1 FROM ftops_lease l WHERE l.job_id = f.job_id AND l.holder = f.holder AND l.expires_at >= now())"""


class HaltedError(FtopsError):
    """Experiments are halted fleet-wide (``ftops halt``); nothing new is injected until ``ftops resume``."""

    exit_code = 3
    label = "halted"
    kind = "halted"

    def __init__(self, halt: dict[str, Any]):
        self.halt = halt
        super().__init__(f"experiments are halted since {halt['halted_at']:%Y-%m-%d %H:%M:%S %Z} by {halt['halted_by']} "
                         f"({halt['reason']}); `ftops resume` ends the halt")


class FaultRecords(StoreBase):
    """Journal faults before they are applied, close them when undone, find the orphaned ones; halt and resume."""

    def open_fault(self, job: str, experiment_kind: str, experiment_id: int | None, holder: str, kind: FaultKind,
                   target: str, undo: dict[str, Any], undo_within_s: float) -> int:
        """Journal a fault about to be applied; returns its id. Refused (HaltedError) while halted, and
        (InputError) unless ``holder`` holds a live lease on the job: only the experiment that owns the job
        may break it, and a holder whose lease lapsed must stop, not inject."""
        if kind not in FAULT_KINDS:
            raise InputError(f"fault kind {kind!r}: expected one of {', '.join(FAULT_KINDS)}")
        if experiment_kind not in EXPERIMENT_KINDS:
            raise InputError(f"experiment kind {experiment_kind!r}: expected one of {', '.join(EXPERIMENT_KINDS)}")
        if not (undo_within_s > 0):
            raise InputError(f"undo_within_s: must be positive, got {undo_within_s!r}")
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            halt = self._halt(cur)
            if halt is not None:
                raise HaltedError(halt)
            cur.execute("SELECT 1 FROM ftops_lease WHERE job_id = %s AND holder = %s AND expires_at >= now()",
                        (job_id, holder))
            if cur.fetchone() is None:
                raise InputError(f"fault on {job!r}: {holder} does not hold the job's lease (it expired or was taken "
                                 "over); nothing was injected")
            cur.execute(
                """INSERT INTO ftops_fault (job_id, experiment_kind, experiment_id, holder, kind, target, undo, undo_by)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, now() + %s * interval '1 second') RETURNING fault_id""",
                (job_id, experiment_kind, experiment_id, holder, kind, target, jsonb(undo), undo_within_s))
            fault_id = cur.fetchone()[0]
            self._event(cur, job_id, "fault_opened", {"fault_id": fault_id, "kind": kind, "target": target,
                                                      "holder": holder, "experiment": [experiment_kind, experiment_id]})
            return fault_id

    def fault_applied(self, fault_id: int, undo: dict[str, Any] | None = None) -> None:
        """Mark a journaled fault applied; ``undo`` replaces its undo document when applying it taught more
        (the pids actually paused, the workers actually killed)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("UPDATE ftops_fault SET applied_at = coalesce(applied_at, now()), undo = coalesce(%s::jsonb, undo) "
                        "WHERE fault_id = %s RETURNING fault_id", (None if undo is None else jsonb(undo), fault_id))
            if cur.fetchone() is None:
                raise InputError(f"fault {fault_id} does not exist")

    def close_fault(self, fault_id: int, closed_by: str, outcome: str) -> bool:
        """Close a fault as undone (``outcome`` says how); False when it was closed already (undo is idempotent,
        two parties may race to close one fault: the first one's outcome stays)."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("""UPDATE ftops_fault SET closed_at = now(), closed_by = %s, outcome = %s
                           WHERE fault_id = %s AND closed_at IS NULL RETURNING job_id, kind, target""",
                        (closed_by, outcome, fault_id))
            row = cur.fetchone()
            if row is not None:
                self._event(cur, row[0], "fault_closed", {"fault_id": fault_id, "kind": row[1], "target": row[2],
                                                          "closed_by": closed_by, "outcome": outcome})
            return row is not None

    def open_faults(self, job: str | None = None) -> list[dict[str, Any]]:
        """Faults not undone yet (of ``job``, or of every job), oldest first."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"{_SELECT} WHERE f.closed_at IS NULL AND (%s::text IS NULL OR j.name = %s) "
                        "ORDER BY f.opened_at, f.fault_id", (job, job))
            return rows(cur, FAULT_KEYS)

    def orphaned_faults(self, job: str | None = None) -> list[dict[str, Any]]:
        """Open faults whose holder no longer holds a live lease on their job, oldest first: to be undone."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"{_SELECT} WHERE {_ORPHANED} AND (%s::text IS NULL OR j.name = %s) "
                        "ORDER BY f.opened_at, f.fault_id", (job, job))
            return rows(cur, FAULT_KEYS)

    def faults(self, job: str, limit: int = 100) -> list[dict[str, Any]]:
        """The job's newest ``limit`` faults, newest first (open and closed): the journal a page shows."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"{_SELECT} WHERE j.name = %s ORDER BY f.opened_at DESC, f.fault_id DESC LIMIT %s", (job, limit))
            return rows(cur, FAULT_KEYS)

    def halt(self, reason: str, halted_by: str) -> dict[str, Any]:
        """Halt every experiment in the fleet (already halted: the standing halt is kept and returned)."""
        if not reason.strip():
            raise InputError("--reason: say why experiments are halted")
        with self.conn, self.conn.cursor() as cur:
            cur.execute("INSERT INTO ftops_halt (reason, halted_by) VALUES (%s, %s) ON CONFLICT (only_row) DO NOTHING "
                        "RETURNING halted_at", (reason, halted_by))
            if cur.fetchone() is not None:
                self._event(cur, None, "halted", {"reason": reason, "halted_by": halted_by})
            return self._halt(cur)

    def resume(self, resumed_by: str) -> dict[str, Any] | None:
        """End the halt; returns the halt that ended (None: none was in force)."""
        with self.conn, self.conn.cursor() as cur:
            halt = self._halt(cur)
            cur.execute("DELETE FROM ftops_halt")
            if halt is not None:
                self._event(cur, None, "resumed", {"resumed_by": resumed_by, "halted_by": halt["halted_by"],
                                                   "reason": halt["reason"]})
            return halt

    def halted(self) -> dict[str, Any] | None:
        """The halt in force (``reason``, ``halted_by``, ``halted_at``), or None."""
        with self.conn, self.conn.cursor() as cur:
            return self._halt(cur)

    def require_not_halted(self) -> None:
        """HaltedError while experiments are halted."""
        halt = self.halted()
        if halt is not None:
            raise HaltedError(halt)

    @staticmethod
    def _halt(cur) -> dict[str, Any] | None:
        cur.execute("SELECT reason, halted_by, halted_at FROM ftops_halt")
        row = cur.fetchone()
        return None if row is None else dict(zip(("reason", "halted_by", "halted_at"), row))
