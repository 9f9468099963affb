"""Where a worker's web UI is: the address the Spark master reports for it.

Problem: a worker's own ``/json/`` lists the executors it runs, which is how ftops learns which failure
domain hosts an application. ``http://127.0.0.1:<ui_port>`` is only right when the worker runs on this
machine and listens on loopback; a worker on another host (or bound to another address, like the
workers of :mod:`spark_jobs.cluster.worker_hosts`) is not there.

Method: the master's ``/json/`` lists every worker with its ``webuiaddress`` (the worker's
``SPARK_PUBLIC_DNS`` or host, and its bound UI port), which is right wherever the worker runs. The
cluster state of a cluster ftops started records each worker's UI port: that is the fallback, used
only for such workers when the master does not list them (not registered yet, or it does not answer).
Workers are joined to the master's view by address and port, as :mod:`spark_jobs.cluster.standalone` does.
"""

from __future__ import annotations

from typing import Any

from spark_jobs.cluster.master_room import alive_workers
from spark_jobs.cluster.web_ui import try_json


def reported_worker_uis(master_doc: dict[str, Any] | None) -> dict[tuple[str, int], str]:
    """(worker address, port) -> web UI base URL, for the workers a master's ``/json/`` document lists ALIVE
    (a restarted worker also has DEAD entries on the same port, with its old address)."""
    return {(w["host"], w["port"]): w["webuiaddress"].rstrip("/") for w in alive_workers(master_doc)
            if w.get("webuiaddress")}


def worker_ui_url(worker, reported: dict[tuple[str, int], str]) -> str:
    """The web UI of ``worker`` (a :class:`~spark_jobs.cluster.standalone.Process` of a cluster ftops
    started): what the master reports, else the address and UI port recorded when ftops started it."""
    return reported.get((worker.host, worker.port)) or f"http://{worker.host}:{worker.ui_port}"


def executors_by_worker(master_ui: str, workers: list) -> list[tuple[Any, list[dict[str, Any]]]]:
    """Each of ``workers`` whose process is alive, with the executors its own ``/json/`` lists (found at
    the address ``master_ui``'s master reports for it); a worker that died meanwhile is left out."""
    reported = reported_worker_uis(try_json(master_ui.rstrip("/") + "/json/"))
    out = []
    for worker in workers:
        if not worker.alive():
            continue
        doc = try_json(worker_ui_url(worker, reported) + "/json/")
        if doc is not None:
            out.append((worker, doc.get("executors", [])))
    return out
