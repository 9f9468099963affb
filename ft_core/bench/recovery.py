"""The recovery-planning benchmark: paper 003's Fig. 16 comparison, its Fig. 2 schedule, and scale.

Sections of the report (``docs/benchmarks/recovery.md``):

1. *Fig. 16 style*: synthetic instances of 18 failed queries (:mod:`ft_core.recovery.instances`),
   ``instances_per_setting`` per setting; budget R as a share of the total failed cost on the x
   axis. Per setting and budget: the recovered share of the failed priority (the paper's y axis)
   for exact, best-density (BD) and operator-centric (OC); the BD / exact and OC / exact ratios
   (mean, min; an instance where nothing fits counts as 1); and the Theorem 5.1 check
   ``BD >= (1 - e^(-1/d)) * OPT`` with d the instance's maximum sharing.
2. *Fig. 2 schedules*: the three staged policies on the Figure 2 instance.
3. *Scale*: instances of 100 to 10,000 failed queries at one budget: BD time (and seeds), OC time,
   exact time, whether exact certified its optimum within its time limit, and BD / exact.

Plots are written next to the report (:mod:`ft_core.bench.plots`): BD's and OC's recovered priority
relative to the optimum by budget, per setting, and the Fig. 2 staircase of the three staged policies.

Fig. 16 instances run in a process pool (each seeded); the scale section runs serially so that its
timings are not disturbed by the pool. Everything but the timing columns is reproducible.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from ft_core.bench.plots import markdown_image, new_figure, save_next_to
from ft_core.recovery.best_density import best_density
from ft_core.recovery.operator_centric import operator_centric
from ft_core.recovery.exact import exact_recovery
from ft_core.recovery.instances import InstanceSpec, random_instance
from ft_core.recovery.staged import plan_stages

BASE = InstanceSpec(queries=18, max_share=3, skew=0.0, priority="random")
SETTINGS: dict[str, InstanceSpec] = {
    "(a) max sharing 3 (uniform, random prt)": BASE,
    "(a) max sharing 6": replace(BASE, max_share=6),
    "(b) Zipf sharing s=0.2 (max 6)": replace(BASE, max_share=6, skew=0.2),
    "(b) Zipf sharing s=0.5 (max 6)": replace(BASE, max_share=6, skew=0.5),
    "(c) prt rising with cost (max 3)": replace(BASE, priority="cost"),
}
SCALE_SPEC = InstanceSpec(max_share=6, skew=0.5)


@dataclass(frozen=True)
class BenchConfig:
    instances_per_setting: int = 100
    budgets: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    exact_time_limit: float = 60.0
    scale_sizes: tuple[int, ...] = (100, 200, 1_000, 10_000)
    scale_instances: int = 3
    scale_budget: float = 0.3
    workers: int = max(1, min(2, os.cpu_count() or 1))
    settings: tuple[str, ...] = field(default_factory=lambda: tuple(SETTINGS))


QUICK = BenchConfig(instances_per_setting=3, budgets=(0.3, 0.6), exact_time_limit=10.0, scale_sizes=(100, 1_000), scale_instances=1)


def run_benchmark(config: BenchConfig, command: str, progress: Callable[[str], None] = lambda _: None,
                  table: Path | None = None) -> str:
    """Run every section and return the markdown report; with ``table`` (the report's path) the plots
    are saved next to it and linked from the report."""
    started = time.perf_counter()
    fig16, summary = _fig16(config, progress)
    if table is not None:
        fig16 += "\n" + markdown_image(_quality_plot(summary, config, table), "recovered priority relative to the optimum by budget") + "\n"
    sections = [_header(config, command), fig16, _targets(summary), _fig2(table), _scale(config, progress)]
    sections.append(f"\nTotal benchmark time: {time.perf_counter() - started:.0f} s.\n")
    return "\n".join(sections)


def _header(config: BenchConfig, command: str) -> str:
    return (
        "# Recovery planners (paper 003): benchmark\n\n"
        f"Produced by `{command}` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; machine: "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, {platform.platform()}.\n"
        f"{config.instances_per_setting} synthetic instances of 18 failed queries per setting, budgets "
        f"{', '.join(f'{b:.0%}' for b in config.budgets)} of the total failed cost, exact time limit "
        f"{config.exact_time_limit:.0f} s, {config.workers} worker processes.\n"
    )


# ----- 1. Fig. 16 style


def _fig16_instance(args: tuple[str, int, tuple[float, ...], float]) -> list[dict]:
    """All budgets on one instance (runs in a worker process)."""
    setting, seed, budgets, time_limit = args
    problem = random_instance(SETTINGS[setting], seed)
    total_cost, total_prio, d = problem.total_cost(), problem.total_priority(), problem.max_sharing()
    rows = []
    for share in budgets:
        budget = share * total_cost
        ex = exact_recovery(problem, budget, time_limit=time_limit)
        bd = best_density(problem, budget)
        oc = operator_centric(problem, budget)
        opt = ex.recovered_priority
        rows.append({
            "setting": setting, "budget": share, "certified": ex.optimal, "full": bool(bd.full_enumeration),
            "exact": opt / total_prio, "bd": bd.recovered_priority / total_prio, "oc": oc.recovered_priority / total_prio,
            "bd_ratio": bd.recovered_priority / opt if opt > 0 else 1.0,
            "oc_ratio": oc.recovered_priority / opt if opt > 0 else 1.0,
            "violation": bd.recovered_priority < (1 - math.exp(-1 / d)) * opt - 1e-9,
        })
    return rows


def _fig16(config: BenchConfig, progress) -> tuple[str, list[dict]]:
    jobs = [(s, 1000 * k + i, config.budgets, config.exact_time_limit)
            for k, s in enumerate(config.settings) for i in range(config.instances_per_setting)]
    progress(f"Fig. 16: {len(jobs)} instances x {len(config.budgets)} budgets")
    rows: list[dict] = []
    with ProcessPoolExecutor(max_workers=config.workers) as pool:
        for done, result in enumerate(pool.map(_fig16_instance, jobs, chunksize=4), 1):
            rows.extend(result)
            if done % 50 == 0:
                progress(f"Fig. 16: {done}/{len(jobs)} instances")
    lines = [
        "\n## 1. Fig. 16 style: recovered priority share by budget\n",
        "y = recovered priority / total failed priority (mean over instances). Ratios are per instance "
        "against the exact optimum (an instance where nothing fits counts as 1). *Guarantee*: instances "
        "where BD < (1 - e^(-1/d)) x OPT.\n",
        "| setting | budget | exact y | BD y | OC y | BD/exact mean | BD/exact min | OC/exact mean | OC/exact min | guarantee violations | exact certified |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for setting in config.settings:
        for share in config.budgets:
            sel = [r for r in rows if r["setting"] == setting and r["budget"] == share]
            lines.append(
                f"| {setting} | {share:.0%} | {_mean(sel, 'exact'):.4f} | {_mean(sel, 'bd'):.4f} | {_mean(sel, 'oc'):.4f} "
                f"| {_mean(sel, 'bd_ratio'):.4f} | {min(r['bd_ratio'] for r in sel):.4f} | {_mean(sel, 'oc_ratio'):.4f} "
                f"| {min(r['oc_ratio'] for r in sel):.4f} | {sum(r['violation'] for r in sel)} | {sum(r['certified'] for r in sel)}/{len(sel)} |"
            )
    return "\n".join(lines) + "\n", rows


def _quality_plot(rows: list[dict], config: BenchConfig, table: Path) -> Path:
    """BD / exact (solid) and OC / exact (dashed), mean over instances, against the budget, one colour per
    setting: how far each planner stays from the optimum, the paper's Fig. 16 read as ratios so that the
    five settings share one axis."""
    from matplotlib.lines import Line2D

    fig, ax = new_figure("Recovered priority relative to the optimum (paper 003, Fig. 16)",
                         "budget R (share of the failed cost)", "recovered priority / exact's", size=(7.0, 5.5))
    styles = {"best-density (BD)": ("bd_ratio", "-"), "operator-centric (OC)": ("oc_ratio", "--")}
    for k, setting in enumerate(config.settings):
        for key, style in styles.values():
            ys = [_mean([r for r in rows if r["setting"] == setting and r["budget"] == b], key) for b in config.budgets]
            ax.plot(config.budgets, ys, style, color=f"C{k}", marker="o", markersize=3)
    ax.set_ylim(0, 1.05)
    # colour = setting, line style = planner: seven legend entries instead of ten, below the axes
    handles = [Line2D([], [], color="black", linestyle=style, label=planner) for planner, (_, style) in styles.items()]
    handles += [Line2D([], [], color=f"C{k}", label=setting) for k, setting in enumerate(config.settings)]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize="x-small")
    return save_next_to(fig, table, "quality")


def _mean(rows: list[dict], key: str) -> float:
    return statistics.fmean(r[key] for r in rows)


def _targets(rows: list[dict]) -> str:
    by_setting = {}
    for r in rows:
        by_setting.setdefault(r["setting"], []).append(r)
    lines = [
        "\n### Summary per setting (all budgets)\n",
        "| setting | BD/exact mean | BD/exact min | OC/exact mean | guarantee violations | BD full seed enumeration |",
        "|---|---|---|---|---|---|",
    ]
    for setting, sel in by_setting.items():
        lines.append(f"| {setting} | {_mean(sel, 'bd_ratio'):.4f} | {min(r['bd_ratio'] for r in sel):.4f} | "
                     f"{_mean(sel, 'oc_ratio'):.4f} | {sum(r['violation'] for r in sel)} | {sum(r['full'] for r in sel)}/{len(sel)} |")
    overall = _mean(rows, "bd_ratio")
    violations = sum(r["violation"] for r in rows)
    lines.append(
        f"\nTargets: BD within 3% of the optimum on average: overall mean BD/exact = {overall:.4f} "
        f"({'met' if overall >= 0.97 else 'NOT met'}); never below the guarantee: {violations} violations "
        f"in {len(rows)} instance-budget pairs ({'met' if violations == 0 else 'NOT met'}).\n"
    )
    return "\n".join(lines)


# ----- 2. Fig. 2 schedules


def _fig2(table: Path | None = None) -> str:
    from ft_core.recovery.problem import load_problem
    from ft_core.samples import SAMPLES_DIR

    problem = load_problem(SAMPLES_DIR / "recovery-fig1.json")
    lines = [
        "\n## 2. Fig. 2: staged schedules on the Figure 2 instance\n",
        "`ftops plan stages ft_core/samples/recovery-fig1.json --capacity 0 --arrivals 1,1,1,1,1 --policy P`: "
        "ten failed partitions of 0.4 node each, five nodes arriving one by one (two partitions each under the "
        "80% cap). Each cell: partitions started -> queries recovered.\n",
        "| policy | N1 | N2 | N3 | N4 | N5 |",
        "|---|---|---|---|---|---|",
    ]
    plans = {policy: plan_stages(problem, 0.0, [1.0] * 5, policy=policy)
             for policy in ("operator-centric", "order-then-pack", "per-stage")}
    for policy, plan in plans.items():
        cells = [f"{{{', '.join(s.partitions)}}} -> {', '.join(s.recovered_queries) or '-'}" for s in plan.stages[1:]]
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    if table is not None:
        lines.append("\n" + markdown_image(_schedule_plot(plans, table), "recovered priority as nodes arrive, per policy"))
    return "\n".join(lines) + "\n"


def _schedule_plot(plans: dict, table: Path) -> Path:
    """The Fig. 2 staircase: the share of the failed priority recovered after each node arrival, one step
    line per staged policy (a higher, earlier step brings queries back sooner)."""
    fig, ax = new_figure("Fig. 2 instance: recovered priority as nodes arrive", "nodes arrived",
                         "recovered priority (share)")
    for k, (policy, plan) in enumerate(plans.items()):
        xs = [s.stage for s in plan.stages]
        ys = [s.recovered_priority / plan.total_priority for s in plan.stages]
        # a small offset per policy keeps coinciding steps visible
        ax.step(xs, [y + 0.01 * k for y in ys], where="post", marker="o", markersize=3, label=policy)
    ax.set_xticks(range(len(next(iter(plans.values())).stages)))
    ax.set_ylim(-0.05, 1.05)
    ax.legend(loc="upper left", fontsize="small")
    return save_next_to(fig, table, "schedules")


# ----- 3. Scale


def _scale(config: BenchConfig, progress) -> str:
    lines = [
        "\n## 3. Scale\n",
        f"Instances of the Zipf(0.5), max-sharing-6 setting with M failed queries (2-6 failed partitions each), "
        f"budget {config.scale_budget:.0%} of the failed cost, {config.scale_instances} instance(s) per size; "
        f"times are the median (max) over instances. Exact runs with a {config.exact_time_limit:.0f} s limit.\n",
        "| failed queries | failed partitions | BD time s | BD seeds (full?) | OC time s | exact time s | exact certified | exact gap max | BD/exact |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in config.scale_sizes:
        progress(f"scale: {m} failed queries")
        runs = [_scale_run(m, 500_000 + 10 * m + i, config) for i in range(config.scale_instances)]
        bd_t, oc_t, ex_t = ([r[k] for r in runs] for k in ("bd_t", "oc_t", "ex_t"))
        lines.append(
            f"| {m} | {runs[0]['partitions']} | {_med_max(bd_t)} | {runs[0]['seeds']} ({'yes' if runs[0]['full'] else 'no'}) "
            f"| {_med_max(oc_t)} | {_med_max(ex_t)} | {sum(r['certified'] for r in runs)}/{len(runs)} "
            f"| {max(r['gap'] for r in runs):.4f} | {statistics.fmean(r['ratio'] for r in runs):.4f} |"
        )
    return "\n".join(lines) + "\n"


def _scale_run(m: int, seed: int, config: BenchConfig) -> dict:
    problem = random_instance(replace(SCALE_SPEC, queries=m), seed)
    budget = config.scale_budget * problem.total_cost()
    bd = best_density(problem, budget)
    oc = operator_centric(problem, budget)
    ex = exact_recovery(problem, budget, time_limit=config.exact_time_limit)
    return {
        "partitions": len(problem.partitions), "bd_t": bd.elapsed_s, "oc_t": oc.elapsed_s, "ex_t": ex.elapsed_s,
        "seeds": bd.seeds, "full": bd.full_enumeration, "certified": ex.optimal, "gap": ex.gap or 0.0,
        "ratio": bd.recovered_priority / ex.recovered_priority if ex.recovered_priority > 0 else 1.0,
    }


def _med_max(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({max(values):.3f})"
