"""The failure domains a drill holds while it runs, so that two jobs sharing a failure domain are never drilled at
once, and the fleet runs at most ``ftops job fleet --max-drills`` drills at a time (issue 33, blast radius across
jobs). The drill engine calls :func:`hold_domains` in its ``begin`` (after the preflight, before the drill is
opened) and :func:`release_domains` in its ``finish``; the store's lock (:mod:`ft_core.store.domain_locks`) lives
as long as the drill's lease, so a drill that dies gives its domains back when its lease expires.

What a drill holds: the domain it fails and every domain where its job's executors run now (the primary's, and
the replica's on the standby pool), each named with the master of its pool (``spark://10.0.0.2:7077#rack-a``): two
clusters' ``rack-a`` are different racks. For a job whose applications ftops does not name (an attached job), every
failure domain of its cluster: its executors may be on any of them.

    >>> domain_key("spark://10.0.0.2:7077", "rack-a")
    'spark://10.0.0.2:7077#rack-a'
"""

from __future__ import annotations


def domain_key(master: str | None, domain: str) -> str:
    """A failure domain named with its cluster (the master of the pool it belongs to)."""
    return f"{master or 'default master'}#{domain}"


def drill_domains(dep, job: str, ctx, capacity: dict[str, int]) -> list[str]:
    """The failure domains the drill of ``job`` touches: the one it fails (``ctx.domain``) and those where the job's
    executors run (``capacity``: the cluster's live domains, the fallback for jobs whose applications are not
    ftops's to name)."""
    from spark_jobs.cluster.seam import cluster_of
    from spark_jobs.runtime.job_streams import JobDeployment, primary_app_name

    primary_master = getattr(dep, "primary_master", None) or getattr(dep, "master", None)
    keys = {domain_key(primary_master, ctx.domain)}
    cluster = cluster_of(dep)
    if isinstance(dep, JobDeployment):
        keys |= {domain_key(primary_master, d) for d in cluster.executor_domains(primary_app_name(job))}
        if ctx.replica_stream:
            keys |= {domain_key(dep.standby_master, d) for d in cluster.executor_domains(ctx.replica_stream, "standby")}
    else:
        keys |= {domain_key(primary_master, d) for d in capacity}
    return sorted(keys)


def hold_domains(store, job: str, holder: str, dep, ctx, capacity: dict[str, int]) -> list[str]:
    """Take the drill's failure domains for ``holder`` (who holds the job's lease); DomainsBusyError (a BusyError)
    when another job's drill holds one of them or the fleet's limit on drills at once is reached."""
    return store.lock_domains(job, holder, drill_domains(dep, job, ctx, capacity))


def release_domains(store, job: str, holder: str) -> int:
    """Give the drill's failure domains back (a no-op when it holds none)."""
    return store.unlock_domains(job, holder)
