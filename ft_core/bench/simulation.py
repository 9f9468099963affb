"""The failure-timeline benchmark: simulation time against topology size (issue: seconds at 10,000 tasks).

Topologies are chains of 8 operators shaped like a keyed pipeline (sources of 2N tasks merged into
N, split, merged, then N-task operators down to N output partitions, i.e. N queries); the
``shuffled`` variant replaces one one-to-one stream in the middle with a full shuffle, so every
query depends on half of the pipeline. Half of the tasks (every other one, as when one of two racks
fails) fail; a structure-aware plan replicates 20% of the tasks; capacity arrives as five nodes a
minute apart. Reported: the simulation time (the plan and the graph build are timed separately),
the tentative OF and the priority-weighted recovery time.

Plots beside the report (:mod:`ft_core.bench.plots`): the simulated output fidelity over the time after
the failure for every run, and the build, plan and simulation times against the number of tasks.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ft_core.bench.plots import markdown_image, new_figure, save_next_to
from ft_core.simulation.failure_timeline import Arrival, Timeline, TimelineParams, simulate
from ft_core.replication.planners import plan_replication
from ft_core.topology.task_graph import TaskGraph, build_task_graph
from ft_core.topology.document import parse_topology

SIZES = (1_000, 10_000)
QUICK_SIZES = (1_000,)


def pipeline(queries: int, shape: str) -> TaskGraph:
    """A keyed (or shuffled) 8-operator pipeline with ``queries`` output partitions and 10x tasks."""
    n = queries
    pars = [2 * n, n, n, 2 * n, n, n, n, n]
    kinds = ["merge", "one_to_one", "split", "merge", "one_to_one", "full" if shape == "shuffled" else "one_to_one", "one_to_one"]
    doc = {"name": f"{shape}-{10 * n}", "operators": [{"name": f"O{k}", "parallelism": p} for k, p in enumerate(pars)],
           "streams": [{"from": f"O{k}", "to": f"O{k + 1}", "partitioning": kind} for k, kind in enumerate(kinds)]}
    return build_task_graph(parse_topology(doc))


def run_benchmark(sizes: tuple[int, ...], command: str, progress=lambda _: None, table: Path | None = None) -> str:
    """Run every (shape, size) and return the markdown report; with ``table`` (the report's path) the
    plots are saved next to it and linked from the report."""
    lines = [
        "# Failure timeline simulator: benchmark\n",
        f"Produced by `{command}` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores; load average at the start {os.getloadavg()[0]:.1f} "
        "(the machine is shared: the times are wall-clock).\n",
        __doc__.split("\n\n")[1].strip() + "\n",  # the setup paragraph
        "| topology | tasks | queries | substreams | build s | plan s | simulate s | tentative OF | weighted recovery s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    runs: list[Run] = []
    for shape in ("keyed", "shuffled"):
        for size in sizes:
            runs.append(_run(shape, size // 10))
            lines.append(runs[-1].row)
            progress(f"{shape} {size} done")
    if table is not None:
        lines += ["", markdown_image(_timeline_plot(runs, table), "output fidelity after the failure"), "",
                  markdown_image(_time_plot(runs, table), "build, plan and simulation time by tasks")]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Run:
    """One simulated (shape, size): its table row, its timeline and the build and plan times."""

    shape: str
    row: str
    timeline: Timeline
    built_s: float
    plan_s: float


def _run(shape: str, queries: int) -> Run:
    t0 = time.perf_counter()
    graph = pipeline(queries, shape)
    built = time.perf_counter() - t0
    plan = plan_replication(graph, graph.n // 5, "structure-aware")
    replicated = {graph.index[t] for t in plan.tasks}
    params = TimelineParams(task_cost=8.0 / graph.n, capacity=0.5, arrivals=[Arrival(size=1, at_s=60 * k) for k in range(1, 6)])
    t = simulate(graph, replicated, set(range(0, graph.n, 2)), params)
    substreams = sum(len(s.upstream) for streams in graph.inputs for s in streams)
    row = (f"| {shape} | {graph.n} | {len(graph.sinks)} | {substreams} | {built:.2f} | {plan.elapsed_s:.2f} | {t.elapsed_s:.2f} | "
           f"{t.tentative_output_fidelity:.4f} | {t.priority_weighted_recovery_s:.1f} |")
    return Run(shape, row, t, built, plan.elapsed_s)


def _timeline_plot(runs: list[Run], table: Path) -> Path:
    """Output fidelity against the seconds since the failure, one step line per run: the tentative OF
    through the replicas, then the steps as restarted tasks catch up; dotted lines mark node arrivals."""
    fig, ax = new_figure("Simulated output fidelity after the failure", "seconds after the failure", "output fidelity")
    for run in runs:
        t = run.timeline
        ax.step([p.time_s for p in t.fidelity_curve], [p.output_fidelity for p in t.fidelity_curve], where="post",
                label=f"{run.shape}, {t.tasks} tasks")
    for k, arrival in enumerate(runs[0].timeline.params.arrivals):  # every run has the same arrivals
        ax.axvline(arrival.at_s, color="grey", linestyle=":", linewidth=1, label="node arrives" if k == 0 else None)
    ax.set_ylim(-0.02, 1.05)
    ax.legend(loc="lower right", fontsize="small")
    return save_next_to(fig, table, "timeline")


def _time_plot(runs: list[Run], table: Path) -> Path:
    """Build, plan and simulation seconds against the number of tasks (log-log), one colour per shape:
    the benchmark's question is whether simulating stays within seconds at 10,000 tasks."""
    fig, ax = new_figure("Time by topology size", "tasks", "seconds")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for k, shape in enumerate(dict.fromkeys(r.shape for r in runs)):
        mine = [r for r in runs if r.shape == shape]
        tasks = [r.timeline.tasks for r in mine]
        for what, style, values in (("simulate", "-", [r.timeline.elapsed_s for r in mine]),
                                    ("plan", "--", [r.plan_s for r in mine]), ("build", ":", [r.built_s for r in mine])):
            # a build can take under the timer's resolution; log axes need a positive value
            ax.plot(tasks, [max(v, 1e-4) for v in values], style, color=f"C{k}", marker="o", label=f"{shape}: {what}")
    ax.legend(loc="upper left", fontsize="small")
    return save_next_to(fig, table, "time")
