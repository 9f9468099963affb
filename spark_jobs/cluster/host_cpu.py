"""The CPUs idle on this machine now: with the machine's CPUs, what the share a local cluster's restarted executors
get is computed from (:mod:`ft_core.fleet.cpu_share`; issue 33, item 3; issue 38, item 1: the drain at the node's
measured free share).

A local cluster's workers (on loopback or each in a network namespace: a namespace has no CPUs of its own) all run
on this machine, and may advertise more cores than it has: three one-core workers on two CPUs. Executors restarted
there share what the machine's other work (drivers, the input feed, Airflow, the store) leaves free. Measured from
``/proc/stat``: the idle and iowait time of all CPUs over a short sample, in CPUs.

    >>> 0 < idle_cpus(0.2) <= (os.cpu_count() or 1)
    True
"""

from __future__ import annotations

import os
import time
from pathlib import Path

MIN_CPUS = 0.1  # a machine busy at the sample still gives new processes a share: never plan on none


def idle_cpus(sample_s: float = 2.0, stat: Path = Path("/proc/stat")) -> float:
    """CPUs idle on this machine over ``sample_s`` seconds (at least :data:`MIN_CPUS`)."""
    idle0, total0 = _jiffies(stat)
    time.sleep(sample_s)
    idle1, total1 = _jiffies(stat)
    cpus = os.cpu_count() or 1
    busy = total1 - total0
    return round(max(MIN_CPUS, cpus * (idle1 - idle0) / busy if busy > 0 else float(cpus)), 2)


def _jiffies(stat: Path) -> tuple[int, int]:
    """(idle + iowait, all) jiffies of the ``cpu`` line: user nice system idle iowait irq softirq steal ..."""
    fields = [int(v) for v in stat.read_text().splitlines()[0].split()[1:9]]
    return fields[3] + fields[4], sum(fields)
