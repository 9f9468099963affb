"""Who holds a fleet recovery, and the end of one whose holder is gone (issue 33, item 3; issue 35, item 2).

Problem: a fleet recovery is held by its DAG run (every job's lease, renewed by each step and by the triggerer while
it waits). A run that dies (its worker killed, its DAG run marked failed) leaves its leases to lapse within
:data:`LEASE_TTL_S`; the safety net then undoes what it held down (:mod:`spark_jobs.drills.reconcile`), but its record
would stay ``running`` forever, in the console and on the DAG run's tab.

Algorithm: a running fleet recovery none of whose jobs is leased by its holder any more is dead; once none of its
faults is open (the reconciler undoes them first; one it could not undo keeps the run listed) it is recorded as
failed, naming why. A run that is alive holds every job's lease from before it is recorded (:func:`steps.open_run`)
until it has recorded its own end. One whose leases merely lapsed (its triggerer down for longer than the TTL) but that goes on takes them
again at its next step and records its own end over this one. O(runs x jobs) lease reads.

    # abandon_dead_runs(store)  -> [{"run_id": 7, "dag_run_id": "manual__...", "jobs": ["clicks"]}]
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ft_core.input.quantities import PositiveSeconds

LEASE_TTL_S = 300.0  # a dead run's jobs are resubmitted by the safety net this long after its last renewal
# Every step renews the leases, each wait every third of the TTL (a stage's wait for executors too); a minute leaves
# room for the scheduler's gap between two tasks and a slow store answer. An hour at most: a dead run's jobs never
# stay down longer than that for want of a renewal.
MIN_LEASE_TTL_S, MAX_LEASE_TTL_S = 60.0, 3600.0
LeaseSeconds = Annotated[PositiveSeconds, Field(ge=MIN_LEASE_TTL_S, le=MAX_LEASE_TTL_S)]  # the DAG's lease_ttl_s
STALE_RUN = "its holder stopped without finishing it (its leases expired); what it held down was given back"


def holder_of(dag_run_id: str) -> str:
    """The lease holder of the fleet recovery of DAG run ``dag_run_id``."""
    return f"dag run ftops_fleet_recovery/{dag_run_id}"


def dead_runs(store, job: str | None = None) -> list[dict]:
    """The running fleet recoveries (of ``job``, or of any job) whose holder holds none of their jobs' leases
    (``run_id``, ``dag_run_id``, ``jobs``); read only."""
    def dead(run: dict) -> bool:
        holder = holder_of(run["dag_run_id"])
        return not any((lease := store.lease(name)) is not None and lease["holder"] == holder for name in run["jobs"])

    return [run for run in store.running_fleet_recoveries(job) if dead(run)]


def abandon_dead_runs(store, job: str | None = None) -> list[dict]:
    """Record as failed each of :func:`dead_runs` whose faults are all closed (only while it is still recorded
    running: a run that recorded its own end meanwhile keeps it); the runs closed."""
    closed = []
    for run in dead_runs(store, job):
        holder = holder_of(run["dag_run_id"])
        if any(f["holder"] == holder for name in run["jobs"] for f in store.open_faults(name)):
            continue  # what it held down is not given back yet: the next reconciliation looks again
        if store.abandon_fleet_recovery(run["run_id"], STALE_RUN):
            closed.append(run)
    return closed
