"""The sections of a job's "Fault tolerance" page: plan history (chart, current plan, topology, diff), drills
(predicted against measured, over time), recovery runs (a timeline per run) and fleet recoveries.

Each section gathers its values and charts here and is written by its template (``ui/templates``, autoescaped: job
names, parameters and errors come from users and DAG runs).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ft_core.topology.document import parse_topology
from ft_core.topology.task_graph import build_task_graph
from ftops_provider.ui.charts import BLUE, ORANGE, PURPLE, GanttRow, Series, fraction_chart, stages_chart, topology_chart
from ftops_provider.ui.models import DrillOut, PlanDiff, RecoveryRunOut
from ftops_provider.ui.templates import render

RUN_CHARTS = 5  # recovery runs drawn as timelines; older ones are listed only


# -- plan history ---------------------------------------------------------------------------------------

def history_section(job: str, plans: list[dict[str, Any]], topology: dict | None) -> str:
    chart = fraction_chart("history", "Replication plans: predicted output fidelity over time",
                           [f"#{p['plan_id']}" for p in plans],
                           [Series("predicted output fidelity", BLUE, [p["objective"] for p in plans])], y_label="OF",
                           height=220)
    drawn = None
    if plans and topology is not None:
        drawn = _topology(topology, set(plans[-1]["payload"].get("tasks", [])))
    return render("history.html", job=job, plans=plans, chart=chart, topology=drawn)


def _topology(doc: dict, replicated: set[str]):
    graph = build_task_graph(parse_topology(doc))
    ops = [(op, [graph.task_ids[i] for i in graph.tasks_of[op]]) for op in graph.operator_order]
    edges = [(graph.task_ids[u], graph.task_ids[v]) for v in range(graph.n) for s in graph.inputs[v] for u in s.upstream]
    return topology_chart("topology", "Topology: tasks by operator, replicated tasks filled", ops, edges, replicated)


def diff_section(diff: PlanDiff) -> str:
    return render("diff.html", diff=diff)


# -- drills ---------------------------------------------------------------------------------------------

def drills_section(job: str, drills: list[DrillOut]) -> str:
    """Predicted output fidelity and predicted accuracy against measured tentative accuracy per drill, over
    time, and the rows."""
    chart = fraction_chart("drills", "Drills: predicted vs measured accuracy", [f"#{d.drill_id}" for d in drills], [
        Series("predicted output fidelity", BLUE, [d.predicted_output_fidelity for d in drills], dashed=True),
        Series("predicted accuracy", PURPLE, [d.predicted_accuracy for d in drills], dashed=True),
        Series("measured tentative accuracy", ORANGE, [d.tentative_accuracy for d in drills]),
    ], y_label="fraction")
    return render("drills.html", job=job, drills=drills, chart=chart)


# -- recovery runs --------------------------------------------------------------------------------------

def recovery_section(job: str, runs: list[RecoveryRunOut], now: datetime | None = None) -> str:
    """The newest runs as timelines of their stages (wait for capacity, restart) with the moments each
    query was available again; every run in a summary table, linked to its experiment report once it ended."""
    now = now or datetime.now(timezone.utc)
    timelines = []
    for run in reversed(runs[-RUN_CHARTS:]):
        rows, origin = run_timeline(run, now)
        domain = run.failure.get("domain")
        title = f"Recovery run #{run.run_id}: {run.status}" + (f", {domain} failed" if domain else "")
        timelines.append((run, stages_chart(f"run-{run.run_id}", title, rows, origin=origin), origin))
    return render("recovery.html", job=job, runs=runs, timelines=timelines)


def run_timeline(run: RecoveryRunOut, now: datetime) -> tuple[list[GanttRow], str]:
    """The run's Gantt rows on one axis in seconds from its origin, and what the origin is (a query not available
    again is marked a little past the run's last moment).

    The origin is the failure (``failure["time"]``, Unix seconds) when the run records it, because query
    recovery times count from the failure; otherwise the run's start. Open intervals (a stage still
    waiting or restarting) extend to now for a running run, to its finish otherwise.
    """
    failure_time = run.failure.get("time")
    from_failure = isinstance(failure_time, (int, float)) and not isinstance(failure_time, bool)
    origin = datetime.fromtimestamp(failure_time, tz=timezone.utc) if from_failure else run.started_at
    end = now if run.status == "running" or run.finished_at is None else run.finished_at

    def s(t: datetime) -> float:
        return (t - origin).total_seconds()

    rows = [_stage_row(stage, s, s(end)) for stage in run.stages]
    recovered = [q for q in run.queries if q.recovered_s is not None]
    times = [s(end)] + [q.recovered_s for q in recovered]
    times += [s(t) for st in run.stages for t in (st.waiting_at, st.started_at, st.finished_at) if t is not None]
    span = max(times + [1.0]) * 1.05
    queries = GanttRow("queries", points=[(q.recovered_s, "query", f"{q.query} available again after {q.recovered_s:g} s "
                                                                 f"(priority {q.priority:g})") for q in recovered])
    queries.points += [(span, "unrecovered", f"{q.query}: not available again") for q in run.queries if q.recovered_s is None]
    what = "the failure" if from_failure else "the run's start"
    return rows + ([queries] if run.queries else []), what


def _stage_row(stage, s, end_s: float) -> GanttRow:
    row = GanttRow(f"stage {stage.stage_no}" + ("" if stage.status != "pending" else " (pending)"))
    units = ", ".join(stage.partitions)
    if stage.waiting_at is not None:
        until = stage.started_at or stage.finished_at
        row.bars.append((s(stage.waiting_at), s(until) if until else end_s, "waiting",
                         f"stage {stage.stage_no} waited for capacity {stage.capacity:g}"))
    if stage.started_at is not None:
        kind = stage.status if stage.status in ("done", "failed") else "started"
        row.bars.append((s(stage.started_at), s(stage.finished_at) if stage.finished_at else end_s, kind,
                         f"stage {stage.stage_no} {kind}: {units}"))
    elif stage.finished_at is not None:  # recorded done without a start time: a mark at its finish
        row.points.append((s(stage.finished_at), "done" if stage.status == "done" else "failed",
                           f"stage {stage.stage_no} {stage.status}: {units}"))
    return row


# -- fleet recoveries ------------------------------------------------------------------------------------

def fleet_recovery_section(rows: list[dict[str, Any]]) -> str:
    """The job in its newest fleet recoveries (``ftops_fleet_recovery``): its stage, when it restarted, and its time
    back as planned, as predicted at its restart and as measured, all in seconds after the failure."""
    return render("fleet_recovery.html", rows=rows)
