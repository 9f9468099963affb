"""A live drill's experiment report (:class:`ft_core.store.experiments.ExperimentReport`), assembled from
what its DAG steps handed on: the preflight's steady-state hypothesis and probes, the failure and
capacity times, the verification's measurements and the steady state after, the verdict.

    # drill_experiment(pre, injected, capacity, report, verdict="passed", reasons=[], dag_run_id="manual__1")
"""

from __future__ import annotations

import time
from typing import Any

from ft_core.store.experiments import Check, ExperimentReport, Probe, timeline

_MEASURED = ("predicted_output_fidelity", "predicted_accuracy", "tentative_accuracy", "time_to_first_tentative_s", "time_to_caught_up_s",
             "lost_windows", "duplicated_windows", "output_equals_reference")


def hypothesis_before(pre: dict[str, Any]) -> list[Check]:
    h = pre["hypothesis"]
    checks = [Check(name="primary running", expected="the primary application runs", observed="running", held=True),
              Check(name="primary keeps up", expected=f"output within {h['steady_lag_bound_s']:.0f} s of the input",
                    observed=f"{h['lag_s']:.1f} s behind", held=h["lag_s"] <= h["steady_lag_bound_s"])]
    if h["replica_running"]:
        checks.append(Check(name="replica running", expected="the plan's replica runs on the standby pool",
                            observed="running", held=True))
    if h.get("replica_lag_s") is not None:  # drills before the replica's lag was checked did not record it
        checks.append(Check(name="replica keeps up", expected=f"output within {h['steady_lag_bound_s']:.0f} s of the input",
                            observed=f"{h['replica_lag_s']:.1f} s behind", held=h["replica_lag_s"] <= h["steady_lag_bound_s"]))
    return checks


def hypothesis_after(pre: dict[str, Any], report: dict[str, Any] | None) -> list[Check]:
    if report is None:
        return [Check(name="back to steady state", expected="the primary caught up and keeps up", held=None)]
    after = report.get("steady_after") or {}
    caught = report.get("time_to_caught_up_s")
    checks = [Check(name="caught up", expected="the primary reached the input's watermark at the failure's end",
                    observed=None if caught is None else f"after {caught:.1f} s", held=caught is not None),
              Check(name="output exact", expected="no window lost or duplicated (equal to the batch reference)",
                    observed=f"{report.get('lost_windows')} lost, {report.get('duplicated_windows')} duplicated",
                    held=bool(report.get("output_equals_reference")))]
    if after:
        checks.append(Check(name="primary keeps up", expected=f"output within {after['bound_s']:.0f} s of the input",
                            observed=f"{after['lag_s']:.1f} s behind", held=after["lag_s"] <= after["bound_s"]))
    return checks


def probes(pre: dict[str, Any], fired: tuple[str, str] | None) -> list[Probe]:
    from spark_jobs.drills.probes import Probes

    bounds = Probes.model_validate({"t_fail": 0.0, **pre["probes"]}).bounds()
    return [Probe(name=name, bound=bound, fired=fired is not None and fired[0] == name,
                  reason=fired[1] if fired is not None and fired[0] == name else None) for name, bound in bounds.items()]


def drill_experiment(pre: dict[str, Any], injected: dict[str, Any] | None, capacity: dict[str, Any] | None,
                     report: dict[str, Any] | None, *, verdict: str, reasons: list[str], dag_run_id: str | None,
                     fired: tuple[str, str] | None = None, restored: list[str] | None = None,
                     query_failures: dict[str, list[dict]] | None = None) -> ExperimentReport:
    """The report; ``query_failures`` (:func:`spark_jobs.drills.live.query_failures`, default the verification
    report's) go on the timeline, so an aborted or failed drill shows them too."""
    t_fail = injected["t_fail"] if injected else None
    since = (lambda s: None if s is None or t_fail is None else t_fail + s)
    moments = {"steady state checked": pre.get("checked_at"), "failure injected": t_fail,
               "first tentative output": since((report or {}).get("time_to_first_tentative_s")),
               "replacement capacity joined": (capacity or {}).get("t_capacity"),
               "primary caught up": since((report or {}).get("time_to_caught_up_s")),
               f"{verdict}": time.time()}
    failures = query_failures if query_failures is not None else (report or {}).get("query_failures") or {}
    for role, events in failures.items():
        for n, event in enumerate(events, start=1):
            what = "failed and was not started again" if event.get("final") else "started again from its checkpoint after"
            moments[f"{role} query failure #{n}: {what}: {event['error']}"] = event["at"]
    return ExperimentReport(kind="drill", job=pre["job"], experiment_id=pre["drill_id"], dag_run_id=dag_run_id,
                            verdict=verdict, reasons=reasons, hypothesis_before=hypothesis_before(pre),
                            hypothesis_after=hypothesis_after(pre, report), probes=probes(pre, fired),
                            timeline=timeline(moments), restored=restored or [],
                            measurements={k: report[k] for k in _MEASURED if report and k in report})
