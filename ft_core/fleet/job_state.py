"""A job's state at a glance, from what the history store knows of it now.

Problem: a fleet console answers "which of my jobs need a look?" before anything else. The store holds, per
job, the experiment holding it (a live lease), and its primary stream's newest micro-batch (when it ended, and
how far its output watermark is behind its input's; a job attached to unchanged code: the newest of its queries'
batches and the largest lag among them, migration 014). From those alone, say one of:

- ``experiment``: a live lease holds the job: a drill, a recovery, or a change of its replica or of its
  checkpoint interval (its lag is that operation's doing);
- ``no progress``: no micro-batch of its primary (an attached job: of its queries) is recorded (a plan-only job,
  or one never started);
- ``down``: its newest micro-batch ended over ``stale_after_s`` ago (no batch runs);
- ``lagging``: its output is over ``lagging_after_s`` of event time behind its input;
- ``running``: otherwise.

Algorithm: the first rule that holds, in that order. O(1) per job.

The thresholds are parameters with these defaults (the console uses the defaults): 5 minutes without a batch is 150 triggers of the
runtime's default 2 s (a streaming job that has not finished a batch in that long is not serving), and 2 minutes of
event-time lag is past the windows and watermark delays of the sample pipelines, so a job past it is behind,
not merely waiting for a window to close.

>>> from datetime import datetime, timedelta, timezone
>>> now = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
>>> job_state(None, now - timedelta(seconds=20), 200_000, now)
'lagging'
>>> job_state("drill", now - timedelta(hours=1), None, now)
'experiment'
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

JobState = Literal["experiment", "no progress", "down", "lagging", "running"]
STATES: tuple[JobState, ...] = ("experiment", "no progress", "down", "lagging", "running")
STALE_AFTER_S = 300.0
LAGGING_AFTER_S = 120.0


def job_state(experiment: str | None, last_batch_at: datetime | None, lag_ms: float | None, now: datetime, *,
              stale_after_s: float = STALE_AFTER_S, lagging_after_s: float = LAGGING_AFTER_S) -> JobState:
    """The job's state (module docstring): ``experiment`` is the kind of the live lease on it (None: none),
    ``last_batch_at`` when its primary's newest micro-batch ended (None: never), ``lag_ms`` how far that batch's
    output watermark was behind its input's (None: unknown)."""
    if experiment:
        return "experiment"
    if last_batch_at is None:
        return "no progress"
    if (now - last_batch_at).total_seconds() > stale_after_s:
        return "down"
    if lag_ms is not None and lag_ms / 1000 > lagging_after_s:
        return "lagging"
    return "running"


def states_of(rows: list[dict], now: datetime) -> dict[str, JobState]:
    """Each job's state, from rows with ``job``, ``experiment``, ``last_batch_at`` and ``lag_ms``
    (``HistoryStore.fleet_states``): the console's jobs page and ``ftops job fleet``."""
    return {r["job"]: job_state(r["experiment"], r["last_batch_at"], r["lag_ms"], now) for r in rows}
