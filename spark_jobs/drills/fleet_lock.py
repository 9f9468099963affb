"""The failure domains a drill holds while it runs, so that two jobs sharing a failure domain are never drilled at
once, and the fleet runs at most ``ftops job fleet --max-drills`` drills at a time (issue 33, blast radius across
jobs). The drill engine calls :func:`hold_domains` in its ``begin`` (after the preflight, before the drill is
opened) and :func:`release_domains` in its ``finish``; the store's lock (:mod:`ft_core.store.domain_locks`) lives
as long as the drill's lease, so a drill that dies gives its domains back when its lease expires.

What a drill holds: the domain it fails and every failure domain of its job's cluster (the primary's pool: its
executors run there now, and while the drill runs its replacement executors may land on any of them, where another
drill would kill them), and the domains where the replica's executors run on the standby pool; each named with the
master of its pool (``spark://10.0.0.2:7077#rack-a``): two clusters' ``rack-a`` are different racks. So drills of
jobs on one cluster run one after the other, and drills on different clusters side by side (up to the fleet's limit).

    >>> domain_key("spark://10.0.0.2:7077", "rack-a")
    'spark://10.0.0.2:7077#rack-a'
"""

from __future__ import annotations


def domain_key(master: str | None, domain: str) -> str:
    """A failure domain named with its cluster (the master of the pool it belongs to)."""
    return f"{master or 'default master'}#{domain}"


def drill_domains(dep, ctx, capacity: dict[str, int]) -> list[str]:
    """The failure domains a drill touches: the one it fails (``ctx.domain``), every domain of the
    primary's cluster (``capacity``: live workers, or executors, per domain, as the preflight found them) and where
    the replica (``ctx.replica_stream``) runs on the standby pool."""
    from spark_jobs.cluster.seam import cluster_of

    primary_master = getattr(dep, "primary_master", None) or getattr(dep, "master", None)
    keys = {domain_key(primary_master, d) for d in {ctx.domain, *capacity}}
    if ctx.replica_stream:
        standby = cluster_of(dep).executor_domains(ctx.replica_stream, "standby")
        keys |= {domain_key(getattr(dep, "standby_master", None), d) for d in standby}
    return sorted(keys)


def hold_domains(store, job: str, holder: str, dep, ctx, capacity: dict[str, int]) -> list[str]:
    """Take the drill's failure domains for ``holder`` (who holds the job's lease); DomainsBusyError (a BusyError)
    when another job's drill holds one of them or the fleet's limit on drills at once is reached."""
    return store.lock_domains(job, holder, drill_domains(dep, ctx, capacity))


def release_domains(store, job: str, holder: str) -> int:
    """Give the drill's failure domains back (a no-op when it holds none)."""
    return store.unlock_domains(job, holder)
