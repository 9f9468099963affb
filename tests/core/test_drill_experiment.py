"""A live drill's experiment report (spark_jobs.drills.experiment) from what its steps hand on: the replica's
lag is a checked hypothesis, and a query that failed and started again during the drill is on the timeline,
read from the runs' own descriptors (spark_jobs.drills.live.query_failures), also when the drill was aborted."""

from __future__ import annotations

import json
import time

from spark_jobs.drills.experiment import drill_experiment
from spark_jobs.drills.live import DrillContext, query_failures
from spark_jobs.runtime.job_streams import JobDeployment

T_FAIL = time.time() - 1000  # the verdict is stamped now, after everything else


def _pre(replica_lag_s: float | None) -> dict:
    return {"job": "alerts", "drill_id": 7, "checked_at": T_FAIL - 5,
            "hypothesis": {"primary_running": True, "replica_running": True, "lag_s": 3.0, "replica_lag_s": replica_lag_s,
                           "steady_lag_bound_s": 60.0, "lag_files": 2},
            "probes": {"domain": "rack-a", "max_duration_s": 600, "max_lag_s": 300}}


def test_the_replicas_lag_is_a_checked_hypothesis_and_older_drills_without_it_still_report():
    checks = {c.name: c for c in drill_experiment(_pre(4.5), None, None, None, verdict="aborted", reasons=["x"],
                                                  dag_run_id=None).hypothesis_before}
    assert checks["replica keeps up"].observed == "4.5 s behind" and checks["replica keeps up"].held
    behind = drill_experiment(_pre(75.0), None, None, None, verdict="aborted", reasons=["x"], dag_run_id=None)
    assert not next(c for c in behind.hypothesis_before if c.name == "replica keeps up").held
    older = drill_experiment(_pre(None), None, None, None, verdict="aborted", reasons=["x"], dag_run_id=None)
    assert "replica keeps up" not in {c.name for c in older.hypothesis_before}


def test_query_failures_after_the_fault_are_on_the_drills_timeline_also_when_it_aborted(tmp_path):
    dep = JobDeployment(pipeline="topk", root=str(tmp_path), primary_master="spark://127.0.0.1:7077",
                        standby_master="spark://127.0.0.1:7078", primary_ui="http://127.0.0.1:8090",
                        standby_ui="http://127.0.0.1:8091")
    before, after = {"at": T_FAIL - 100, "error": "an older one"}, {"at": T_FAIL + 12, "error": "RuntimeError: boom"}
    final = {"at": T_FAIL + 30, "error": "RuntimeError: boom", "why": "4 times within 600 s, --max-restarts 3"}
    dep.primary_output.mkdir(parents=True)
    (dep.primary_output / "_run.json").write_text(json.dumps({"restarts": [before, after], "failed": final}))
    ctx = DrillContext(job="alerts", plan_id=None, plan_tasks=[], predicted_output_fidelity=0.0, domain="rack-a",
                       kill_driver=False, replica_output=str(tmp_path / "replica-without-descriptor"), t_fail=T_FAIL)
    failures = query_failures(dep, ctx)
    assert failures == {"primary": [after, {**final, "final": True}], "replica": []}
    passed = drill_experiment(_pre(1.0), {"t_fail": T_FAIL}, None, {"query_failures": failures}, verdict="passed",
                              reasons=[], dag_run_id=None)
    aborted = drill_experiment(_pre(1.0), {"t_fail": T_FAIL}, None, None, verdict="aborted", reasons=["too long"],
                               dag_run_id=None, query_failures=failures)
    for report in (passed, aborted):
        assert [e.event for e in report.timeline][:4] == [
            "steady state checked", "failure injected",
            "primary query failure #1: started again from its checkpoint after: RuntimeError: boom",
            "primary query failure #2: failed and was not started again: RuntimeError: boom"]
