"""Local processes ftops started (Spark daemons, drivers, Airflow components): alive or not, and stopped.

A process we started and that exited stays a zombie until it is reaped; every check here reaps our
own exited children first and counts zombies as dead, so a killed worker is never reported alive.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def _state(pid: int) -> str | None:
    """The state letter in ``/proc/<pid>/stat`` (``R``, ``S``, ``Z``, ...), None when unreadable."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


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
