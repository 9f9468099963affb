"""Where a driver ftops starts listens, and the address it gives executors to call it back.

PySpark applications on a standalone master run in client mode: the driver runs where ftops starts it
(the Airflow worker, or this shell) and every executor connects back to it. On the local clusters all
of it is on this machine, and the driver binds 127.0.0.1 (``SPARK_LOCAL_IP``; without it Spark would
pick the first non-loopback interface, stack notes 8.14). Where executors run on other hosts
(containers: docker-compose.yml), loopback is unreachable for them: the host's environment names it as
they reach it in ``SPARK_LOCAL_HOSTNAME`` (Spark's own variable), and then the driver advertises that
name and binds its address, so ftops must not pin it to loopback.
"""

from __future__ import annotations

import os

LOOPBACK = "127.0.0.1"


def driver_address_env() -> dict[str, str]:
    """The variables a driver (or ftops's launcher) is started with: loopback, unless this host is named."""
    hostname = os.environ.get("SPARK_LOCAL_HOSTNAME")
    if not hostname:
        return {"SPARK_LOCAL_IP": LOOPBACK}
    own_ip = os.environ.get("SPARK_LOCAL_IP")  # a deliberate bind address next to the name is kept
    return {"SPARK_LOCAL_HOSTNAME": hostname, **({"SPARK_LOCAL_IP": own_ip} if own_ip else {})}


def driver_env(base: dict[str, str]) -> dict[str, str]:
    """``base`` (a cluster process environment, which pins loopback) with the driver's address instead."""
    env = {k: v for k, v in base.items() if k not in ("SPARK_LOCAL_IP", "SPARK_LOCAL_HOSTNAME")}
    return {**env, **driver_address_env()}


def use_driver_address() -> None:
    """For a driver whose JVM this Python process starts (not one launched by spark-submit)."""
    for name, value in driver_address_env().items():
        os.environ.setdefault(name, value)
