"""Who holds a fleet recovery, and the end of one whose holder is gone (issue 33, item 3; issue 35, item 2).

Problem: a fleet recovery is held by its DAG run (every job's lease, renewed by each step and by the triggerer while
it waits). A run that dies (its worker killed, its DAG run marked failed) leaves its leases to lapse within
:data:`LEASE_TTL_S`; the safety net then undoes what it held down (:mod:`spark_jobs.drills.reconcile`), but its record
would stay ``running`` forever, in the console and on the DAG run's tab.

Algorithm: a running fleet recovery none of whose jobs is leased by its holder any more is dead: it is recorded as
failed, naming why. A run that is alive holds every job's lease from before it is recorded (:func:`steps.open_run`) to
its finish. One whose leases merely lapsed (its triggerer down for longer than the TTL) but that goes on takes them
again at its next step and records its own end over this one. O(runs x jobs) lease reads.

    # abandon_dead_runs(store)  -> [{"run_id": 7, "dag_run_id": "manual__...", "jobs": ["clicks"]}]
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ft_core.input.quantities import PositiveSeconds

LEASE_TTL_S = 300.0  # a dead run's jobs are resubmitted by the safety net this long after its last renewal
MIN_LEASE_TTL_S = 30.0  # renewed every third of it: shorter would lapse on one slow store answer
LeaseSeconds = Annotated[PositiveSeconds, Field(ge=MIN_LEASE_TTL_S)]  # the DAG's lease_ttl_s
STALE_RUN = "its holder stopped without finishing it (its leases expired); the safety net undid what it held down"


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
    """Record every one of :func:`dead_runs` as failed; the runs closed."""
    closed = dead_runs(store, job)
    for run in closed:
        store.finish_fleet_recovery(run["run_id"], "failed", STALE_RUN)
    return closed
