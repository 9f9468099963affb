"""The CPUs restarted executors get on a machine that other work keeps busy (issue 33, item 3; issue 38, item 1).

Problem: jobs restarted after a failure catch up on the CPUs of the machine their executors run on. Planning
them on the CPUs *idle* at that moment under-counts: the kernel shares CPUs among runnable threads, so work
that starts beside busy processes takes a share of the busy CPUs too. On a loaded 2-core test machine the idle
CPUs measured 0.10 and 0.92 while two restarted jobs caught up in about a minute, and the planner, given only
the idle CPUs, predicted that they would never catch up.

Algorithm (fair sharing, the kernel's CFS in the large): ``demand`` CPU-bound threads (the restarted jobs'
executor cores) beside other work that keeps ``busy = cpus - idle`` CPUs busy get ``cpus x demand / (demand +
busy)`` CPUs when that work stays runnable; they get at least the idle CPUs (work that was waiting on I/O or
sleeping leaves those free whatever starts) and at most ``min(cpus, demand)``. O(1).

    >>> fair_share_cpus(2.0, 0.1, 2.0), fair_share_cpus(2.0, 1.9, 3.0), fair_share_cpus(4.0, 4.0, 1.0)
    (1.03, 1.94, 1.0)
"""

from __future__ import annotations


def fair_share_cpus(cpus: float, idle: float, demand: float) -> float:
    """The CPUs ``demand`` CPU-bound threads get on ``cpus`` CPUs of which ``idle`` are idle now (see the module
    docstring), rounded to 0.01."""
    if cpus <= 0 or demand <= 0:
        raise ValueError(f"cpus and demand must be positive, got {cpus} and {demand}")
    idle = min(max(idle, 0.0), cpus)
    busy = cpus - idle
    return round(min(cpus, demand, max(idle, cpus * demand / (demand + busy))), 2)
