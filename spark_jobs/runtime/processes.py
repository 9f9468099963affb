"""Local processes ftops started (Spark daemons, drivers, Airflow components): alive or not, and stopped.

A process we started and that exited stays a zombie until it is reaped; every check here reaps our
own exited children first and counts zombies as dead, so a killed worker is never reported alive.

A pid recorded long ago may name another process by now: the kernel reuses pids (32768 of them on
these machines, where Spark and Airflow start many processes a minute). A record that keeps the
process's start time (:func:`start_time`) is checked with :func:`same_process` before anything is
signalled: stopping a test cluster once killed the standby master of another stack, which had been
given the pid of a worker the test had killed 19 minutes earlier. The start time is the kernel's own
(clock ticks since boot, ``/proc/<pid>/stat``), not a wall-clock time: a clock step (NTP, a resumed VM)
must not make our own processes look foreign.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), None when unreadable."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _state(pid: int) -> str | None:
    """The state letter in ``/proc/<pid>/stat`` (``R``, ``S``, ``Z``, ...), None when unreadable."""
    fields = _stat(pid)
    return fields[0] if fields else None


def pid_alive(pid: int | None) -> bool:
    """Whether ``pid`` runs (reaping it first if it is our exited child; zombies count as dead)."""
    if not pid:
        return False
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _state(pid) != "Z"


def start_time(pid: int) -> float | None:
    """When process ``pid`` started, in clock ticks since boot (``starttime`` of ``/proc/<pid>/stat``:
    the kernel's, unmoved by wall-clock steps; a zombie still has it); None when no such process exists."""
    fields = _stat(pid)
    try:
        return float(fields[19]) if fields else None  # field 22 of the stat line; 19 after the name
    except (IndexError, ValueError):
        return None


def same_process(pid: int, started: float | None) -> bool:
    """Whether ``pid`` runs and is still the process recorded as started at ``started`` (None: a record
    without a start time, as older versions wrote them: the pid alone decides).

    >>> same_process(os.getpid(), start_time(os.getpid())), same_process(os.getpid(), 1.0)
    (True, False)
    """
    return pid_alive(pid) and (started is None or start_time(pid) == started)


def owns_group(pgid: int, started: float | None) -> bool:
    """Whether process group ``pgid`` can still be the one recorded: its leader is the recorded process
    (alive or a zombie), or no process has that pid any more (the kernel reuses no pid while it names a
    group with members left, so those are ours). False when the pid now belongs to another process."""
    now = start_time(pgid)
    return now is None or started is None or now == started


def signal_own_group(pgid: int, started: float | None, sig: int) -> None:
    """``sig`` to group ``pgid`` while it is still the recorded one (:func:`owns_group`), else nothing."""
    if owns_group(pgid, started):
        signal_group(pgid, sig)


def own_group_alive(pgid: int, started: float | None) -> bool:
    """Whether the recorded group ``pgid`` still has a live member (leader or not)."""
    return owns_group(pgid, started) and group_alive(pgid)


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` other than a zombie runs (the leader may have exited)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pgid, os.WNOHANG)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to group ``pgid`` (to the process alone when it leads no group); one that is gone
    (or not ours) is left alone."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pgid, sig)


def stop_group(pgid: int, grace_s: float = 10.0) -> None:
    """SIGTERM the group, wait up to ``grace_s`` for it to exit, then SIGKILL what is left."""
    from spark_jobs.runtime.waiting import wait_while  # tenacity, only when stopping

    signal_group(pgid, signal.SIGTERM)
    wait_while(lambda: group_alive(pgid), timeout_s=grace_s)
    signal_group(pgid, signal.SIGKILL)
    pid_alive(pgid)  # reap the leader if it is our child
