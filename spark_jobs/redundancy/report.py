"""The table of ``ftops bench redundancy``: setup, per-scenario latencies and misses, the targets
and the serving-view drill, as Markdown for ``docs/benchmarks/redundancy.md``.

Two plots beside the table (:mod:`ft_core.bench.plots`, when ``render`` is given the report's path):
the missed deadlines of every scenario, and its p50, p90 and p99 batch latencies against the deadline.
"""

from __future__ import annotations

from pathlib import Path

from spark_jobs.redundancy.bench import THESIS_PAUSED, BenchResult, ScenarioResult


def render(result: BenchResult, out: Path | None = None) -> str:
    """The markdown report: setup, the table, the targets, the serving-view drill; with ``out`` (the
    report's path) the plots are saved beside it and linked under the table."""
    plots = _plots(result, out) if out is not None and _measured(result) else []
    lines = ["# Adaptive redundancy against slowdowns: speculative execution on Spark (thesis 002)", "",
             f"Produced by `{result.command}` ({result.elapsed_s / 60:.0f} minutes on the project's 2-core machine).",
             "", *_setup(result), "", *_table(result), "", *plots, "## Targets", "", *_targets(result), ""]
    lines += _why_missed(result) + _period_odds(result)
    if result.drill is not None:
        lines += ["## Serving view during a drill", "", *_drill_lines(result.drill), ""]
    return "\n".join(lines)


def _setup(result: BenchResult) -> list[str]:
    c, f = result.config, result.faults
    free = _scenario(result, "fault-free")
    p50 = f"{free.latency.p50_ms:.0f} ms" if free and free.latency else "-"
    ctl = c.controller
    return [
        f"Pipeline `{c.pipeline}` (`{' '.join(c.params)}`) on a local standalone cluster of {c.executors} one-core "
        f"workers on {c.executors} loopback addresses (127.0.0.1-{c.executors}: Spark never runs a speculative copy on "
        f"the host of the original), one executor each, {c.shuffle_partitions} shuffle partitions, one input file per micro-batch "
        f"(trigger {c.trigger_s:g} s), so batch b does the same work in every scenario. Each scenario is a fresh run; "
        f"{c.warmup_batches} warm-up batches, then {c.batches} measured batches."
        + (" Shuffle files are served by Spark's external shuffle service, run by the first worker (on one machine it "
           "listens on every address and serves every worker's executors, as each host's own would), not by the "
           "executor that wrote them: a paused executor does not hold up the reads of its map outputs."
           if c.shuffle_service else ""),
        "",
        f"Faults (`spark_jobs.fault_injection`): one slowdown process per executor, exponential time between "
        f"faults (mean {f.mean_gap_s:.1f} s), Gaussian magnitude {f.magnitude_ms:.0f} +- {f.stddev_ms:.0f} ms truncated to "
        f"[{f.min_ms:.0f}, {f.max_ms:.0f}] ms, applied as a SIGSTOP pause of the executor's JVM (a stop-the-world pause: "
        f"executor-local, a speculative copy elsewhere is not slowed); seed {c.seed}, the same schedule in every "
        f"scenario. Scaling: the thesis injects 150 ms pauses 1 s apart on average (an instance is paused "
        f"{THESIS_PAUSED:.0%} of the time), pauses of several times a tuple's latency (21-72 ms, Table 3.5). Here the "
        f"unit of work is a micro-batch (fault-free median {p50}), so both time constants are scaled "
        f"{f.magnitude_ms / 150:.0f}x: a mean pause of {f.magnitude_ms / 1000 / (free.latency.p50_ms / 1000) if free and free.latency else 0:.1f} "
        f"micro-batches, an executor paused {f.magnitude_ms / 1000 / (f.mean_gap_s + f.magnitude_ms / 1000):.0%} "
        f"of the time" + (" (derived from the fault-free run)." if c.faults is None else " (given)."),
        "",
        f"Deadline: {result.deadline_ms:.0f} ms per batch"
        + (" (given)." if c.deadline_ms else " = mu + 2 sigma of the fault-free batches (the thesis's P7 rule)."),
        "Redundancy level L -> `spark.speculation*` (`ft_core.redundancy.allocation.speculation_settings`: quantile "
        "1 - L, multiplier 3 - 2L, minTaskRuntime 100 ms x (1 - L)); extra confs for every scenario: "
        f"`{' '.join(c.extra_conf) or '-'}`."
        + (f" Controller: Algorithm 2 (corrected rule), bound = the deadline on the p90 of each period of "
           f"{ctl.period_batches} batches (the first {ctl.warmup_batches} batches after each (re)submission left out), "
           f"step {ctl.step_pct:g} points, gains 5, margin {ctl.perf_margin:g}. `controller`: a level change stops the job "
           "between micro-batches and resubmits it from its checkpoint; `controller live`: the running driver applies it "
           "to the task sets of its next micro-batches (`spark_jobs.redundancy.live`; speculation is on from the start, "
           "minTaskRuntime 100 ms, level 0 = quantile 1, so no copy)." if ctl else ""),
        "CPU: executor CPU time of every task attempt of the measured batches, from the event log (speculative "
        "copies included, winners and killed ones; a paused attempt accrues no CPU). Redundancy cost = CPU of the "
        "speculative attempts.",
    ]


def _table(result: BenchResult) -> list[str]:
    none = _scenario(result, "none")
    rows = ["| scenario | level | missed / batches | fewer missed than none | p50 ms | p90 ms | p99 ms | task CPU s | "
            "CPU vs none | speculative attempts (won) | speculative CPU s | restarts | output = reference |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in result.scenarios:
        if s.error or s.latency is None or s.costs is None:
            rows.append(f"| {s.name} | failed: {s.error} |" + " |" * 11)
            continue
        level = ", ".join(f"{k}: {v}" for k, v in s.levels_used.items()) if s.levels_used else f"{s.level:g}"
        fewer = _reduction(none, s) if s.faults and s.name != "none" else None
        cpu_vs = (s.costs.cpu_s / none.costs.cpu_s - 1) if none and none.costs and s.name != "none" else None
        rows.append(f"| {s.name} | {level} | {s.latency.missed} / {s.latency.batches} | {_pct(fewer)} | "
                    f"{s.latency.p50_ms:.0f} | {s.latency.p90_ms:.0f} | {s.latency.p99_ms:.0f} | {s.costs.cpu_s:.1f} | "
                    f"{_pct(cpu_vs, signed=True)} | {s.costs.speculative_attempts} ({s.costs.speculative_won}) | "
                    f"{s.costs.speculative_cpu_s:.2f} | {s.restarts} | {_yes(s.output_ok)} |")
    return rows


def _measured(result: BenchResult) -> list[ScenarioResult]:
    """The scenarios that ran to the end (a failed one has no latencies to plot)."""
    return [s for s in result.scenarios if s.error is None and s.latency is not None]


def _plots(result: BenchResult, out: Path) -> list[str]:
    """Saves both plots beside ``out``; their Markdown."""
    from ft_core.bench.plots import markdown_image  # matplotlib: only when a report is written

    return [markdown_image(missed_plot(result, out), "missed deadlines per scenario"), "",
            markdown_image(latency_plot(result, out), "p50, p90 and p99 batch latency per scenario"), ""]


def missed_plot(result: BenchResult, out: Path) -> Path:
    """Missed deadlines out of the measured batches, one bar per scenario (fault-free and none first, then
    the static levels and the controllers): the thesis's measure of what redundancy buys; the dashed line
    is half of none's misses, the 50 % target."""
    from ft_core.bench.plots import grouped_bars, new_figure, save_next_to

    scenarios = _measured(result)
    batches = max(s.latency.batches for s in scenarios)
    fig, ax = new_figure(f"Missed deadlines ({result.deadline_ms:.0f} ms) out of {batches} batches", "scenario",
                         "missed deadlines")
    grouped_bars(ax, [s.name for s in scenarios], {"missed deadlines": [s.latency.missed for s in scenarios]})
    none = _scenario(result, "none")
    if none is not None and none.latency is not None:
        ax.axhline(none.latency.missed / 2, color="grey", linestyle="--", linewidth=1, label="target: half of none's")
        ax.legend(loc="best", fontsize="small")
    return save_next_to(fig, out, "missed")


def latency_plot(result: BenchResult, out: Path) -> Path:
    """The p50, p90 and p99 batch latency of every scenario side by side, with the per-batch deadline: a
    level that helps pulls p90 and p99 under the line without raising p50."""
    from ft_core.bench.plots import grouped_bars, new_figure, save_next_to

    scenarios = _measured(result)
    fig, ax = new_figure("Batch latency per scenario", "scenario", "batch latency ms", size=(8.0, 4.0))
    grouped_bars(ax, [s.name for s in scenarios], {
        "p50": [s.latency.p50_ms for s in scenarios], "p90": [s.latency.p90_ms for s in scenarios],
        "p99": [s.latency.p99_ms for s in scenarios]})
    ax.axhline(result.deadline_ms, color="red", linestyle="--", linewidth=1, label=f"deadline {result.deadline_ms:.0f} ms")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")  # beside the bars, never over them
    return save_next_to(fig, out, "latency")


def _targets(result: BenchResult) -> list[str]:
    none = _scenario(result, "none")
    statics = [s for s in result.scenarios if s.name.startswith("static") and s.latency and s.costs]
    controllers = [s for s in result.scenarios if s.name.startswith("controller") and s.error is None and s.latency]
    out = []
    if none and none.latency:
        best = max(statics, key=lambda s: _reduction(none, s) or -1, default=None)
        reductions = ", ".join(f"{s.name}: {_pct(_reduction(none, s))}" for s in [*statics, *controllers])
        met = best is not None and (_reduction(none, best) or 0) >= 0.5
        out.append(f"- At least 50 % fewer missed deadlines than without redundancy ({none.latency.missed} missed): "
                   f"{reductions}. **{'Met' if met else 'Not met'}**" + (f" (best: {best.name})." if best else "."))
    meeting = [s for s in statics if s.latency.p90_ms <= result.deadline_ms]
    smallest = min(meeting, key=lambda s: s.level, default=None)
    for ctl in controllers:
        if ctl.costs is not None:
            out.append(_controller_target(result, ctl, smallest))
    return out


def _controller_target(result: BenchResult, ctl: ScenarioResult, smallest: ScenarioResult | None) -> str:
    """The controller meets the bound with less redundancy cost than the smallest static level that does."""
    meets = ctl.latency.p90_ms <= result.deadline_ms
    line = (f"- {ctl.name.capitalize()} meets the bound (p90 {ctl.latency.p90_ms:.0f} ms vs {result.deadline_ms:.0f} ms): "
            f"{'yes' if meets else 'no'}; smallest static level meeting it: {smallest.name if smallest else 'none'}")
    met = False
    if smallest is not None:
        line += (f" (speculative CPU {smallest.costs.speculative_cpu_s:.2f} s vs the controller's "
                 f"{ctl.costs.speculative_cpu_s:.2f} s; total task CPU {smallest.costs.cpu_s:.1f} s vs {ctl.costs.cpu_s:.1f} s)")
        met = meets and ctl.costs.speculative_cpu_s < smallest.costs.speculative_cpu_s
    return line + f". **{'Met' if met else 'Not met'}**."


def _why_missed(result: BenchResult) -> list[str]:
    """Missed batches by cause (:func:`spark_jobs.redundancy.misses.miss_causes`), for the runs that recorded them."""
    from spark_jobs.redundancy.misses import CAUSES

    classed = [s for s in _measured(result) if s.missed_causes and s.faults]
    if not classed:
        return []
    rows = ["## Why batches missed", "",
            "Each missed batch of a faulty scenario, by the executor pauses overlapping it and the speculative copies "
            "Spark ran for it (event log): `no pause` is the machine itself; `pause, no copy`: speculation did not act "
            "(level 0, or the stalled task did not qualify in time); `pause, copy`: a copy ran and the batch still "
            "missed (it started too late, or the stall was not in a task a copy replaces: a shuffle read from the "
            "paused executor waits for it whoever reads).", "",
            f"| scenario | missed | {' | '.join(CAUSES)} |", "|---|---|" + "---|" * len(CAUSES)]
    rows += [f"| {s.name} | {s.latency.missed} | " + " | ".join(str(s.missed_causes.get(c, 0)) for c in CAUSES) + " |"
             for s in classed]
    return [*rows, ""]


def _period_odds(result: BenchResult) -> list[str]:
    """How often one controller period ranks two measured scenarios right (:func:`~spark_jobs.redundancy.misses.ranking_odds`)."""
    from spark_jobs.redundancy.misses import PERIODS, first_confident, period_odds

    none = _scenario(result, "none")
    statics = [s for s in _measured(result) if s.name.startswith("static") and s.durations_ms]
    if none is None or not none.durations_ms or not statics:
        return []
    best = min(statics, key=lambda s: s.latency.missed)
    pairs = [(best, none), *[(best, s) for s in statics if s is not best]]
    period = result.config.controller.period_batches if result.config.controller else None
    rows = ["## What one controller period can see", "",
            "Algorithm 2 moves the level by comparing one period's p90 with the last one's. The chance that the p90 "
            "of one period at the better level is below that at the worse level, with the periods drawn from the "
            "measured batches of both (bootstrap, 2,000 pairs; 0.5 is a coin flip)"
            + (f"; the controllers above used periods of {period} batches" if period else "") + ":", "",
            f"| better | worse | {' | '.join(f'{p} batches' for p in PERIODS)} | period for 0.9 |",
            "|---|---|" + "---|" * (len(PERIODS) + 1)]
    for better, worse in pairs:
        odds = period_odds(better.durations_ms, worse.durations_ms)
        needed = first_confident(odds)
        rows.append(f"| {better.name} | {worse.name} | " + " | ".join(f"{o:.2f}" for o in odds.values())
                    + f" | {needed if needed else f'over {PERIODS[-1]}'} |")
    return [*rows, ""]


def _drill_lines(drill: dict) -> list[str]:
    if "error" in drill:
        return [f"The drill failed: {drill['error']}"]
    rate = drill.get("serve_windows_per_s")
    return [
        f"`ftops drill run --workload topk --budget {drill.get('budget')} --serve` (parameters `{' '.join(f'{k}={v}' for k, v in drill['params'].items() if k in ('rate', 'window_s', 'slide_s', 'watermark_s', 'p1'))}`): "
        f"rack-a killed, replacement after {drill['new_capacity_after_s']:.0f} s, plan {' '.join(drill['plan_tasks'])} "
        f"(predicted OF {drill['predicted_output_fidelity']:.3f}).",
        "",
        "| failure windows | served tentatively | gaps | windows/s served during the failure (input rate) | "
        "worst staleness s | tentative accuracy | primary caught up s | final view = reference |",
        "|---|---|---|---|---|---|---|---|",
        f"| {len(drill['tentative_accuracy_per_window'])} | {drill['serve_tentative_windows']} | {drill['serve_gap_windows']} | "
        f"{'-' if rate is None else f'{rate:.2f}'} ({drill['serve_expected_windows_per_s']:.2f}) | "
        f"{_num(drill['serve_max_staleness_s'])} | {_num(drill['tentative_accuracy'], 3)} | "
        f"{_num(drill['time_to_caught_up_s'])} | {_yes(drill['serve_equals_reference'])} |",
        "",
        f"Targets: no gap in windows during the failure: **{'met' if drill['serve_gap_windows'] == 0 else 'not met'}**; "
        f"final content equal to the reference: **{'met' if drill['serve_equals_reference'] else 'not met'}**.",
    ]


def _scenario(result: BenchResult, name: str) -> ScenarioResult | None:
    return next((s for s in result.scenarios if s.name == name and s.error is None), None)


def _reduction(none: ScenarioResult | None, s: ScenarioResult) -> float | None:
    if none is None or none.latency is None or s.latency is None or none.latency.missed == 0:
        return None
    return 1 - s.latency.missed / none.latency.missed


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.0%}" if signed else f"{value:.0%}"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")
