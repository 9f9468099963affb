"""The failure-timeline benchmark: simulation time against topology size (issue: seconds at 10,000 tasks).

Topologies are chains of 8 operators shaped like a keyed pipeline (sources of 2N tasks merged into
N, split, merged, then N-task operators down to N output partitions, i.e. N queries); the
``shuffled`` variant replaces one one-to-one stream in the middle with a full shuffle, so every
query depends on half of the pipeline. Half of the tasks (every other one, as when one of two racks
fails) fail; a structure-aware plan replicates 20% of the tasks; capacity arrives as five nodes a
minute apart. Reported: the simulation time (the plan and the graph build are timed separately),
the tentative OF and the priority-weighted recovery time.
"""

from __future__ import annotations

import platform
import time
from datetime import datetime, timezone

from ft_core.simulation.failure_timeline import Arrival, TimelineParams, simulate
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


def run_benchmark(sizes: tuple[int, ...], command: str, progress=lambda _: None) -> str:
    lines = [
        "# Failure timeline simulator: benchmark\n",
        f"Produced by `{command}` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()}, "
        f"Python {platform.python_version()}.\n",
        __doc__.split("\n\n", 1)[1].strip() + "\n",
        "| topology | tasks | queries | substreams | build s | plan s | simulate s | tentative OF | weighted recovery s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for shape in ("keyed", "shuffled"):
        for size in sizes:
            lines.append(_row(shape, size // 10))
            progress(f"{shape} {size} done")
    return "\n".join(lines) + "\n"


def _row(shape: str, queries: int) -> str:
    t0 = time.perf_counter()
    graph = pipeline(queries, shape)
    built = time.perf_counter() - t0
    plan = plan_replication(graph, graph.n // 5, "structure-aware")
    replicated = {graph.index[t] for t in plan.tasks}
    params = TimelineParams(task_cost=8.0 / graph.n, capacity=0.5, arrivals=[Arrival(size=1, at_s=60 * k) for k in range(1, 6)])
    t = simulate(graph, replicated, set(range(0, graph.n, 2)), params)
    substreams = sum(len(s.upstream) for streams in graph.inputs for s in streams)
    return (f"| {shape} | {graph.n} | {len(graph.sinks)} | {substreams} | {built:.2f} | {plan.elapsed_s:.2f} | {t.elapsed_s:.2f} | "
            f"{t.tentative_output_fidelity:.4f} | {t.priority_weighted_recovery_s:.1f} |")
