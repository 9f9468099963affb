"""A soak of chaos drills: ``ftops_chaos_drill`` run again and again on one job through Airflow (issue 16).

One drill proves little about safe operations; twenty in a row show whether every drill leaves the
job as it found it: the lease released, the killed domain's capacity replaced, the primary steady
again, and no output window lost or duplicated. The soak triggers the DAG on the local stack (its
Airflow, its Spark clusters, its running sample job), alternating the failure domain, and after each
run reads what the drill recorded in the history store and waits for the job to be steady again
(the next drill's preflight would refuse an unsteady job anyway: waiting here keeps the two apart).

A drill *passes* when its DAG run succeeded, the history store records it ``passed`` with zero lost
and zero duplicated windows and output equal to the reference, and the job is steady afterwards.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from ft_core.errors import ExternalError, InputError
from ft_core.recovery.drill_catch_up import FORECAST_WITHIN, forecast_error
from spark_jobs.drills.probes import STEADY_LAG_S, wait_steady

DrillCount = Annotated[int, Field(ge=1, le=1000)]


class SoakDrill(BaseModel):
    """One drill of the soak, as Airflow ran it and the history store recorded it."""

    index: int
    domain: str = Field(description="the failure domain asked for ('auto': where the primary's executors run)")
    failed_domain: str | None = Field(default=None, description="the domain the drill failed (its record's)")
    dag_run_id: str
    dag_state: str
    drill_id: int | None = None
    status: str | None = Field(default=None, description="the drill's record: passed, failed, aborted")
    lost_windows: int | None = None
    duplicated_windows: int | None = None
    output_equals_reference: bool | None = None
    tentative_accuracy: float | None = None
    time_to_first_tentative_s: float | None = None
    time_to_caught_up_s: float | None = None
    predicted_caught_up_s: float | None = Field(default=None, description="the drill's forecast, made before its fault")
    steady_after_s: float | None = Field(default=None, description="seconds after the run until the job was steady "
                                         "again (None: not steady within the deadline)")
    elapsed_s: float
    error: str | None = None
    capacity_after: dict[str, int] | None = Field(default=None, description="live primary workers per failure domain "
                                                  "once the drill ended (None: a soak from before it was recorded)")
    capacity_expected: dict[str, int] | None = Field(default=None, description="the workers per domain before the first "
                                                     "drill: what every drill must leave")

    @property
    def domains_kept(self) -> bool:
        return self.capacity_expected is None or self.capacity_after == self.capacity_expected

    @property
    def forecast_error(self) -> float | None:
        """The forecast's error as a fraction of the measured time caught up (None: one of them missing)."""
        return forecast_error(self.predicted_caught_up_s, self.time_to_caught_up_s)

    @property
    def passed(self) -> bool:
        return (self.dag_state == "success" and self.status == "passed" and self.lost_windows == 0
                and self.duplicated_windows == 0 and bool(self.output_equals_reference) and self.steady_after_s is not None
                and self.domains_kept)


class SoakResult(BaseModel):
    command: str
    job: str
    drills: list[SoakDrill]
    elapsed_s: float
    started_at: float = Field(default_factory=time.time, description="epoch seconds")
    load_at_start: float | None = Field(default=None, description="the machine's 1-minute load average then")

    def count(self, status: str) -> int:
        return sum(d.status == status for d in self.drills)

    @property
    def lost(self) -> int:
        return sum(d.lost_windows or 0 for d in self.drills)

    @property
    def duplicated(self) -> int:
        return sum(d.duplicated_windows or 0 for d in self.drills)

    @property
    def target_met(self) -> bool:
        return bool(self.drills) and all(d.passed for d in self.drills)

    def forecasts_within(self, share: float = FORECAST_WITHIN) -> tuple[int, int]:
        """(drills whose catch-up forecast was within ``share`` of the measurement, drills with both)."""
        errors = [d.forecast_error for d in self.drills if d.forecast_error is not None]
        return sum(abs(e) <= share for e in errors), len(errors)


def soak_domains(domains: Sequence[str], drills: int) -> list[str]:
    """The failure domain of each drill: the given domains in turn.

    >>> soak_domains(["rack-a", "rack-b"], 5)
    ['rack-a', 'rack-b', 'rack-a', 'rack-b', 'rack-a']
    """
    return [domains[i % len(domains)] for i in range(drills)]


def run_soak(stack, *, job: str, drills: int, domains: Sequence[str], replacement_delay_s: float, command: str,
             steady_timeout_s: float = 600, progress: Callable[[str], None] = lambda _m: None,
             step: Callable[[str], None] | None = None,
             on_drill: Callable[[SoakResult], None] = lambda _r: None) -> SoakResult:
    """Run ``drills`` chaos drills of ``job`` in a row on ``stack`` (a started
    :class:`~ftops_provider.local_stack.LocalStack`), taking ``domains`` in turn. ``auto`` fails the domain
    where the primary's executors run: each drill moves them (the running executors are lost, new ones
    start on the surviving domain's workers), so ``auto`` alternates the domain by itself, and the report
    shows which domain each drill failed. ``step`` says a drill starts (default ``progress``); ``on_drill``
    gets the soak so far after every drill (the CLI rewrites its report, so an interrupted soak keeps its
    table)."""
    started, load, done = time.time(), os.getloadavg()[0], []

    def so_far() -> SoakResult:
        return SoakResult(command=command, job=job, drills=list(done), elapsed_s=time.time() - started,
                          started_at=started, load_at_start=load)

    _ensure_plan(stack, job, progress)
    first = _capacity(stack, job)
    progress(f"workers per failure domain before the first drill: {_shown(first)}")
    for index, domain in enumerate(soak_domains(domains, drills), start=1):
        (step or progress)(f"drill {index} of {drills}: failure domain {domain}")
        try:
            drill = _one_drill(stack, job, index, domain, replacement_delay_s, steady_timeout_s)
            done.append(drill.model_copy(update={"capacity_after": _capacity(stack, job), "capacity_expected": first}))
        except ExternalError as exc:  # a run that never finishes: the next trigger would only queue behind it
            done.append(SoakDrill(index=index, domain=domain, dag_run_id="-", dag_state="unfinished",
                                  elapsed_s=time.time() - started, error=str(exc)))
            progress(f"drill {index}: {exc}; the soak stops here")
            break
        last = done[-1]
        on_drill(so_far())
        progress(f"drill {index}: DAG run {last.dag_state}, drill {last.status or '-'}, lost/duplicated windows "
                 f"{last.lost_windows}/{last.duplicated_windows}, steady again after "
                 f"{'-' if last.steady_after_s is None else f'{last.steady_after_s:.0f} s'}")
    return so_far()


def _capacity(stack, job: str) -> dict[str, int]:
    """Live primary workers per failure domain of the cluster ``job`` runs on (the cluster seam)."""
    from ftops_provider.local_stack import SAMPLE_JOBS
    from spark_jobs.cluster.seam import cluster_of

    return cluster_of(stack.deployment(next(j for j in SAMPLE_JOBS if j.name == job))).capacity()


def _shown(capacity: dict[str, int] | None) -> str:
    return "-" if capacity is None else ", ".join(f"{d} {n}" for d, n in sorted(capacity.items())) or "none"


def _ensure_plan(stack, job: str, progress: Callable[[str], None]) -> None:
    """A drill needs the job's replication plan and its running replica: plan once if there is none."""
    with stack.store() as store:
        plan = store.current_plan(job, "replication")
    if plan is None:
        progress(f"{job} has no replication plan yet: running ftops_profile_and_plan first")
        run = stack.trigger("ftops_profile_and_plan", {})
        if run["state"] != "success":
            raise ExternalError(f"ftops_profile_and_plan ended {run['state']} (run {run['dag_run_id']}): no plan to drill")


def _one_drill(stack, job: str, index: int, domain: str, replacement_delay_s: float, steady_timeout_s: float) -> SoakDrill:
    t0 = time.time()
    run = stack.trigger("ftops_chaos_drill", {"job": job, "failure_domain": domain, "replacement_delay_s": replacement_delay_s})
    with stack.store() as store:
        recent = store.drills(job, limit=20)
    record = next((d for d in reversed(recent) if d["dag_run_id"] == run["dag_run_id"]), None)
    steady = _time_to_steady(stack, job, steady_timeout_s)
    if record:
        fields = {k: record[k] for k in ("drill_id", "status", "lost_windows", "duplicated_windows", "output_equals_reference",
                                         "tentative_accuracy", "time_to_first_tentative_s", "time_to_caught_up_s",
                                         "predicted_caught_up_s", "error")}
        fields["failed_domain"] = (record["params"] or {}).get("domain")
    else:
        failed = sorted(t for t, ti in stack.airflow.task_instances("ftops_chaos_drill", run["dag_run_id"]).items()
                        if ti.get("state") == "failed")
        fields = {"error": f"the DAG run recorded no drill (failed: {', '.join(failed) or 'no task'}; see its task logs)"}
    return SoakDrill(index=index, domain=domain, dag_run_id=run["dag_run_id"], dag_state=run["state"],
                     steady_after_s=steady, elapsed_s=time.time() - t0, **fields)


def _time_to_steady(stack, job: str, timeout_s: float) -> float | None:
    """Seconds until the job passes the drill preflight's own steady-state check again (None: not within
    ``timeout_s``)."""
    from ftops_provider.local_stack import SAMPLE_JOBS  # the stack's modules load only when a soak runs

    dep, t0 = stack.deployment(next(j for j in SAMPLE_JOBS if j.name == job)), time.time()
    with stack.store() as store:
        plan = store.running_replica_plan(job)
    replica = dep.replica_output(plan["plan_id"]) if plan else None
    try:
        wait_steady(dep.pipeline, dep.params, dep.input, dep.primary_output, STEADY_LAG_S, replica, wait_s=timeout_s,
                    interval_s=2)
    except InputError:
        return None
    return time.time() - t0


def soak_report(result: SoakResult, table: Path | None = None, planned: int | None = None) -> str:
    """The soak as markdown: the command, a row per drill and the verdict against the target; with
    ``table`` (the report's path) its plot is written beside it and linked. ``planned``: the drills asked
    for, when the soak is still running (or was stopped) before all of them ran."""
    from ft_core.cli.output import format_table

    def num(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    rows = [[d.index, d.domain if d.failed_domain in (None, d.domain) else f"{d.domain}: {d.failed_domain}", d.dag_state, d.status or "-", "-" if d.lost_windows is None else d.lost_windows,
             "-" if d.duplicated_windows is None else d.duplicated_windows,
             "-" if d.output_equals_reference is None else ("yes" if d.output_equals_reference else "no"),
             num(d.tentative_accuracy, 3), num(d.time_to_first_tentative_s), num(d.predicted_caught_up_s),
             num(d.time_to_caught_up_s), "-" if d.forecast_error is None else f"{d.forecast_error:+.0%}",
             num(d.steady_after_s, 0), _shown(d.capacity_after), num(d.elapsed_s, 0), "yes" if d.passed else "no"]
            for d in result.drills]
    rendered = format_table(["drill", "domain", "DAG run", "drill record", "lost", "duplicated", "output = reference",
                          "tentative accuracy", "first tentative (s)", "caught up: forecast (s)", "caught up (s)",
                          "forecast error", "steady after (s)",
                          "workers per domain after", "took (s)", "pass"], rows)
    passed = sum(d.passed for d in result.drills)
    errors = [f"- drill {d.index}: {d.error}" for d in result.drills if d.error]
    return "\n".join([
        f"# Chaos-drill soak: {len(result.drills)} drills of job {result.job} in a row through ftops_chaos_drill", "",
        f"Produced by `{result.command}` in {result.elapsed_s / 60:.1f} min, from "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(result.started_at))} UTC; {os.cpu_count()} cores"
        + ("" if result.load_at_start is None else f", load average at the start {result.load_at_start:.1f}")
        + " (the machine is shared: times are wall-clock).", "",
        "A drill passes when its DAG run succeeded, its record says passed with 0 lost and 0 duplicated windows "
        "and output equal to the reference, the job is steady again (primary and replica within "
        f"{STEADY_LAG_S:.0f} s of their input) afterwards, and the primary's live workers per failure domain are "
        "those before the first drill" + ("" if not result.drills or result.drills[0].capacity_expected is None
                                          else f" ({_shown(result.drills[0].capacity_expected)})") + ".", "",
        "```", rendered, "```", "",
        *([_times_plot(result, table), ""] if table is not None and result.drills else []),
        f"**{passed} of {len(result.drills)} passed**; {result.count('aborted')} aborted, {result.count('failed')} failed; "
        f"{result.lost} lost and {result.duplicated} duplicated windows in all. "
        + (f"Target (every drill passes, 0 lost, 0 duplicated): {'met' if result.target_met else 'not met'}."
         if planned is None or len(result.drills) >= planned else
         f"**Unfinished: {len(result.drills)} of the {planned} drills asked for ran** (the soak is still running or was stopped)."),
        *(["", _forecast_line(result)] if result.forecasts_within()[1] else []),
        *([""] + errors if errors else []), ""])


def _forecast_line(result: SoakResult) -> str:
    within, forecast = result.forecasts_within()
    errors = [abs(d.forecast_error) for d in result.drills if d.forecast_error is not None]
    return (f"Catch-up forecasts (made before each fault, spark_jobs/drills/catch_up.py): **{within} of {forecast} within "
            f"{FORECAST_WITHIN:.0%}** of the measured time caught up (median error {statistics.median(errors):.0%}); "
            f"issue 38's target: at least 90 % of the drills.")


def _times_plot(result: SoakResult, table: Path) -> str:
    """Per drill: seconds to the first tentative output and until the primary caught up (a drill that
    measured nothing has no bars), so a drift over the soak shows at a glance."""
    from ft_core.bench.plots import grouped_bars, markdown_image, new_figure, save_next_to

    fig, ax = new_figure(f"Soak: {len(result.drills)} drills of {result.job} in a row", "drill (failure domain)", "seconds")
    grouped_bars(ax, [f"{d.index} ({d.failed_domain or d.domain})" for d in result.drills],
                 {"first tentative output": [d.time_to_first_tentative_s for d in result.drills],
                  "primary caught up": [d.time_to_caught_up_s for d in result.drills]})
    return markdown_image(save_next_to(fig, table, "times"), "seconds to the first tentative output and to caught up, per drill")
