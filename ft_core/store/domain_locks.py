"""The fleet's failure-domain lock: two drills whose jobs share a failure domain never run at once (issue 33).

Problem: a job's lease (:mod:`ft_core.store.leases`) keeps two experiments off one job, but jobs share clusters.
Drilling ``alerts`` by failing ``rack-a`` while ``gauges``, whose executors also run on ``rack-a``, is being drilled
corrupts both measurements (each sees the other's failure) and doubles the blast radius on the jobs' users. And a
fleet where every due job is drilled at once takes too much capacity away at once.

Model: a drill holds, for its lease's lifetime, every failure domain it touches: the one it fails and those where
its job's executors run or may land while it runs (its cluster's), named with their cluster (``<master>#<domain>``,
:mod:`spark_jobs.drills.fleet_lock` computes them). Taking them is one transaction under a fleet-wide advisory lock that refuses
(:class:`DomainsBusyError`, a :class:`~ft_core.store.leases.BusyError`: the DAG skips the job, the command exits 3,
the job stays due) when another job's live drill holds one of them, or when ``ftops_fleet.max_drills`` other drills
hold domains already. A row is live only while its holder holds a live lease on its job, so a holder that dies
leaves rows that expire with its lease (the same crash safety, nothing more to renew), and rows of dead holders are
cleared by the next taker. :meth:`DomainLockRecords.unlock_domains` at the drill's finish gives them back.

    # store.lock_domains("alerts", holder, ["spark://10.0.0.2:7077#rack-a", "spark://10.0.0.2:7077#rack-b"])
"""

from __future__ import annotations

from typing import Any

from ft_core.errors import FtopsError, InputError
from ft_core.store.base import StoreBase
from ft_core.store.leases import BusyError
from ft_core.store.records import rows

# pg_advisory_xact_lock key serializing every change of the domain locks (any fixed 64-bit number unique to ftops)
FLEET_LOCK = 0x6674_6F70_7300_0002
_LIVE = """EXISTS (SELECT 1 FROM ftops_lease l WHERE l.job_id = d.job_id AND l.holder = d.holder AND l.expires_at >= now())"""
LOCK_KEYS = ("domain", "job", "holder", "acquired_at")


class DomainsBusyError(BusyError):
    """Another job's drill holds a failure domain this drill would touch, or the fleet's limit on drills at once is
    reached; the message names who holds what and since when."""

    def __init__(self, message: str, holders: list[dict[str, Any]]):
        self.holders = holders
        self.lease = holders[0] if holders else {}
        FtopsError.__init__(self, message)


class DomainLockRecords(StoreBase):
    """Take, give back and list the failure domains live drills hold."""

    def lock_domains(self, job: str, holder: str, domains: list[str]) -> list[str]:
        """Hold ``domains`` for the drill of ``job`` by ``holder`` (who must hold the job's live lease) until
        :meth:`unlock_domains` or its lease's expiry; returns them sorted. DomainsBusyError when another job's live
        drill holds one of them or the fleet's limit is reached. Taking them again (a retried step) replaces the
        drill's own rows."""
        wanted = sorted(set(domains))
        if not wanted or any(not isinstance(d, str) or not d.strip() for d in wanted):
            raise InputError(f"domains: a drill holds at least one named failure domain, got {domains!r}")
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job)
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (FLEET_LOCK,))
            cur.execute("SELECT 1 FROM ftops_lease WHERE job_id = %s AND holder = %s AND expires_at >= now()",
                        (job_id, holder))
            if cur.fetchone() is None:
                raise InputError(f"failure domains of {job!r}: {holder} does not hold the job's lease (it expired or "
                                 "was taken over); nothing was locked")
            cur.execute(f"DELETE FROM ftops_domain_lock d WHERE NOT {_LIVE}")  # holders that died
            cur.execute("""SELECT d.domain, j.name, d.holder, d.acquired_at FROM ftops_domain_lock d JOIN ftops_job j USING (job_id)
                           WHERE d.domain = ANY(%s) AND d.job_id <> %s ORDER BY d.acquired_at, j.name, d.domain""",
                        (wanted, job_id))
            held = rows(cur, LOCK_KEYS)
            if held:
                raise DomainsBusyError(_overlap(job, held), held)
            cur.execute("""SELECT DISTINCT ON (j.name) d.domain, j.name, d.holder, d.acquired_at
                           FROM ftops_domain_lock d JOIN ftops_job j USING (job_id) WHERE d.job_id <> %s
                           ORDER BY j.name, d.acquired_at""", (job_id,))
            others = rows(cur, LOCK_KEYS)
            cur.execute("SELECT max_drills FROM ftops_fleet")
            limit = cur.fetchone()[0]
            if len(others) >= limit:
                raise DomainsBusyError(f"job {job!r} is not drilled now: {len(others)} drill(s) run already, the "
                                       f"fleet's limit ({', '.join(o['job'] for o in others)}; `ftops job fleet "
                                       "--max-drills N` changes it); try again when one has finished", others)
            cur.execute("DELETE FROM ftops_domain_lock WHERE job_id = %s", (job_id,))
            cur.executemany("INSERT INTO ftops_domain_lock (domain, job_id, holder) VALUES (%s, %s, %s)",
                            [(d, job_id, holder) for d in wanted])
            self._event(cur, job_id, "domains_locked", {"holder": holder, "domains": wanted})
            return wanted

    def unlock_domains(self, job: str, holder: str) -> int:
        """Give back the domains ``holder`` holds for ``job`` (a no-op when it holds none); how many it held."""
        with self.conn, self.conn.cursor() as cur:
            job_id = self._job_id(cur, job)
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (FLEET_LOCK,))
            cur.execute("DELETE FROM ftops_domain_lock WHERE job_id = %s AND holder = %s RETURNING domain", (job_id, holder))
            released = sorted(r[0] for r in cur.fetchall())
            if released:
                self._event(cur, job_id, "domains_released", {"holder": holder, "domains": released})
            return len(released)

    def domain_locks(self) -> list[dict[str, Any]]:
        """The failure domains live drills hold now (domain, job, holder, since), oldest first."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"""SELECT d.domain, j.name, d.holder, d.acquired_at FROM ftops_domain_lock d JOIN ftops_job j USING (job_id)
                            WHERE {_LIVE} ORDER BY d.acquired_at, j.name, d.domain""")
            return rows(cur, LOCK_KEYS)


def _overlap(job: str, held: list[dict[str, Any]]) -> str:
    by_job: dict[str, list[str]] = {}
    for h in held:
        by_job.setdefault(h["job"], []).append(h["domain"])
    first = held[0]
    since = first["acquired_at"].strftime("%Y-%m-%d %H:%M:%S %Z")
    who = "; ".join(f"{j} holds {', '.join(sorted(ds))}" for j, ds in sorted(by_job.items()))
    return (f"job {job!r} is busy: its failure domains are held by another drill ({who}; {first['holder']} since "
            f"{since}); two jobs sharing a failure domain are never drilled at once; try again when it has finished")
