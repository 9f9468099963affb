"""A live drill's experiment report (:class:`ft_core.store.experiments.ExperimentReport`), from the drill's state
(:class:`spark_jobs.drills.engine.DrillState`): the steady-state hypothesis before and after, the abort probes,
the timeline of the failure and the recovery, the failure domains before and after, the verdict.

    # drill_experiment(state, verdict="passed", reasons=[])
"""

from __future__ import annotations

import time

from ft_core.store.experiments import Check, ExperimentReport, Probe, timeline

_MEASURED = ("predicted_output_fidelity", "predicted_accuracy", "tentative_accuracy", "time_to_first_tentative_s",
             "predicted_caught_up_s", "time_to_caught_up_s", "caught_up_error", "lost_windows", "duplicated_windows", "output_equals_reference",
             "exactly_once_held", "peak_lag_s", "throughput_dip", "records_reprocessed")  # the last four: attached jobs


def hypothesis_before(state) -> list[Check]:
    h = state.hypothesis
    if h is None:  # the drill ended before its steady state was confirmed
        return [Check(name="primary keeps up", expected=f"output within {state.settings.steady_lag_s:.0f} s of the input",
                      held=None)]
    checks = [Check(name="primary running", expected="the primary application runs", observed="running", held=True),
              Check(name="primary keeps up", expected=f"output within {h.bound_s:.0f} s of the input",
                    observed=f"{h.lag_s:.1f} s behind", held=h.lag_s <= h.bound_s)]
    if state.ctx.replica_output:
        checks.append(Check(name="replica running", expected="the plan's replica runs on the standby pool",
                            observed="running", held=True))
    if h.replica_lag_s is not None:
        checks.append(Check(name="replica keeps up", expected=f"output within {h.bound_s:.0f} s of the input",
                            observed=f"{h.replica_lag_s:.1f} s behind", held=h.replica_lag_s <= h.bound_s))
    return checks


def hypothesis_after(state) -> list[Check]:
    report = state.report
    if report is None:
        return [Check(name="back to steady state", expected="the primary caught up and keeps up", held=None)]
    after = report.get("steady_after") or {}
    caught, forecast = report.get("time_to_caught_up_s"), report.get("predicted_caught_up_s")
    expected = "the primary reached the input's watermark at the failure's end" + (
        "" if forecast is None else f" (forecast: after {forecast:.0f} s)")
    checks = [Check(name="caught up", expected=expected,
                    observed=None if caught is None else f"after {caught:.1f} s", held=caught is not None)]
    if report.get("kind") == "attached":  # no reference job: what its own checkpoints say
        failed = sorted({c for q in report.get("exactly_once", {}).values() for c in q["failed"]})
        checks.append(Check(name="exactly once", expected="every micro-batch committed once and in order, nothing "
                            "skipped (each query's checkpoint)", observed="held" if report.get("exactly_once_held")
                            else f"failed: {', '.join(failed) or 'no checkpoint recorded'}",
                            held=bool(report.get("exactly_once_held"))))
    else:
        checks.append(Check(name="output exact", expected="no window lost or duplicated (equal to the batch reference)",
                            observed=f"{report.get('lost_windows')} lost, {report.get('duplicated_windows')} duplicated",
                            held=bool(report.get("output_equals_reference"))))
    if after:
        waited = f" (after waiting {after['waited_s']:.0f} s)" if after.get("waited_s") else ""
        checks.append(Check(name="primary keeps up", expected=f"output within {after['bound_s']:.0f} s of the input",
                            observed=f"{after['lag_s']:.1f} s behind{waited}", held=after["lag_s"] <= after["bound_s"]))
    if state.capacity_after is not None:
        checks.append(Check(name="failure domains as before", expected=_domains(state.capacity_before),
                            observed=_domains(state.capacity_after), held=state.capacity_after == state.capacity_before))
    return checks


def _domains(capacity: dict[str, int]) -> str:
    return ", ".join(f"{d}: {n}" for d, n in sorted(capacity.items())) or "no capacity"


def probes(state, fired: tuple[str, str] | None) -> list[Probe]:
    out = [Probe(name=name, bound=bound, fired=fired is not None and fired[0] == name,
                 reason=fired[1] if fired is not None and fired[0] == name else None)
           for name, bound in state.probes.bounds().items()]
    if fired is not None and fired[0] not in state.probes.bounds():  # the halt, or the lease lost
        bound = {"primary_orphaned": "the primary's master keeps listing it"}.get(fired[0], "no halt, the lease held")
        out.append(Probe(name=fired[0], bound=bound, fired=True, reason=fired[1]))
    return out


def drill_experiment(state, *, verdict: str, reasons: list[str], fired: tuple[str, str] | None = None,
                     restored: list[str] | None = None,
                     query_failures: dict[str, list[dict]] | None = None) -> ExperimentReport:
    """The report; ``query_failures`` (:func:`spark_jobs.drills.live.query_failures`, default the verification
    report's) go on the timeline, so an aborted or failed drill shows them too."""
    ctx, report = state.ctx, state.report or {}
    since = (lambda s: None if s is None or ctx.t_fail is None else ctx.t_fail + s)
    moments = {"steady state checked": state.hypothesis.checked_at if state.hypothesis else None,
               "failure injected": ctx.t_fail,
               "first tentative output": since(report.get("time_to_first_tentative_s")),
               "capacity given back": ctx.t_capacity,
               "primary caught up": since(report.get("time_to_caught_up_s")),
               f"{verdict}": time.time()}
    failures = query_failures if query_failures is not None else report.get("query_failures") or {}
    for role, events in failures.items():
        for n, event in enumerate(events, start=1):
            what = "failed and was not started again" if event.get("final") else "started again from its checkpoint after"
            moments[f"{role} query failure #{n}: {what}: {event['error']}"] = event["at"]
    return ExperimentReport(kind="drill", job=state.job, experiment_id=state.drill_id, dag_run_id=state.dag_run_id,
                            verdict=verdict, reasons=reasons, hypothesis_before=hypothesis_before(state),
                            hypothesis_after=hypothesis_after(state), probes=probes(state, fired),
                            timeline=timeline(moments), restored=restored or [],
                            measurements={k: report[k] for k in _MEASURED if k in report})
