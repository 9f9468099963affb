"""Measuring a registered discovered job again, from the Spark UI it was discovered from.

Problem: a job registered with ``ftops job register --spark-ui`` (plan-only: ftops never ran it) keeps
running and changing load; the ``ftops_profile_and_plan`` DAG profiles every job before planning, so
for such a job "profile" means discovering it again.

Algorithm: the job's newest ``rates`` profile says where it was discovered (``rediscover``: the UI, the
application id if one was given, the query); discover it there again and store the topology version
and a new ``rates`` profile. When the UI no longer answers (the application ended) or no longer
shows the query, the stored topology stands and the reason is returned: planning goes on from the
last measurement. Cost: one discovery (:func:`spark_jobs.discovery.measured_topology.discover`).
A job that was not discovered is left alone (None).
"""

from __future__ import annotations

from typing import Any

from ft_core.errors import FtopsError
from spark_jobs.discovery.measured_topology import discover
from spark_jobs.discovery.rest_client import SparkRestApi


def rediscover_job(store, job: str, last_batches: int, dag_run_id: str | None = None) -> dict[str, Any] | None:
    """``{"profile_id", "topology_id", "source"}`` of the new measurement (ids None when the stored topology
    stands, with the reason in ``source``); None when ``job`` was not registered from a Spark UI."""
    latest = store.latest_profile(job, "rates")
    where = (latest or {}).get("doc", {}).get("rediscover")
    if not where:
        return None
    try:
        found = discover(SparkRestApi(where["spark_ui"]), where.get("app_id"), where.get("query"), last_batches, name=job)
    except FtopsError as exc:
        return {"profile_id": None, "topology_id": None,
                "source": f"stored topology: discovering it again failed ({exc})"}
    topology_id = store.save_topology(job, found.topology)
    profile = {**found.profile(where.get("app_id"), where.get("query")), "topology_id": topology_id}
    profile_id = store.save_profile(job, "rates", profile, dag_run_id)
    return {"profile_id": profile_id, "topology_id": topology_id, "source": found.source()}
