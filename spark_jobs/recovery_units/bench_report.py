"""The report of ``ftops bench recovery-runtime`` (:mod:`.bench`): the targets of issue 15, the measured and
predicted seconds until each query is back per strategy, and the plot beside the table."""

from __future__ import annotations

import statistics
from pathlib import Path

from spark_jobs.recovery_units.bench import RecoveryBenchResult, StrategyRun, median_of_runs


def targets(result: RecoveryBenchResult) -> list[str]:
    """The issue's targets, assessed: the top-priority query no later under incremental than blocking, and
    strictly earlier when the first capacity step suffices for it; zero lost or duplicated output."""
    summary = result.summary()["strategies"]
    inc, blk = summary.get("incremental"), summary.get("blocking")
    lines = []
    if inc and blk:
        runs = [r for r in result.runs if r.strategy == "incremental" and r.error is None]
        top = _top_query(runs[0]) if runs else None
        first_step = bool(runs) and all(r.planned_stage.get(top) == 1 for r in runs)
        t_inc, t_blk = inc["query_recovered_s"].get(top), blk["query_recovered_s"].get(top)
        ok = t_inc is not None and t_blk is not None and (t_inc < t_blk if first_step else t_inc <= t_blk)
        lines.append(f"- top-priority query {top}: incremental {t_inc} s, blocking {t_blk} s; the first capacity "
                     f"step {'suffices' if first_step else 'does not suffice'} for it, so the target is "
                     f"{'strictly earlier' if first_step else 'no later'}: {'met' if ok else 'NOT met'}")
    lines += _catch_up_targets(result)
    lost = sum(r.lost_rows for r in result.runs)
    dup = sum(r.duplicated_rows for r in result.runs)
    failed = [r for r in result.runs if r.error]
    lines.append(f"- lost rows {lost}, duplicated rows {dup} over {len(result.runs) - len(failed)} runs: "
                 f"{'met' if lost == dup == 0 and not failed else 'NOT met'}"
                 + (f"; {len(failed)} runs failed: " + "; ".join(f"{r.strategy}: {r.error}" for r in failed) if failed else ""))
    return lines


def prediction_errors(result: RecoveryBenchResult) -> dict[str, dict[str, float | None]]:
    """Per strategy and query, |predicted - measured| / measured of every run that measured both (median
    over the repetitions)."""
    out: dict[str, dict[str, float | None]] = {}
    for strategy in result.config.strategies:
        runs = [r for r in result.runs if r.strategy == strategy and r.error is None and r.predicted_s]
        queries = sorted({q for r in runs for q in r.query_recovered_s})
        errors = {q: [abs(r.predicted_s[q] - r.query_recovered_s[q]) / r.query_recovered_s[q] for r in runs
                      if r.predicted_s.get(q) is not None and r.query_recovered_s.get(q)] for q in queries}
        out[strategy] = {q: round(statistics.median(e), 3) if e else None for q, e in errors.items()}
    return out


def _catch_up_targets(result: RecoveryBenchResult) -> list[str]:
    """Issue 15's targets: the catch-up policy has the best priority-weighted mean, and its predicted per-query
    times are within 25 % of the measured ones."""
    summary = result.summary()["strategies"]
    if "catch-up" not in summary or not summary["catch-up"]["runs"]:
        return []
    means = {name: s["weighted_mean_recovery_s"] for name, s in summary.items() if s["runs"]}
    mine = means["catch-up"]
    best = mine is not None and all(v is None or mine <= v for v in means.values())
    errors = [e for e in prediction_errors(result)["catch-up"].values()]
    within = bool(errors) and all(e is not None and e <= 0.25 for e in errors)
    worst = max((e for e in errors if e is not None), default=None)
    return [f"- catch-up's priority-weighted mean {mine} s against " + ", ".join(
                f"{name} {v} s" for name, v in means.items() if name != "catch-up") + f": {'best, met' if best else 'NOT the best'}",
            f"- catch-up's predicted time back within 25 % of the measured one for every query: worst error "
            f"{'-' if worst is None else f'{worst:.0%}'}: {'met' if within else 'NOT met'}"]


def _top_query(run: StrategyRun) -> str | None:
    """The highest-priority failed query the incremental plan brings back first (ties: name order)."""
    if not run.priority:
        return None
    best = max(run.priority.values())
    tops = [q for q, v in run.priority.items() if v == best]
    return min(tops, key=lambda q: (run.planned_stage.get(q) or 99, q))


def render(result: RecoveryBenchResult, out: Path | None = None) -> str:
    """The markdown report; with ``out`` (the report's path) the plot is saved beside it and linked."""
    summary = result.summary()
    queries = sorted({q for s in summary["strategies"].values() for q in s["query_recovered_s"]})
    c, sc = result.config, result.config.scenario
    priority = next((r.priority for r in result.runs if r.priority), {})
    nodes = "; ".join(f"{a} = {' '.join(units)} in `{sc.domains[a]}`" for a, units in sc.apps.items())
    lines = ["# Incremental recovery on Spark: time back to normal per query (paper 003, §7.2)", "",
             f"Produced by `{result.command}` on the project's 2-core machine; median of {c.repetitions} run(s) per "
             "strategy, each on a fresh local standalone cluster.", "",
             f"Recovery units of pipeline `{sc.pipeline}` (`spark_jobs/recovery_units/`); the failed queries and their "
             "priorities: " + ", ".join(f"`{q}` {v:g}" for q, v in sorted(priority.items())) + f". One-core nodes: {nodes}; "
             f"`{sc.fail}` fails; {c.arrivals} one-core nodes arrive {c.first_arrival_s:.0f} s after the failure "
             f"and then every {c.arrival_interval_s:.0f} s; every unit costs {c.cost_per_unit} of a node (80 % cap: "
             f"{int(0.8 / c.cost_per_unit + 1e-9)} units per node). A query is back when its relative latency (event-time "
             "lag over its pre-failure median) stays below 1.2. Seconds from the failure:", "",
             "| strategy | " + " | ".join(queries) + " | priority-weighted mean |",
             "|---|" + "---|" * (len(queries) + 1)]
    for name, s in summary["strategies"].items():
        cells = [str(s["query_recovered_s"].get(q, "-")) for q in queries]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {s['weighted_mean_recovery_s']} |")
    lines += _predicted_table(result, queries)
    lines += _breakdown_table(result, "catch-up")
    if out is not None and queries:
        from ft_core.bench.plots import markdown_image  # matplotlib: only when a report is written

        lines += ["", markdown_image(recovery_plot(result, out), "seconds until each query is back, per strategy")]
    lines += ["", "Stage at which each schedule recovers the queries (plan): " + "; ".join(
        f"{r.strategy}: " + ", ".join(f"{q} {st}" for q, st in sorted(r.planned_stage.items()))
        for r in result.runs if r.repetition == 1 and r.error is None), "", "## Targets", "", *targets(result), "",
        f"Pipeline parameters: `{' '.join(sc.params)}`; trigger {c.trigger_s} s.", ""]
    return "\n".join(lines)


def _predicted_table(result: RecoveryBenchResult, queries: list[str]) -> list[str]:
    """Predicted (catch-up model, from the rates measured before the failure) against measured seconds per
    query, first repetition, and the median relative error over the repetitions."""
    first = [r for r in result.runs if r.repetition == 1 and r.error is None and r.predicted_s]
    if not first:
        return []
    errors = prediction_errors(result)
    rehearsal = ("; each unit's restart delay from the rehearsal, the failing domain's applications killed "
                 "together and restarted from their checkpoints once before the failure"
                 if result.config.rehearse_restart else "; each unit's restart delay from its first start (no rehearsal)")
    lines = ["", "Predicted by the catch-up model (`ft_core.recovery.catch_up`, rates measured before the failure: "
             f"`spark_jobs/recovery_units/rates.py`{rehearsal}) against measured, seconds (repetition 1), and the "
             "median relative error over the repetitions:", "",
             "| strategy | " + " | ".join(queries) + " | weighted mean |", "|---|" + "---|" * (len(queries) + 1)]
    for r in first:
        cells = [f"{_num(r.predicted_s.get(q))} / {_num(r.query_recovered_s.get(q))} ({_pct(errors[r.strategy].get(q))})"
                 for q in queries]
        lines.append(f"| {r.strategy} | " + " | ".join(cells) + f" | {_num(r.predicted_weighted_s)} / "
                     f"{_num(r.weighted_mean_recovery_s)} |")
    return lines


def _breakdown_table(result: RecoveryBenchResult, strategy: str) -> list[str]:
    """Where ``strategy``'s predictions miss, per query, median over its repetitions (:mod:`.prediction_breakdown`,
    from the runs' folders in the work dir: nothing when they are gone)."""
    from spark_jobs.recovery_units.prediction_breakdown import query_misses

    c = result.config
    misses = [query_misses(c.work_dir / f"{r.strategy}-{r.repetition}", r, c.stage_times(r.worker_join_s), c.normal_s)
              for r in result.runs if r.strategy == strategy]
    queries = sorted({q for m in misses for q in m})
    if not queries:
        return []

    def med(q: str, field: str) -> str:
        return _num(median_of_runs([getattr(m[q], field) for m in misses if q in m]))

    lines = ["", f"Where {strategy}'s predictions miss (`spark_jobs/recovery_units/prediction_breakdown.py`), seconds after "
             "the failure, median over the repetitions: the restart (its last failed partition's first batch), the "
             "backlog gone (the first batch after it whose lag is below twice the lag before the failure; the model's "
             "time back), back (relative latency below 1.2), and the time-averaged lag before the failure and in the "
             "minute after the backlog is gone:", "",
             "| query | restart predicted / measured | backlog gone predicted / measured | back measured | lag before / after |",
             "|---|---|---|---|---|"]
    for q in queries:
        lines.append(f"| {q} | {med(q, 'predicted_restart_s')} / {med(q, 'restarted_s')} | {med(q, 'predicted_back_s')} / "
                     f"{med(q, 'drained_s')} | {med(q, 'back_s')} | {med(q, 'lag_before_s')} / {med(q, 'lag_after_s')} |")
    return lines


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def recovery_plot(result: RecoveryBenchResult, out: Path) -> Path:
    """Seconds from the failure until each query is back (median over repetitions), one bar per strategy
    over each query (its priority in the label) and over the priority-weighted mean; dotted lines mark the
    node arrivals, so what lies above them is catch-up rather than waiting for capacity. A query that did
    not come back has no bar."""
    from ft_core.bench.plots import grouped_bars, new_figure, save_next_to

    summary = result.summary()["strategies"]
    queries = sorted({q for s in summary.values() for q in s["query_recovered_s"]})
    priority = next((r.priority for r in result.runs if r.priority), {})
    groups = [f"{q} (prio {priority[q]:g})" if q in priority else q for q in queries] + ["weighted mean"]
    fig, ax = new_figure("Time back to normal per query (paper 003, §7.2)", "query", "seconds after the failure",
                         size=(8.0, 4.0))
    grouped_bars(ax, groups, {name: [s["query_recovered_s"].get(q) for q in queries] + [s["weighted_mean_recovery_s"]]
                              for name, s in summary.items()})
    c = result.config
    for k in range(c.arrivals):
        ax.axhline(c.first_arrival_s + k * c.arrival_interval_s, color="grey", linestyle=":", linewidth=1,
                   label="node arrives" if k == 0 else None)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")  # beside the bars, never over them
    return save_next_to(fig, out, "queries")
