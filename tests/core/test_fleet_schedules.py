"""When a job is due, and which due jobs a scheduled run takes (ft_core.fleet.schedules): pure, no store, no Airflow."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ft_core.errors import InputError
from ft_core.fleet.schedules import Scheduled, check_schedule, due, next_fire, take


def t(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=timezone.utc)  # 2026-03-01 is a Sunday


@pytest.mark.parametrize(("given", "stored"), [
    ("@weekly", "@weekly"), ("@HOURLY", "@hourly"), (" @daily ", "@daily"), ("@monthly", "@monthly"),
    ("none", None), ("None", None), ("30 2 * * 1", "30 2 * * 1"), ("0  */6 * * *", "0 */6 * * *"),
    ("0 0 1,15 * *", "0 0 1,15 * *"), ("15 3 * * mon-fri", "15 3 * * mon-fri")])
def test_a_schedule_is_a_preset_a_five_field_cron_or_none(given, stored):
    assert check_schedule(given) == stored


@pytest.mark.parametrize("bad", ["", "weekly", "@yearly", "@reboot", "61 * * * *", "* * * * * *", "0 0 * *",
                                 "0 0 32 * *", "x y z w v", "0 0 * * 8", "@weekly 1", "0 0 * * 0\n0 1 * * *", "1" * 101])
def test_anything_else_is_refused_naming_the_field(bad):
    with pytest.raises(InputError) as refused:
        check_schedule(bad, "--drill-schedule")
    assert refused.value.field == "--drill-schedule" and "is not a schedule" in str(refused.value)
    assert "\n" not in str(refused.value).replace(repr(bad), "")


def test_next_fire_is_strictly_after_and_in_utc():
    assert next_fire("@weekly", t(1)) == t(8)  # Sunday midnight: the next one
    assert next_fire("@weekly", t(1) - timedelta(seconds=1)) == t(1)
    assert next_fire("@hourly", t(3, 10, 30)) == t(3, 11)
    assert next_fire("30 2 * * 1", t(2, 2, 30)) == t(9, 2, 30)  # Monday 02:30, a week on
    naive = datetime(2026, 3, 3, 10, 30)
    assert next_fire("@hourly", naive) == t(3, 11)  # a time without a zone is UTC


def test_due_when_the_schedule_fired_since_the_last_start_else_not():
    rows = [Scheduled(job="weekly-late", schedule="@weekly", since=t(1, 0, 1)),  # drilled just after Sunday 00:00
            Scheduled(job="weekly-due", schedule="@weekly", since=t(7, 23)),
            Scheduled(job="daily", schedule="@daily", since=t(7, 23, 59)),
            Scheduled(job="monthly", schedule="@monthly", since=t(1, 0, 1))]
    assert [r.job for r in due(rows, now=t(7, 23, 59))] == []
    at = t(8, 0, 0)
    got = due(rows, now=at)
    assert {r.job for r in got} == {"weekly-late", "weekly-due", "daily"}
    assert all(r.due_at == t(8) for r in got)
    assert [r.job for r in due(rows, now=datetime(2026, 4, 1, tzinfo=timezone.utc))][-1] == "monthly"


def test_a_run_takes_the_least_recently_picked_first_then_priority_then_overdue_then_name():
    now = t(20)
    rows = [Scheduled(job="old-pick", schedule="@daily", since=t(1), picked_at=t(19)),
            Scheduled(job="newer-pick", schedule="@daily", since=t(1), picked_at=t(19, 12)),
            Scheduled(job="never-low", schedule="@daily", since=t(10)),
            Scheduled(job="never-high", schedule="@daily", since=t(18), priority=10),
            Scheduled(job="never-overdue", schedule="@daily", since=t(2)),
            Scheduled(job="never-b", schedule="@daily", since=t(10))]
    order = [r.job for r in due(rows, now)]
    assert order == ["never-high", "never-overdue", "never-b", "never-low", "old-pick", "newer-pick"]


def test_batches_of_max_map_length_cover_every_due_job_over_runs_even_when_the_first_are_refused():
    """Picked jobs go to the back: refused ones (busy, blocked) do not keep the others out."""
    now = t(20)
    rows = {f"job-{i:02d}": Scheduled(job=f"job-{i:02d}", schedule="@daily", since=t(10)) for i in range(10)}
    seen = []
    for run in range(3):
        batch, rest = take(due(list(rows.values()), now + timedelta(minutes=run)), limit=4)
        assert len(batch) == 4 and len(batch) + len(rest) == 10  # nobody operated: every job stays due
        for r in batch:  # each picked, each refused (its drill never starts)
            rows[r.job] = r.model_copy(update={"picked_at": now + timedelta(minutes=run)})
        seen.append([r.job for r in batch])
    assert seen[0] == [f"job-{i:02d}" for i in range(4)] and seen[1] == [f"job-{i:02d}" for i in range(4, 8)]
    assert seen[2] == ["job-08", "job-09", "job-00", "job-01"]
    with pytest.raises(InputError):
        take([], 0)
