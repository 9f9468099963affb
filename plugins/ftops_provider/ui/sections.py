"""The sections of a job's "Fault tolerance" page, as HTML fragments: plan history (chart, current plan,
topology, diff), drills (predicted against measured, over time) and recovery runs (a timeline per run).

Everything is rendered here on the server from the history store's rows; values from the store are
escaped, since job names, parameters and errors come from users and DAG runs.
"""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import Any
from urllib.parse import quote

from ft_core.topology.document import parse_topology
from ft_core.topology.task_graph import build_task_graph
from ftops_provider.ui.models import DrillOut, PlanDiff, RecoveryRunOut
from ftops_provider.ui.svg import BLUE, ORANGE, PURPLE, GanttRow, Series, gantt_chart, line_chart, series_chart, topology_graph

RUN_CHARTS = 5  # recovery runs drawn as timelines; older ones are listed only


# -- plan history ---------------------------------------------------------------------------------------

def history_section(job: str, plans: list[dict[str, Any]], topology: dict | None) -> str:
    chart = line_chart([(f"#{p['plan_id']}", p["objective"]) for p in plans],
                       title="Replication plans: predicted output fidelity over time", y_label="OF")
    body = [f"<h2 id='plans'>Plan history</h2><section id='history'>{chart}</section>"]
    if not plans:
        body.append("<p>No replication plan stored for this job yet.</p>")
        return "".join(body)
    current = plans[-1]
    body.append(_current_plan(current))
    body.append(_topology(topology, set(current["payload"].get("tasks", []))))
    if len(plans) > 1:
        body.append(_diff_form(job, plans))
    return "".join(body)


def _current_plan(plan: dict) -> str:
    status = "proven optimal" if plan["optimal"] else "heuristic"
    accuracy = plan.get("predicted_accuracy")
    predicted = "" if accuracy is None else f", predicted accuracy {accuracy:.3f}"
    return (f"<h3>Current plan #{plan['plan_id']}</h3><p>{escape(plan['algorithm'])}, OF {plan['objective']:.4f} ({status}){predicted}, "
            f"{len(plan['payload'].get('tasks', []))} replicas, stored {_when(plan['created_at'])}</p>")


def _topology(doc: dict | None, replicated: set[str]) -> str:
    if doc is None:
        return "<p>No topology stored.</p>"
    graph = build_task_graph(parse_topology(doc))
    ops = [(op, [graph.task_ids[i] for i in graph.tasks_of[op]]) for op in graph.operator_order]
    edges = [(graph.task_ids[u], graph.task_ids[v]) for v in range(graph.n) for s in graph.inputs[v] for u in s.upstream]
    return f"<h3>Topology (replicated tasks filled)</h3><section id='topology'>{topology_graph(ops, edges, replicated)}</section>"


def _diff_form(job: str, plans: list[dict[str, Any]]) -> str:
    """Pick any two plans to compare (a plain GET form: no script); the last two are preselected."""
    def options(selected: int) -> str:
        return "".join(f"<option value='{p['plan_id']}'{' selected' if p['plan_id'] == selected else ''}>"
                       f"#{p['plan_id']} ({p['objective']:.4f}, {_when(p['created_at'])})</option>" for p in reversed(plans))

    a, b = plans[-2]["plan_id"], plans[-1]["plan_id"]
    # The page is /ftops/jobs/<job>: a relative <job>/diff stays under wherever the plugin is mounted.
    return (f"<form id='diff-form' method='get' action='{escape(quote(job, safe=''))}/diff'><h3>Compare plans</h3>"
            f"<label>from <select name='a'>{options(a)}</select></label> "
            f"<label>to <select name='b'>{options(b)}</select></label> <button type='submit'>Compare</button></form>")


def diff_section(diff: PlanDiff) -> str:
    added = "".join(f"<li class='added'>+ {escape(t)}</li>" for t in diff.added_tasks)
    removed = "".join(f"<li class='removed'>- {escape(t)}</li>" for t in diff.removed_tasks)
    rows = [("objective", f"{diff.objective[0]:.4f}", f"{diff.objective[1]:.4f} ({diff.objective_change:+.4f})"),
            ("algorithm", escape(diff.algorithm[0]), escape(diff.algorithm[1]))]
    rows += [(escape(k), escape(_short(old)), escape(_short(new))) for k, (old, new) in diff.parameters_changed.items()]
    table = "".join(f"<tr><th>{k}</th><td>{old}</td><td>{new}</td></tr>" for k, old, new in rows)
    other = (f"<p>Other payload fields that differ: {escape(', '.join(diff.payload_keys_changed))}</p>"
             if diff.payload_keys_changed else "")
    return (f"<h2>Changes from plan #{diff.a} to #{diff.b} ({escape(diff.kind)})</h2>"
            f"<table id='diff-summary'><tr><th>plan</th><th>#{diff.a}</th><th>#{diff.b}</th></tr>{table}</table>"
            f"<p>{len(diff.added_tasks)} replicated tasks added, {len(diff.removed_tasks)} removed, {diff.kept_tasks} kept</p>"
            f"<ul id='diff'>{added}{removed}</ul>{other}")


# -- drills ---------------------------------------------------------------------------------------------

def drills_section(job: str, drills: list[DrillOut]) -> str:
    """Predicted output fidelity and predicted accuracy against measured tentative accuracy per drill, over
    time, and the rows."""
    head = "<h2 id='drills'>Drills</h2>"
    if not drills:
        return head + "<p>No drill recorded for this job yet (run the <code>ftops_chaos_drill</code> DAG).</p>"
    labels = [f"#{d.drill_id}" for d in drills]
    chart = series_chart(labels, [
        Series("predicted output fidelity", "predicted", BLUE, [d.predicted_output_fidelity for d in drills], dashed=True),
        Series("predicted accuracy", "predicted-accuracy", PURPLE, [d.predicted_accuracy for d in drills], dashed=True),
        Series("measured tentative accuracy", "measured", ORANGE, [d.tentative_accuracy for d in drills]),
    ], title="Drills: predicted vs measured accuracy", y_label="fraction")
    return head + f"<section id='drill-chart'>{chart}</section>" + _drill_table(job, drills)


def _drill_table(job: str, drills: list[DrillOut]) -> str:
    header = ("<tr><th>drill</th><th>started</th><th>finished</th><th>status</th><th>failure domain</th><th>predicted OF</th>"
              "<th>predicted accuracy</th><th>measured accuracy</th><th>windows</th><th>first tentative</th><th>caught up: forecast</th>"
              "<th>caught up</th><th>lost windows</th>"
              "<th>duplicated windows</th><th>equals reference</th></tr>")
    rows = "".join(
        f"<tr class='drill {escape(d.status)}'><td>{_report_link(job, 'drills', d.drill_id, d.has_report)}</td><td>{_when(d.started_at)}</td><td>{_when(d.finished_at)}</td>"
        f"<td>{_status(d.status, d.error)}</td><td>{escape(str(d.params.get('failure_domain', '-')))}</td>"
        f"<td>{_num(d.predicted_output_fidelity)}</td><td>{_num(d.predicted_accuracy)}</td><td>{_num(d.tentative_accuracy)}</td>"
        f"<td>{len(d.windows)}</td>"
        f"<td>{_secs(d.time_to_first_tentative_s)}</td><td>{_secs(d.predicted_caught_up_s)}</td><td>{_secs(d.time_to_caught_up_s)}</td>"
        f"<td>{_count(d.lost_windows)}</td><td>{_count(d.duplicated_windows)}</td><td>{_yes_no(d.output_equals_reference)}</td></tr>"
        for d in reversed(drills))
    return f"<table id='drill-rows'>{header}{rows}</table>"


# -- recovery runs --------------------------------------------------------------------------------------

def recovery_section(job: str, runs: list[RecoveryRunOut], now: datetime | None = None) -> str:
    """The newest runs as timelines of their stages (wait for capacity, restart) with the moments each
    query was available again; every run in a summary table, linked to its experiment report once it ended."""
    head = "<h2 id='recovery'>Recovery runs</h2>"
    if not runs:
        return head + "<p>No recovery run recorded for this job yet (run the <code>ftops_incremental_recovery</code> DAG).</p>"
    now = now or datetime.now(timezone.utc)
    charts = "".join(_run_block(r, now) for r in reversed(runs[-RUN_CHARTS:]))
    return head + charts + _runs_table(job, runs)


def run_timeline(run: RecoveryRunOut, now: datetime) -> tuple[list[GanttRow], float, str]:
    """The run's Gantt rows on one axis in seconds from its origin, the axis' span, and what the origin is.

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
    return rows + ([queries] if run.queries else []), span, what


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


def _run_block(run: RecoveryRunOut, now: datetime) -> str:
    rows, span, origin = run_timeline(run, now)
    domain = run.failure.get("domain")
    title = f"Recovery run #{run.run_id}: {run.status}" + (f", {domain} failed" if domain else "")
    chart = gantt_chart(rows, span_s=span, title=title)
    queries = "".join(f"<tr><td>{escape(q.query)}</td><td>{q.priority:g}</td><td>{_secs(q.recovered_s)}</td></tr>"
                      for q in run.queries)
    table = (f"<table class='queries'><tr><th>query</th><th>priority</th><th>available again after</th></tr>{queries}</table>"
             if queries else "")
    return (f"<section class='run' id='run-{run.run_id}'>{chart}<p class='caption'>Seconds from {origin}; started "
            f"{_when(run.started_at)}, DAG run {escape(run.dag_run_id or '-')}</p>{table}</section>")


def _runs_table(job: str, runs: list[RecoveryRunOut]) -> str:
    header = "<tr><th>run</th><th>started</th><th>finished</th><th>status</th><th>stages done</th><th>queries back</th></tr>"
    rows = "".join(
        f"<tr><td>{_report_link(job, 'recovery-runs', r.run_id, r.has_report)}</td><td>{_when(r.started_at)}</td><td>{_when(r.finished_at)}</td><td>{_status(r.status)}</td>"
        f"<td>{sum(st.status == 'done' for st in r.stages)} / {len(r.stages)}</td>"
        f"<td>{sum(q.recovered_s is not None for q in r.queries)} / {len(r.queries)}</td></tr>" for r in reversed(runs))
    return f"<table id='run-rows'>{header}{rows}</table>"


def _report_link(job: str, kind: str, experiment_id: int, has_report: bool) -> str:
    """``#id``, a link to the experiment's report page when it has one (written when the experiment ends;
    a run still going, or one stopped before it could write it, has none)."""
    if not has_report:
        return f"<span title='no experiment report (still running, or ended before writing one)'>#{experiment_id}</span>"
    return f"<a href='{escape(quote(job, safe=''))}/{kind}/{experiment_id}'>#{experiment_id}</a>"


# -- fleet recoveries ------------------------------------------------------------------------------------

def fleet_recovery_section(rows: list[dict[str, Any]]) -> str:
    """The job in its newest fleet recoveries (``ftops_fleet_recovery``): its stage, when it restarted, and its time
    back as planned, as predicted at its restart and as measured, all in seconds after the failure."""
    head = "<h2 id='fleet-recovery'>Fleet recoveries</h2>"
    if not rows:
        return head + "<p>Not in a fleet recovery yet (the <code>ftops_fleet_recovery</code> DAG restarts the jobs a " \
                      "lost domain took down, in priority order as capacity returns).</p>"
    body = "".join(
        f"<tr><td>#{r['run_id']}</td><td>{_when(r['failed_at'])}</td><td>{escape(r['policy'])}</td>"
        f"<td>{_status(r['status'])}</td><td>{r['priority']:g}</td><td>{_count(r['stage'])}</td>"
        f"<td>{_secs(None if r['restarted_at'] is None else (r['restarted_at'] - r['failed_at']).total_seconds())}</td>"
        f"<td>{_secs(r['planned_back_s'])}</td><td>{_secs(r['predicted_back_s'])}</td><td>{_secs(r['measured_back_s'])}"
        f"</td><td>{_miss(r['predicted_back_s'], r['measured_back_s'])}</td></tr>" for r in rows)
    return (head + "<p class='caption'>Seconds after the failure. Predicted: at its restart, from the actual start. "
            "Miss: measured against predicted.</p><table id='fleet-recoveries'><tr><th>run</th><th>failed at</th>"
            "<th>policy</th><th>status</th><th>priority</th><th>stage</th><th>restarted</th><th>planned back</th>"
            f"<th>predicted back</th><th>measured back</th><th>miss</th></tr>{body}</table>")


def _miss(predicted: float | None, measured: float | None) -> str:
    if predicted is None or measured is None or predicted <= 0:
        return "-"
    return f"{(measured - predicted) / predicted:+.0%}"


# -- cells ----------------------------------------------------------------------------------------------

def _when(t: datetime | None) -> str:
    return "-" if t is None else f"{t.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} s"


def _count(v: int | None) -> str:
    return "-" if v is None else str(v)


def _yes_no(v: bool | None) -> str:
    return "-" if v is None else ("<span class='ok'>yes</span>" if v else "<span class='bad'>no</span>")


def _status(status: str, error: str | None = None) -> str:
    css = {"passed": "ok", "succeeded": "ok", "done": "ok", "failed": "bad", "aborted": "bad"}.get(status, "")
    tip = f" title='{escape(error, quote=True)}'" if error else ""
    return f"<span class='{css}'{tip}>{escape(status)}</span>"


def _short(v: Any, limit: int = 80) -> str:
    text = str(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"
