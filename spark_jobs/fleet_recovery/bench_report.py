"""The report of ``ftops bench fleet-recovery`` (:mod:`spark_jobs.fleet_recovery.bench`): per run each job's time
back and the priority-weighted mean by policy, whether staged recovery had the best mean in every run, the staged
plans' predicted against measured times back, each job's output against the batch reference, and a plot of the
weighted means."""

from __future__ import annotations

import os
import platform
import statistics
from datetime import datetime, timezone
from pathlib import Path

from spark_jobs.fleet_recovery.bench import FleetRecoveryBenchConfig, OutputCheck, RunResult, priorities


def render(results: list[RunResult], outputs: dict[str, OutputCheck], config: FleetRecoveryBenchConfig, command: str,
           table: Path | None) -> str:
    jobs = priorities(config.jobs)
    head = " | ".join(f"{j} (priority {p:g})" for j, p in jobs.items())
    lines = [
        "# Fleet recovery on Spark: staged against first-in-first-out and all-at-once",
        "",
        f"Produced by `{command}` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}. {config.jobs} jobs (examples/sensor_alerts.py, 50 rows/s each, a micro-batch every "
        f"{config.trigger_s:g} s) on one local standalone "
        f"cluster, failure domain `rack-a` of {config.jobs} one-core workers lost at once, its workers back one at a time "
        f"{config.spacing_s:g} s apart; {config.runs} run(s) per policy, policies rotated from run to run. Times back are "
        "seconds after the failure until every stream of the job ran two micro-batches within its caught-up band "
        "(the `ftops_fleet_recovery` DAG's definition); a run's score is the priority-weighted mean. The jobs were "
        "submitted in priority order, the least important first.",
        "",
        f"| run | policy | {head} | weighted mean (s) | best of the run | plan: order, held down, CPUs shared when planned |",
        "|---|---|" + "---|" * len(jobs) + "---|---|---|",
    ]
    by_run: dict[int, list[RunResult]] = {}
    for r in results:
        by_run.setdefault(r.run, []).append(r)
    wins = 0
    for run, rows in sorted(by_run.items()):
        scored = [r for r in rows if r.weighted_mean_s is not None]
        best = min(scored, key=lambda r: r.weighted_mean_s).policy if scored else None
        wins += best == "staged"
        for r in sorted(rows, key=lambda r: config.policies.index(r.policy)):
            cells = " | ".join(_s(r.back_s.get(j)) for j in jobs)
            plan = f"{r.order_rule}; {', '.join(r.held) or 'none'}" if r.order_rule else "-"
            plan += "" if r.shared_cpus is None else f"; {r.shared_cpus:g} CPUs shared"
            lines.append(f"| {run} | {r.policy} | {cells} | {_s(r.weighted_mean_s)} | {'yes' if r.policy == best else ''} "
                         f"| {plan} |")
    lines += ["", "| policy | mean of the weighted means (s) | runs |", "|---|---|---|"]
    for policy in config.policies:
        means = [r.weighted_mean_s for r in results if r.policy == policy and r.weighted_mean_s is not None]
        lines.append(f"| {policy} | {_s(statistics.fmean(means) if means else None)} | {len(means)} |")
    lines += ["", f"**Target: staged recovery has the best weighted mean in every run: "
                  f"{'met' if wins == len(by_run) else 'not met'}** ({wins} of {len(by_run)} runs)."]
    lines += _predictions(results, jobs)
    lines += _outputs(outputs, len(results))
    if table is not None:
        lines += ["", _plot(results, config, table)]
    return "\n".join(lines) + "\n"


def _predictions(results: list[RunResult], jobs: dict[str, float]) -> list[str]:
    rows = [(r, j) for r in results if r.policy != "all-at-once" for j in jobs
            if r.planned_back_s.get(j) is not None and r.back_s.get(j) is not None]
    if not rows:
        return []
    out = ["", "Staged and fifo runs, each job's time back as planned (before any worker returned, from the arrivals "
               "expected) and as predicted at its restart (the restarts so far as they happened), against measured:", "",
           "| run | policy | job | restarted (s) | planned back (s) | miss | predicted at restart (s) | miss | "
           "measured back (s) |", "|---|---|---|---|---|---|---|---|---|"]
    for r, j in rows:
        at_restart = r.predicted_back_s.get(j)
        out.append(f"| {r.run} | {r.policy} | {j} | {_s(r.restarted_s.get(j))} | {_s(r.planned_back_s[j])} | "
                   f"{_miss(r.planned_back_s[j], r.back_s[j])} | {_s(at_restart)} | {_miss(at_restart, r.back_s[j])} | "
                   f"{_s(r.back_s[j])} |")
    for what, key in (("planned", "planned_back_s"), ("predicted at restart", "predicted_back_s")):
        misses = [abs(r.back_s[j] - getattr(r, key)[j]) / getattr(r, key)[j] for r, j in rows if getattr(r, key).get(j)]
        if misses:
            out += ["", f"{what.capitalize()} within 25 %: {sum(m <= 0.25 for m in misses)} of {len(misses)} "
                        f"(median miss {statistics.median(misses):.0%})."]
    return out


def _miss(predicted: float | None, measured: float) -> str:
    return "-" if not predicted else f"{(measured - predicted) / predicted:+.0%}"


def _plot(results: list[RunResult], config: FleetRecoveryBenchConfig, table: Path) -> str:
    from ft_core.bench.plots import grouped_bars, markdown_image, new_figure, save_next_to

    runs = sorted({r.run for r in results})
    fig, ax = new_figure("Priority-weighted mean time back", "run", "seconds after the failure")
    series = {p: [next((r.weighted_mean_s for r in results if r.run == n and r.policy == p), None) for n in runs]
              for p in config.policies}
    grouped_bars(ax, [f"run {n}" for n in runs], series)
    return markdown_image(save_next_to(fig, table, "weighted-mean"), "weighted mean time back per run and policy")


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _outputs(outputs: dict[str, OutputCheck], failures: int) -> list[str]:
    if not outputs:
        return ["", "**Target: 0 lost and 0 duplicated windows: not checked** (the batch reference failed: its error is "
                    "in the benchmark's output)."]
    lines = ["", f"Each job's output over the whole benchmark ({failures} losses of `rack-a`, with every hold and restart "
                 "they caused) against the batch reference of its input:", "",
             "| job | windows compared (starts, ms) | lost | duplicated | not in the reference (starts, ms) "
             "| other rows (starts, ms) | equal to the reference |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {job} | {c.windows_compared}{_span(c.reference_span_ms)} | {c.lost_windows} | {c.duplicated_windows} | "
              f"{len(c.unexpected_windows)}{_starts(c.unexpected_windows)} | {len(c.changed_windows)}{_starts(c.changed_windows)} "
              f"| {'yes' if c.equal else 'no'} |" for job, c in outputs.items()]
    clean = all(not c.lost_windows and not c.duplicated_windows for c in outputs.values())
    equal = all(c.equal for c in outputs.values())
    return lines + ["", f"**Target: 0 lost and 0 duplicated windows: {'met' if clean else 'not met'}**; every output "
                        f"equal to the reference: {'yes' if equal else 'no'}."]


def _span(span: tuple[int, int] | None) -> str:
    return "" if span is None else f" ({span[0]} to {span[1]})"


def _starts(starts: list[int], ends: int = 2) -> str:
    """The first and last ``ends`` starts: whether the odd windows are the first ones, the last ones or between.

    >>> _starts([1, 2, 3, 4, 5])
    ' (1, 2, ..., 4, 5)'
    """
    shown = [str(s) for s in starts] if len(starts) <= 2 * ends else \
        [*map(str, starts[:ends]), "...", *map(str, starts[-ends:])]
    return f" ({', '.join(shown)})" if starts else ""
