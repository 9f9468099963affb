"""A live drill's experiment report (spark_jobs.drills.experiment) from the drill's state: the replica's lag is a
checked hypothesis, the failure domains before and after are a check, a query that failed and started again during
the drill is on the timeline, read from the runs' own descriptors (spark_jobs.drills.live.query_failures), also when
the drill was aborted, and an abort by the halt is a fired probe."""

from __future__ import annotations

import json
import time

from spark_jobs.drills.engine import Hypothesis
from spark_jobs.drills.experiment import drill_experiment
from spark_jobs.drills.live import query_failures
from tests.drill_states import drill_state

T_FAIL = time.time() - 1000  # the verdict is stamped now, after everything else


def _state(tmp_path, replica_lag_s: float | None, **changes):
    hypothesis = Hypothesis(lag_s=3.0, replica_lag_s=replica_lag_s, bound_s=60.0, lag_files=2, checked_at=T_FAIL - 5)
    return drill_state(tmp_path, ctx={"replica_output": str(tmp_path / "replica"), "t_fail": T_FAIL},
                       probes={"max_duration_s": 600, "max_lag_s": 300}, hypothesis=hypothesis, **changes)


def test_the_replicas_lag_is_a_checked_hypothesis_and_a_drill_stopped_before_steady_state_reports(tmp_path):
    checks = {c.name: c for c in drill_experiment(_state(tmp_path, 4.5), verdict="aborted", reasons=["x"]).hypothesis_before}
    assert checks["replica keeps up"].observed == "4.5 s behind" and checks["replica keeps up"].held
    behind = drill_experiment(_state(tmp_path, 75.0), verdict="aborted", reasons=["x"])
    assert not next(c for c in behind.hypothesis_before if c.name == "replica keeps up").held
    early = drill_experiment(drill_state(tmp_path), verdict="aborted", reasons=["not steady"])
    assert [(c.name, c.held) for c in early.hypothesis_before] == [("primary keeps up", None)]


def test_the_failure_domains_after_the_drill_are_checked_against_those_before(tmp_path):
    report = {"steady_after": {"lag_s": 2.0, "bound_s": 60.0}, "time_to_caught_up_s": 30.0, "lost_windows": 0,
              "duplicated_windows": 0, "output_equals_reference": True}
    kept = _state(tmp_path, 1.0, report=report, capacity_before={"rack-a": 1, "rack-b": 1},
                  capacity_after={"rack-a": 1, "rack-b": 1})
    check = next(c for c in drill_experiment(kept, verdict="passed", reasons=[]).hypothesis_after
                 if c.name == "failure domains as before")
    assert check.held and check.observed == "rack-a: 1, rack-b: 1"
    moved = kept.model_copy(update={"capacity_after": {"rack-b": 1, "rack-c": 1}})
    check = next(c for c in drill_experiment(moved, verdict="failed", reasons=[]).hypothesis_after
                 if c.name == "failure domains as before")
    assert not check.held and check.observed == "rack-b: 1, rack-c: 1"


def test_a_halt_is_a_fired_probe_of_the_report(tmp_path):
    report = drill_experiment(_state(tmp_path, 1.0), verdict="aborted", reasons=["halted"],
                              fired=("halted", "experiments were halted by ops: storage incident"))
    fired = [p for p in report.probes if p.fired]
    assert [(p.name, p.reason) for p in fired] == [("halted", "experiments were halted by ops: storage incident")]


def test_query_failures_after_the_fault_are_on_the_drills_timeline_also_when_it_aborted(tmp_path):
    state = _state(tmp_path, 1.0)
    dep = state.deployment
    before, after = {"at": T_FAIL - 100, "error": "an older one"}, {"at": T_FAIL + 12, "error": "RuntimeError: boom"}
    final = {"at": T_FAIL + 30, "error": "RuntimeError: boom", "why": "4 times within 600 s, --max-restarts 3"}
    dep.primary_output.mkdir(parents=True)
    (dep.primary_output / "_run.json").write_text(json.dumps({"restarts": [before, after], "failed": final}))
    failures = query_failures(dep, state.ctx)
    assert failures == {"primary": [after, {**final, "final": True}], "replica": []}
    passed = drill_experiment(state.model_copy(update={"report": {"query_failures": failures}}), verdict="passed",
                              reasons=[])
    aborted = drill_experiment(state, verdict="aborted", reasons=["too long"], query_failures=failures)
    for report in (passed, aborted):
        assert [e.event for e in report.timeline][:4] == [
            "steady state checked", "failure injected",
            "primary query failure #1: started again from its checkpoint after: RuntimeError: boom",
            "primary query failure #2: failed and was not started again: RuntimeError: boom"]
