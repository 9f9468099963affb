"""Workers on distinct loopback addresses, so that speculative execution can run on one machine.

Problem: Spark never launches a speculative copy of a task on a host that already runs an attempt of
it (``TaskSetManager`` skips hosts with ``hasAttemptOnHost``): it assumes a slow host, not a slow
executor. On the project's local clusters every worker and executor is ``127.0.0.1``, so tasks are
marked speculatable and no copy ever starts (seen in the driver log: "Marking task ... as
speculatable" and no speculative launch). Redundancy as speculation needs executors on other hosts.

Method: Linux routes the whole 127.0.0.0/8 range to the loopback interface, so a worker started with
``--host 127.0.0.2`` (and ``SPARK_LOCAL_IP`` for the executors it launches) is a different host to
Spark on the same machine. :func:`add_worker_on_host` adds such a worker to a cluster started by
:mod:`spark_jobs.cluster`, records it in the cluster's state (so ``cluster down`` and
``kill_domain`` treat it like the others) and waits until the master lists it alive.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from ft_core.errors import InputError
from spark_jobs.cluster import ClusterError, Process, require_state, spark_env, spark_home, wait_for_workers


def loopback_host(index: int) -> str:
    """``127.0.0.<index + 1>``: host 0 is the address the clusters already use."""
    if not 0 <= index < 250:
        raise InputError(f"loopback host index must be in [0, 250), got {index}")
    return f"127.0.0.{index + 1}"


def add_worker_on_host(state_dir: Path, host: str, domain: str, pool: str = "primary", cores: int = 1,
                       memory: str = "1g", port_base: int = 7100, ui_base: int = 8100, timeout_s: float = 90.0) -> Process:
    """Start one worker bound to ``host`` in ``pool``, labelled ``domain``; returns it once alive."""
    state = require_state(state_dir)
    used = {p.port for p in state.processes} | {p.ui_port for p in state.processes}
    port = _free_port(host, range(port_base, port_base + 200), used)
    ui = _free_port(host, range(ui_base, ui_base + 200), used | {port})
    name = f"worker-{pool}-{domain}-{host}-{port}"
    work_dir = Path(state.state_dir) / "work" / name
    work_dir.mkdir(parents=True, exist_ok=True)
    args = [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", "--host", host,
            "--port", str(port), "--webui-port", str(ui), "--cores", str(cores), "--memory", memory,
            "--work-dir", str(work_dir), state.master_url(pool)]
    # the executors this worker launches inherit SPARK_LOCAL_IP: they bind to (and report) ``host`` too
    env = spark_env({"SPARK_WORKER_OPTS": f"-Dspark.worker.timeout={state.worker_timeout_s}", "SPARK_LOCAL_IP": host})
    log = Path(state.state_dir) / "logs" / f"{name}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    worker = Process(name, "worker", pool, proc.pid, port, ui, str(log), domain, str(work_dir))
    state.processes.append(worker)
    state.save()
    wait_for_workers(state, [worker], timeout_s=timeout_s)
    return worker


def _free_port(host: str, candidates: range, used: set[int]) -> int:
    for port in candidates:
        if port in used:
            continue
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
                return port
            except OSError:
                continue
    raise ClusterError(f"no free port in {candidates.start}-{candidates.stop - 1} on {host} for a new worker")
