"""An attached job's topology and task rates, measured from its own driver's Spark UI (issue 34, item 2): what
``ftops_profile_and_plan`` plans from. The driver's UI and application id are in its ``control/_run.json``
(:mod:`spark_jobs.attach.hooks`); discovery is the one plan-only jobs use (:mod:`spark_jobs.discovery`). A job
whose driver does not answer keeps its stored topology, and the reason is returned.

    # profile_attached(store, "clicks", dep, last_batches=60)  # -> {"profile_id", "topology_id", "source"}
"""

from __future__ import annotations

from typing import Any

from ft_core.errors import FtopsError


def profile_attached(store, job: str, dep, last_batches: int, dag_run_id: str | None = None) -> dict[str, Any]:
    from spark_jobs.attach.drill_support import run_record
    from spark_jobs.discovery.measured_topology import discover
    from spark_jobs.discovery.rest_client import SparkRestApi

    try:
        run = run_record(dep)
        found = discover(SparkRestApi(run["ui"]), run["app_id"], None, last_batches, name=job)
    except (FtopsError, KeyError, TypeError) as exc:
        return {"profile_id": None, "topology_id": None, "source": f"stored topology: its driver's UI not read ({exc})"}
    topology_id = store.save_topology(job, found.topology)
    profile = {**found.profile(run["app_id"], None), "topology_id": topology_id}
    profile_id = store.save_profile(job, "rates", profile, dag_run_id)
    return {"profile_id": profile_id, "topology_id": topology_id, "source": found.source()}
