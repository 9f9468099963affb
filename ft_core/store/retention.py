"""How long the history store keeps what it is written most often, so it can run for years unattended.

Problem: two tables grow with time, not with events. Every micro-batch of every stream writes a row of
``ftops_stream_progress`` (a fleet of 500 jobs at a 10 s trigger: 4.3 million rows a day), and every hourly
``ftops_profile_and_plan`` run stores a rates profile per job (a document per job per hour). Nothing reads them far
back: the console charts the last hour, a fleet recovery reads the 5 minutes before a failure, a drill its own minutes;
what a drill's forecast learns from earlier drills is the progress *during* those drills.

Rule (:class:`Retention`): progress rows older than ``progress_days`` (default 7) go, except those within
:data:`DRILL_MARGIN` of one of the job's drills (start to finish: what the next drills' catch-up forecasts learn from,
:mod:`spark_jobs.drills.catch_up`), and so does a stream's newest micro-batch (``ftops_stream``) that old (a query
renamed or reset, or a job gone: nothing writes that stream any more); rates profiles older than ``profile_days``
(default 30) go, except each job's newest. Plans, drills, recoveries, the fault journal, events and checkpoint
profiles are the record of what ftops did and stay.

Who prunes: ``ftops_safety_net`` at the start of every run (it runs continuously, also with experiment schedules
off), and ``ftops db prune`` by hand (a store used without Airflow); the drivers that write the rows do not.

Algorithm (:meth:`RetentionRecords.prune`): per stream, one ``DELETE`` on the (stream, batch_end) index; per job, one
on the (job, kind, created_at) index of profiles; each in a transaction of its own, so a prune holds no lock for long
and one interrupted keeps what it did. Complexity: O(streams + jobs) statements, each reading only the rows it deletes
(and the job's drills).

``FTOPS_RETENTION`` sets the days: ``progress=7,profiles=30`` (either may be left out).

    >>> r = Retention.from_text("progress=3")
    >>> r.progress_days, r.profile_days
    (3.0, 30.0)
"""

from __future__ import annotations

import os
import time

from pydantic import BaseModel, Field, ValidationError

from ft_core.errors import InputError
from ft_core.input.quantities import RetentionDays

ENV = "FTOPS_RETENTION"
DRILL_MARGIN = "10 minutes"  # progress kept before a drill's start and after its end
_KEYS = {"progress": "progress_days", "profiles": "profile_days"}


class Retention(BaseModel):
    """Days the history store keeps stream progress rows and rates profiles (the module docstring)."""

    progress_days: RetentionDays = Field(default=7.0, description="stream progress rows (per micro-batch)")
    profile_days: RetentionDays = Field(default=30.0, description="rates profiles, except each job's newest")

    @classmethod
    def from_text(cls, text: str | None, source: str = ENV) -> Retention:
        """``progress=DAYS,profiles=DAYS`` (either may be left out; empty: the defaults); InputError naming ``source``."""
        values: dict[str, str] = {}
        for part in (p.strip() for p in (text or "").split(",") if p.strip()):
            key, sep, value = part.partition("=")
            if not sep or key.strip() not in _KEYS:
                raise InputError(f"{source}: {part!r} is not progress=DAYS or profiles=DAYS", field=source)
            values[_KEYS[key.strip()]] = value.strip()
        try:
            return cls(**values)
        except ValidationError as exc:
            names = {field: key for key, field in _KEYS.items()}
            detail = "; ".join(f"{names[e['loc'][0]]}: {e['msg']}" for e in exc.errors())
            raise InputError(f"{source}: {detail} (days from 1 to 3650)", field=source) from None

    @classmethod
    def from_env(cls) -> Retention:
        return cls.from_text(os.environ.get(ENV), ENV)


class Pruned(BaseModel):
    """What one prune deleted."""

    progress_rows: int = 0
    profiles: int = 0
    streams: int = 0  # streams looked at
    streams_gone: int = 0  # streams whose newest micro-batch was past the retention
    jobs: int = 0  # jobs whose profiles were looked at
    seconds: float = 0.0
    retention: Retention

    def summary(self) -> str:
        """One line for a log or a terminal."""
        r = self.retention
        return (f"deleted {self.progress_rows} stream progress rows older than {r.progress_days:g} days ({self.streams} "
                f"streams) and {self.profiles} rates profiles older than {r.profile_days:g} days ({self.jobs} jobs) "
                f"in {self.seconds:.1f} s")


class RetentionRecords:
    """Prune the history store's most written tables (mixed into :class:`~ft_core.store.history.HistoryStore`)."""

    conn: object

    def prune(self, retention: Retention | None = None) -> Pruned:
        """Delete what ``retention`` (default: ``FTOPS_RETENTION``) no longer keeps; the counts deleted."""
        retention = retention or Retention.from_env()
        started, out = time.monotonic(), Pruned(retention=retention)
        with self.conn, self.conn.cursor() as cur:
            cur.execute("""SELECT s.stream, j.job_id FROM ftops_stream s
                           LEFT JOIN ftops_job j ON s.stream = 'ftops-' || j.name || '-primary' OR s.job = j.name
                           ORDER BY s.stream""")
            streams = cur.fetchall()
            cur.execute("SELECT job_id FROM ftops_job ORDER BY job_id")
            jobs = [r[0] for r in cur.fetchall()]
        for stream, job_id in streams:
            with self.conn, self.conn.cursor() as cur:
                cur.execute(f"""DELETE FROM ftops_stream_progress p
                                WHERE p.stream = %s AND p.batch_end < now() - %s * interval '1 day'
                                  AND NOT EXISTS (SELECT 1 FROM ftops_drill d WHERE d.job_id = %s
                                        AND p.batch_end BETWEEN d.started_at - interval '{DRILL_MARGIN}'
                                                            AND coalesce(d.finished_at, now()) + interval '{DRILL_MARGIN}')""",
                            (stream, retention.progress_days, job_id))
                out.progress_rows += cur.rowcount
        with self.conn, self.conn.cursor() as cur:
            cur.execute("DELETE FROM ftops_stream WHERE batch_end < now() - %s * interval '1 day'",
                        (retention.progress_days,))
            out.streams_gone = cur.rowcount
        for job_id in jobs:
            with self.conn, self.conn.cursor() as cur:
                cur.execute("""DELETE FROM ftops_profile WHERE job_id = %s AND kind = 'rates'
                                 AND created_at < now() - %s * interval '1 day'
                                 AND profile_id <> (SELECT profile_id FROM ftops_profile WHERE job_id = %s AND kind = 'rates'
                                                    ORDER BY created_at DESC, profile_id DESC LIMIT 1)""",
                            (job_id, retention.profile_days, job_id))
                out.profiles += cur.rowcount
        out.streams, out.jobs, out.seconds = len(streams), len(jobs), round(time.monotonic() - started, 3)
        return out
