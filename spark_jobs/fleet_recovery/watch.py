"""Which jobs a lost failure domain took down: the fleet watch's check (issue 33, item 3's sensor).

Problem: with nobody watching, a rack or a zone goes and several jobs stop; ``ftops_fleet_recovery`` brings them back
in the best order, but someone has to start it. The watch (``ftops_fleet_watch``, opt-in: unpause it) starts it
itself when it sees a domain's workers gone under jobs that no longer run.

Algorithm, per poll: the history store's one fleet query (:meth:`~ft_core.store.policies.PolicyRecords.fleet_states`,
index-backed at 5,000 jobs) gives the candidates: jobs with no live lease (a drill kills domains on purpose and a
running recovery holds its jobs: neither is the watch's) whose newest micro-batch ended more than :data:`QUIET_S` ago.
Each candidate with a deployment is **lost** when its master lists a worker dead that was still heartbeating when
the job's last micro-batch ended (less :data:`HEARTBEAT_SLACK_S`: a worker heartbeats every quarter of the master's
timeout) *and* its primary runs no executor (the cluster seam, as the fleet recovery reads it): the domain's loss,
not a job stopped by hand or a cluster merely full. A job whose newest fleet recovery is about this loss already (its
failure time after the job's last micro-batch, less the slack) is left to whoever that run's outcome went to: the
watch starts one recovery per loss, never a loop of them. Losses are grouped by master (a fleet recovery plans one
master's capacity); a loss's failure time is its dead workers' newest last heartbeat (the moment they went silent).
A master on which an experiment holds a job (a drill kills domains on purpose and gives them back; a recovery plans
the master's capacity) is left to it for the poll: a job that a running recovery does not name is found once it ends,
as a loss of its own (its run named after its jobs too, so it is not mistaken for the run that left it out).

Complexity: one store query, then per candidate and per job under an experiment its deployment (an indexed lookup),
and per candidate's master its state (one read per master per poll); only a candidate whose master lists dead workers costs a read of the workers its application
ran on. Candidates are the jobs whose newest micro-batch is older than :data:`QUIET_S`.

    >>> dead_since([{"state": "DEAD", "host": "a", "port": 1, "lastheartbeat": 1_000_000},
    ...             {"state": "ALIVE", "host": "b", "port": 1, "lastheartbeat": 1_060_000},
    ...             {"state": "DEAD", "host": "c", "port": 1, "lastheartbeat": 10_000}], since=990.0)
    [('a:1', 1000.0)]
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ft_core.errors import FtopsError

log = logging.getLogger(__name__)

QUIET_S = 10.0  # a job's newest micro-batch at least this old before its executors are looked at
HEARTBEAT_SLACK_S = 60.0  # a dead worker counts for a job when its last heartbeat is at most this long before the
# job's last micro-batch (workers heartbeat every quarter of the master's timeout, 15 s by default)


class Loss(BaseModel):
    """Jobs one master's lost workers took down: what ``ftops_fleet_recovery`` is started with."""

    master_ui: str
    jobs: list[str] = Field(description="the lost jobs, by name")
    failed_at: float = Field(description="epoch seconds: the dead workers' newest last heartbeat")
    dead_workers: list[str] = Field(description="host:port of the workers the master lists dead since")

    def conf(self) -> dict[str, str]:
        """The fleet recovery's DAG run conf: these jobs, failed then (the rest of its Params: their defaults)."""
        return {"jobs": ",".join(self.jobs), "failed_at": f"{self.failed_at:.3f}"}

    def run_id(self) -> str:
        """The fleet recovery's DAG run id: its master and its failure time, so one loss is one run.

        >>> Loss(master_ui="http://10.0.0.5:8080", jobs=["a"], failed_at=1796001717.89, dead_workers=[]).run_id()
        'fleet_watch__10.0.0.5_8080__1796001717__ca978112'
        """
        master = re.sub(r"[^A-Za-z0-9.]+", "_", re.sub(r"^https?://", "", self.master_ui)).strip("_")
        jobs = hashlib.sha256(",".join(self.jobs).encode()).hexdigest()[:8]  # ids are short; job names are not
        return f"fleet_watch__{master}__{int(self.failed_at)}__{jobs}"


def dead_since(workers: list[dict[str, Any]], since: float) -> list[tuple[str, float]]:
    """The workers (``host:port``, last heartbeat in epoch seconds) the master lists not alive whose last heartbeat
    is at or after ``since``, and whose address no live worker holds again."""
    from spark_jobs.fleet_recovery.inputs import gone_workers

    return [(f"{w.get('host')}:{w.get('port')}", w.get("lastheartbeat", 0) / 1000) for w in gone_workers(workers)
            if w.get("lastheartbeat", 0) / 1000 >= since]


def find_losses(store, now: float | None = None) -> list[Loss]:
    """The losses the watch would start fleet recoveries for now, one per master, oldest first (the module docstring)."""
    from spark_jobs.cluster.web_ui import master_state
    from spark_jobs.fleet_recovery.inputs import primary_executors

    now = time.time() if now is None else now
    states = store.fleet_states()
    busy = {_master_of(_deployment(store, r["job"])) for r in states if r["experiment"] is not None} - {None}
    masters: dict[str, dict[str, Any] | None] = {}
    found: dict[str, list[tuple[str, list[tuple[str, float]]]]] = {}
    for row in _candidates(states, now):
        dep = _deployment(store, row["job"])
        ui = _master_of(dep)
        if not ui or ui in busy:
            continue
        if ui not in masters:
            try:
                masters[ui] = master_state(ui)
            except (FtopsError, OSError) as exc:  # a master that does not answer is no evidence: the next poll
                log.warning("fleet watch: master %s does not answer (%s)", ui, exc)
                masters[ui] = None
        since = row["last_batch_at"].timestamp() - HEARTBEAT_SLACK_S
        dead = dead_since(masters[ui].get("workers", []), since) if masters[ui] else []
        # the master first (one read per master per poll): a healthy fleet costs no executor check
        if dead and primary_executors(dep, row["job"]) == 0 and not _recovered_since(store, row["job"], since):
            found.setdefault(ui, []).append((row["job"], dead))
    losses = [Loss(master_ui=ui, jobs=sorted(job for job, _ in lost),
                   failed_at=max(at for _, dead in lost for _, at in dead),
                   dead_workers=sorted({w for _, dead in lost for w, _ in dead})) for ui, lost in found.items()]
    return sorted(losses, key=lambda loss: loss.failed_at)


def _deployment(store, job: str):
    """The job's deployment; None for a plan-only job or one this version cannot read (not ftops's to restart)."""
    from spark_jobs.cli.job import registered_deployment

    try:
        return registered_deployment(store, job)
    except (FtopsError, ValueError):
        return None


def _master_of(dep) -> str | None:
    return getattr(dep, "primary_ui", None) or None


def _candidates(states: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
    return [r for r in states if r["experiment"] is None and isinstance(r["last_batch_at"], datetime)
            and now - r["last_batch_at"].timestamp() > QUIET_S]


def _recovered_since(store, job: str, since: float) -> bool:
    newest = store.job_fleet_recoveries(job, limit=1)
    return bool(newest) and newest[0]["failed_at"].timestamp() >= since
