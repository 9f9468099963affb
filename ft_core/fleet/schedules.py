"""When a job is due for a drill or a checkpoint tuning, and which due jobs a scheduled run takes (issue 33).

Problem: every registered job has its own drill schedule and tuning schedule (``ftops job set``); the
``ftops_chaos_drill`` and ``ftops_checkpoint_tuning`` DAGs wake on their own schedule (hourly) and operate the jobs
that are due, each in its own mapped task group, at most Airflow's ``[core] max_map_length`` of them per run.

Rules:

- a schedule is a 5-field cron expression read in UTC (minute, hour, day of month, month, day of week) or one of
  the presets ``@hourly @daily @weekly @monthly``; ``none`` (stored as NULL) means never on a schedule, by hand only;
- a job is *due* when its schedule fired since ``since``: the start of its last drill (any drill: scheduled, by
  hand, ``ftops drill job``) or tuning run, or, if it never ran, the time the schedule was set. A run that is
  refused (the job busy, its failure domains held by another drill) starts nothing, so the job stays due;
- a run takes at most ``limit`` due jobs: the least recently picked first (never picked before all), then the
  higher priority, then the longest overdue, then by name. The rest stay due for the next run, and the jobs a run
  picked go to the back of the queue, so jobs refused run after run never starve the others.

Algorithm: one croniter step per scheduled job (the next fire time after ``since``), then a sort:
O(n log n) for n scheduled jobs.

    >>> from datetime import datetime, timezone
    >>> t = lambda d, h=0: datetime(2026, 3, d, h, tzinfo=timezone.utc)  # 2026-03-01 is a Sunday
    >>> rows = [Scheduled(job="a", schedule="@weekly", since=t(2)), Scheduled(job="b", schedule="@daily", since=t(7, 12)),
    ...         Scheduled(job="c", schedule="0 6 * * *", since=t(7, 12), priority=5)]
    >>> [r.job for r in due(rows, now=t(8, 7))]  # a: Sunday 8th 00:00 passed; c: 06:00 passed, b: midnight passed
    ['c', 'a', 'b']
    >>> [[r.job for r in part] for part in take(due(rows, now=t(8, 7)), limit=2)]
    [['c', 'a'], ['b']]
"""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import BaseModel, Field

from ft_core.errors import InputError

PRESETS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *"}
NONE = "none"
MAX_SCHEDULE_LENGTH = 100
RULE = ("a 5-field cron expression in UTC (minute hour day-of-month month day-of-week, e.g. '30 2 * * 1'), "
        "one of @hourly @daily @weekly @monthly, or none")
_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


def check_schedule(value: object, field: str = "schedule") -> str | None:
    """The schedule as stored (a preset's name, a cron expression with single spaces), None for ``none``;
    InputError ``<field>: ...`` otherwise.

    >>> check_schedule(" @Weekly "), check_schedule("30  2 * * 1"), check_schedule("none")
    ('@weekly', '30 2 * * 1', None)
    >>> check_schedule("61 * * * *", "--drill-schedule")
    Traceback (most recent call last):
    ...
    ft_core.errors.InputError: --drill-schedule: '61 * * * *' is not a schedule: use a 5-field cron expression in UTC (minute hour day-of-month month day-of-week, e.g. '30 2 * * 1'), one of @hourly @daily @weekly @monthly, or none
    """
    if not isinstance(value, str) or len(value) > MAX_SCHEDULE_LENGTH:
        shown = repr(value) if not isinstance(value, str) else repr(value[:40] + "...")
        raise InputError(f"{field}: {shown} is not a schedule: use {RULE}", field=field)
    text = " ".join(value.split())
    if text.lower() == NONE:
        return None
    if text.lower() in PRESETS:
        return text.lower()
    if len(text.split(" ")) == 5 and not text.startswith("@") and _valid_cron(text):
        return text
    raise InputError(f"{field}: {value!r} is not a schedule: use {RULE}", field=field)


def _valid_cron(text: str) -> bool:
    from croniter import croniter

    try:
        if not croniter.is_valid(text):
            return False
        croniter(text, datetime(2026, 1, 1, tzinfo=timezone.utc)).get_next(datetime)  # one it cannot step refused too
    except (ValueError, KeyError, OverflowError, TypeError, RecursionError):
        return False
    return True


def schedule_flag(text: str) -> str | None:
    """An argparse ``type=`` for a schedule flag (argparse names the flag in its message)."""
    import argparse

    try:
        return check_schedule(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("schedule: ")) from None


def shown(schedule: str | None) -> str:
    """A stored schedule as the commands show it (``none`` for NULL)."""
    return NONE if schedule is None else schedule


def next_fire(schedule: str, after: datetime) -> datetime:
    """The schedule's first fire time strictly after ``after`` (UTC).

    >>> from datetime import datetime, timezone
    >>> next_fire("@monthly", datetime(2026, 3, 4, 12, tzinfo=timezone.utc)).isoformat()
    '2026-04-01T00:00:00+00:00'
    """
    from croniter import croniter

    start = after if after.tzinfo else after.replace(tzinfo=timezone.utc)
    return croniter(PRESETS.get(schedule, schedule), start.astimezone(timezone.utc)).get_next(datetime)


class Scheduled(BaseModel):
    """A job with a schedule for one operation, as the store gives it."""

    job: str
    schedule: str
    since: datetime  # the last start of the operation, else when the schedule was set
    picked_at: datetime | None = None  # when a scheduled run last picked it (None: never)
    priority: float = Field(default=1.0, gt=0)
    due_at: datetime | None = None  # filled by due(): the fire time it is due since


def due(rows: list[Scheduled], now: datetime) -> list[Scheduled]:
    """The jobs whose schedule fired since their ``since``, in the order a run takes them (module docstring)."""
    out = []
    for row in rows:
        fire = next_fire(row.schedule, row.since)
        if fire <= now:
            out.append(row.model_copy(update={"due_at": fire}))
    out.sort(key=lambda r: (r.picked_at or _EARLIEST, -r.priority, r.due_at, r.job))
    return out


def take(rows: list[Scheduled], limit: int) -> tuple[list[Scheduled], list[Scheduled]]:
    """The first ``limit`` due jobs for this run, and those left for the next one."""
    if limit < 1:
        raise InputError(f"max_map_length: must be at least 1, got {limit}")
    return rows[:limit], rows[limit:]
