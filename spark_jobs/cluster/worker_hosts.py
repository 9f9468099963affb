"""Workers on distinct loopback addresses, so that speculative execution can run on one machine.

Problem: Spark never launches a speculative copy of a task on a host that already runs an attempt of
it (``TaskSetManager`` skips hosts with ``hasAttemptOnHost``): it assumes a slow host, not a slow
executor. On the project's local clusters every worker and executor is ``127.0.0.1``, so tasks are
marked speculatable and no copy ever starts (seen in the driver log: "Marking task ... as
speculatable" and no speculative launch). Redundancy as speculation needs executors on other hosts.

Method: Linux routes the whole 127.0.0.0/8 range to the loopback interface, so a worker started with
``--host 127.0.0.2`` (and ``SPARK_LOCAL_IP`` for the executors it launches) is a different host to
Spark on the same machine. :func:`spark_jobs.cluster.standalone.add_worker` with ``host=loopback_host(i)`` adds such a worker to a cluster,
recorded in its state like the others (``cluster down`` and ``kill_domain`` treat it alike).
"""

from __future__ import annotations

from ft_core.errors import InputError


def loopback_host(index: int) -> str:
    """``127.0.0.<index + 1>``: host 0 is the address the clusters already use."""
    if not 0 <= index < 250:
        raise InputError(f"loopback host index must be in [0, 250), got {index}")
    return f"127.0.0.{index + 1}"
