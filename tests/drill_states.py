"""A drill's state (spark_jobs.drills.engine.DrillState) for tests of its waits and reports: a deployment under a
test folder (which need not exist: a triggerer on another host sees none of the job's folders) and the context a
drill's steps would have handed on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_jobs.drills.engine import DrillSettings, DrillState
from spark_jobs.drills.live import DrillContext
from spark_jobs.drills.probes import Probes
from spark_jobs.runtime.job_streams import JobDeployment


def drill_state(root: Path, job: str = "alerts", pipeline: str = "topk", ctx: dict[str, Any] | None = None,
                probes: dict[str, Any] | None = None, **changes: Any) -> DrillState:
    dep = JobDeployment(pipeline=pipeline, root=str(root), primary_master="spark://127.0.0.1:7077",
                        standby_master="spark://127.0.0.1:7078", primary_ui="http://127.0.0.1:1",
                        standby_ui="http://127.0.0.1:2")
    context = DrillContext(**{"job": job, "plan_id": None, "plan_tasks": [], "predicted_output_fidelity": 0.0,
                              "domain": "rack-a", "kill_driver": False, "replica_output": None, **(ctx or {})})
    return DrillState(settings=DrillSettings(job=job), holder="dag run ftops_chaos_drill/test", drill_id=7, deployment=dep,
                      ctx=context, probes=Probes(t_fail=context.t_fail or 0.0, domain="rack-a", **(probes or {})),
                      **changes)
