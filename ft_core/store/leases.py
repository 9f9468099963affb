"""Leases: one experiment per job at a time (a drill, a staged recovery, checkpoint profiling, a replica change).

Problem: ftops injects real faults and resubmits real jobs, from DAG runs and from the command line; two
of them on one job at once corrupt each other's measurements or worse (a drill killing the rack a
recovery is restarting on). A lease is a row per job naming its holder (``dag run <dag>/<run id>`` or
``command <argv> (pid N on host)``), its kind and when it expires. Taking it is one atomic upsert that
succeeds only when the job has no lease, its lease expired (the holder died without releasing it:
holders renew it while they work, see :class:`~ft_core.store.leases.LeaseKeeper`), or the holder
already has it (a retried task); otherwise :class:`BusyError` names the holder and since when. Every
exit path releases it; the event log records takes, releases and expired leases taken over.

    # store.acquire_lease("alerts", "drill", "command ftops drill run (pid 4242 on vm)", ttl_s=60)
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any, Literal

from ft_core.errors import FtopsError, InputError
from ft_core.store.base import StoreBase
from ft_core.store.faults import FaultRecords, HaltedError

LeaseKind = Literal["drill", "recovery", "checkpoint_change", "replica_change"]
KINDS = ("drill", "recovery", "checkpoint_change", "replica_change")
_KEYS = ("job", "kind", "holder", "acquired_at", "expires_at")


class BusyError(FtopsError):
    """Another experiment holds the job's lease; the message names it and since when."""

    exit_code = 3
    label = "busy"
    kind = "busy"

    def __init__(self, job: str, lease: dict[str, Any]):
        self.lease = lease
        since = lease["acquired_at"].strftime("%Y-%m-%d %H:%M:%S %Z") if isinstance(lease["acquired_at"], datetime) \
            else lease["acquired_at"]
        super().__init__(f"job {job!r} is busy: a {lease['kind'].replace('_', ' ')} by {lease['holder']} holds it "
                         f"since {since}; try again when it has finished")


class LeaseRecords(StoreBase):
    """Acquire, renew, release and read jobs' leases (each call is one transaction)."""

    def acquire_lease(self, job: str, kind: LeaseKind, holder: str, ttl_s: float) -> dict[str, Any]:
        """Take the job's lease for ``ttl_s`` seconds; BusyError when someone else holds it."""
        if kind not in KINDS:
            raise InputError(f"lease kind {kind!r}: expected one of {', '.join(KINDS)}")
        if not (ttl_s > 0):
            raise InputError(f"lease ttl_s: must be positive, got {ttl_s!r}")
        with self.conn, self.conn.cursor() as cur:
            job_id = self._locked_job(cur, job)
            cur.execute("SELECT holder, kind, expires_at < now() FROM ftops_lease WHERE job_id = %s", (job_id,))
            before = cur.fetchone()
            halt = FaultRecords._halt(cur) if kind == "drill" else None
            if halt is not None and not (before is not None and before[0] == holder and not before[2]):
                raise HaltedError(halt)  # a halt refuses new drills; one under way is stopped by its waits, and
                # the journal refuses its faults (ft_core.store.faults)
            cur.execute(
                """INSERT INTO ftops_lease (job_id, kind, holder, expires_at)
                   VALUES (%s, %s, %s, now() + %s * interval '1 second')
                   ON CONFLICT (job_id) DO UPDATE SET kind = EXCLUDED.kind, holder = EXCLUDED.holder,
                       acquired_at = CASE WHEN ftops_lease.holder = EXCLUDED.holder THEN ftops_lease.acquired_at
                                          ELSE now() END,
                       expires_at = EXCLUDED.expires_at
                   WHERE ftops_lease.expires_at < now() OR ftops_lease.holder = EXCLUDED.holder
                   RETURNING acquired_at, expires_at""",
                (job_id, kind, holder, ttl_s),
            )
            row = cur.fetchone()
            if row is None:
                raise BusyError(job, self._lease(cur, job_id, job))
            if before is not None and before[0] != holder:  # an expired lease taken over: its holder died
                self._event(cur, job_id, "lease_expired", {"holder": before[0], "kind": before[1], "taken_by": holder})
            if before is None or before[0] != holder:
                self._event(cur, job_id, "lease_acquired", {"kind": kind, "holder": holder})
            return {"job": job, "kind": kind, "holder": holder, "acquired_at": row[0], "expires_at": row[1]}

    def renew_lease(self, job: str, holder: str, ttl_s: float) -> bool:
        """Push the lease's expiry ``ttl_s`` seconds ahead; False when ``holder`` no longer holds it."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job)
            cur.execute("UPDATE ftops_lease SET expires_at = now() + %s * interval '1 second' "
                        "WHERE job_id = %s AND holder = %s RETURNING job_id", (ttl_s, job_id, holder))
            return cur.fetchone() is not None

    def release_lease(self, job: str, holder: str) -> bool:
        """Give the lease back (a no-op when ``holder`` does not hold it); True when it was held."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job)
            cur.execute("DELETE FROM ftops_lease WHERE job_id = %s AND holder = %s RETURNING kind", (job_id, holder))
            row = cur.fetchone()
            if row is not None:
                self._event(cur, job_id, "lease_released", {"kind": row[0], "holder": holder})
            return row is not None

    def lease(self, job: str) -> dict[str, Any] | None:
        """The job's lease while it has not expired (None: the job is free)."""
        with self.conn, self.conn.cursor() as cur:
            return self._lease(cur, self._job_id(cur, job), job, live_only=True)

    @staticmethod
    def _lease(cur, job_id: int, job: str, live_only: bool = False) -> dict[str, Any] | None:
        cur.execute("SELECT kind, holder, acquired_at, expires_at FROM ftops_lease WHERE job_id = %s"
                    + (" AND expires_at >= now()" if live_only else ""), (job_id,))
        row = cur.fetchone()
        return None if row is None else dict(zip(_KEYS, (job, *row)))


class LeaseRenewal:
    """Renew a lease someone already holds from a daemon thread every ``ttl_s / 3`` while a block works (a long
    step of an experiment), without taking or releasing it. ``store_factory`` opens a fresh store connection for
    the thread (connections are not shared across threads)."""

    def __init__(self, store_factory, job: str, holder: str, ttl_s: float):
        self.store_factory, self.job, self.holder, self.ttl_s = store_factory, job, holder, ttl_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LeaseRenewal:
        self._thread = threading.Thread(target=self._renew, name="ftops-lease", daemon=True)
        self._thread.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            try:
                store = self.store_factory()
            except FtopsError:
                continue  # the database is away for a moment: the next renewal tries again, the ttl covers it
            try:
                store.renew_lease(self.job, self.holder, self.ttl_s)
            except FtopsError:
                continue
            finally:
                store.conn.close()

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


class LeaseKeeper:
    """Hold a lease while a command works: take it, renew it (:class:`LeaseRenewal`), release it on every exit
    path (a SIGKILL stops the renewals, so the lease expires after ``ttl_s``)."""

    def __init__(self, store_factory, job: str, kind: LeaseKind, holder: str, ttl_s: float = 60.0):
        self.store_factory, self.job, self.kind, self.holder, self.ttl_s = store_factory, job, kind, holder, ttl_s
        self._renewal = LeaseRenewal(store_factory, job, holder, ttl_s)

    def __enter__(self) -> LeaseKeeper:
        store = self.store_factory()
        try:
            store.acquire_lease(self.job, self.kind, self.holder, self.ttl_s)
        finally:
            store.conn.close()
        self._renewal.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._renewal.__exit__(exc_type, exc, tb)
        store = self.store_factory()
        try:
            store.release_lease(self.job, self.holder)
        finally:
            store.conn.close()
