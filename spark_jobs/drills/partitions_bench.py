"""``ftops bench partitions``: drills across hosts, alternating host-down and network-partition faults.

Problem (issue 14): on a real cluster a rack is lost in two ways that loopback cannot show: its hosts go
down (they answer nothing) or they are cut off the network while their processes keep running. ftops must
detect both, keep tentative outputs flowing from the replica, and bring the primary back with no lost or
duplicated window. Target: 10 of 10 drills with 0 lost, 0 duplicated, output equal to the batch reference.

Algorithm: ``drills`` complete drills (:func:`spark_jobs.drills.local.run_drill`), each on a fresh cluster on
a namespace network (``network="namespaces"``: the masters and every worker on a host of their own, this
machine the drivers' host, :mod:`spark_jobs.cluster.netns`). Drill ``i`` fails rack ``RACKS[(i // 2) % 2]``
with fault ``FAULTS[i % 2]``: host-down a, partition a, host-down b, partition b, ... (the primary's workers
are in the failing rack, the replica on the standby host, replacement capacity on a new ``rack-c`` host).
Per drill: detection (seconds until the master lists the rack's workers dead), tentative accuracy, first
tentative output, caught up, lost and duplicated windows, output = reference. A drill that fails is a row
with its error; the others still run. About 5 minutes per drill on a 2-core machine; needs root.

Plot beside the report: seconds to detection, to the first tentative output and to caught up, per drill.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel, Field

from ft_core.cli.progress import Progress
from ft_core.errors import FtopsError
from spark_jobs.drills.bench import DEFAULT_PARAMS
from spark_jobs.drills.documents import DEFAULT_PORT_BASE, DrillConfig, DrillReport
from spark_jobs.drills.local import run_drill
from spark_jobs.pipeline.loading import load_workload

FAULTS = ("host-down", "partition")
RACKS = ("rack-a", "rack-b")


class PartitionsConfig(BaseModel):
    pipeline: str = "topk"
    params: list[str] = Field(default_factory=lambda: list(DEFAULT_PARAMS["topk"]))
    drills: int = Field(default=10, ge=1)
    ratio: float = Field(default=0.5, gt=0, le=1, description="replicated share of the tasks (structure-aware plan)")
    new_capacity_after_s: float = Field(default=30.0, ge=0)
    work_dir: Path
    port_base: int = DEFAULT_PORT_BASE
    timeout_s: float = 600.0


class PartitionRow(BaseModel):
    drill: int
    domain: str
    fault: str
    report: DrillReport | None = None
    error: str | None = None
    took_s: float

    def passed(self) -> bool:
        r = self.report
        return r is not None and r.lost_windows == 0 and r.duplicated_windows == 0 and r.output_equals_reference


class PartitionsResult(BaseModel):
    command: str
    config: PartitionsConfig
    rows: list[PartitionRow]
    started: str
    load_at_start: float


def schedule(drills: int) -> list[tuple[str, str]]:
    """(rack, fault) of each drill: both faults on one rack, then both on the other, and so on.

    >>> schedule(5)
    [('rack-a', 'host-down'), ('rack-a', 'partition'), ('rack-b', 'host-down'), ('rack-b', 'partition'), ('rack-a', 'host-down')]
    """
    return [(RACKS[(i // 2) % 2], FAULTS[i % 2]) for i in range(drills)]


def run_partitions(config: PartitionsConfig, progress: Progress) -> list[PartitionRow]:
    n = len(load_workload(config.pipeline, config.params).task_ids())
    budget = max(1, round(config.ratio * n))
    progress.set_total(config.drills)
    rows = []
    for i, (rack, fault) in enumerate(schedule(config.drills), 1):
        progress.step(f"drill {i}: {fault} of {rack}")
        drill = DrillConfig(pipeline=config.pipeline, params=config.params, budget=budget, fail_domain=rack, fault=fault,
                            network="namespaces", work_dir=config.work_dir / f"drill-{i:02d}", predict_accuracy=False,
                            new_capacity_after_s=config.new_capacity_after_s, port_base=config.port_base,
                            timeout_s=config.timeout_s)
        start = time.time()
        try:
            report = run_drill(drill, progress=lambda m: progress(f"  {m}"))
            rows.append(PartitionRow(drill=i, domain=rack, fault=fault, report=report, took_s=time.time() - start))
        except FtopsError as exc:
            rows.append(PartitionRow(drill=i, domain=rack, fault=fault, error=str(exc), took_s=time.time() - start))
    return rows


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _row(row: PartitionRow) -> str:
    r = row.report
    if r is None:
        return f"| {row.drill} | {row.domain} | {row.fault} | - | - | - | - | - | - | - | {row.took_s:.0f} | no: {row.error} |"
    acc = "-" if r.tentative_accuracy is None else f"{r.tentative_accuracy:.3f}"
    return (f"| {row.drill} | {row.domain} | {row.fault} | {_s(r.detection_s)} | {acc} | {_s(r.time_to_first_tentative_s)} | "
            f"{_s(r.time_to_caught_up_s)} | {r.lost_windows} | {r.duplicated_windows} | "
            f"{'yes' if r.output_equals_reference else 'NO'} | {row.took_s:.0f} | {'yes' if row.passed() else 'NO'} |")


def render(result: PartitionsResult, out: Path | None = None) -> str:
    """The Markdown report (with ``out``, its plot saved beside it and linked)."""
    rows, c = result.rows, result.config
    passed = sum(r.passed() for r in rows)
    plot = []
    if out is not None and any(r.report for r in rows):
        from ft_core.bench.plots import markdown_image

        plot = [markdown_image(times_plot(rows, out), "seconds to detection, first tentative output and caught up"), ""]
    by_fault = {f: [r.report.detection_s for r in rows if r.fault == f and r.report and r.report.detection_s is not None]
                for f in FAULTS}
    detection = "; ".join(f"{f}: {min(v):.1f}-{max(v):.1f} s" for f, v in by_fault.items() if v)
    return "\n".join([
        f"# Drills across hosts: host down and network partition ({len(rows)} drills of `{c.pipeline}`)", "",
        f"Produced by `{result.command}` from {result.started}; {os.cpu_count()} cores, load average "
        f"{result.load_at_start:.1f} at the start (times are wall-clock).", "",
        "Each drill runs on a fresh Spark standalone cluster whose masters and workers are separate network hosts "
        "(Linux network namespaces on a private bridge, `198.18.<subnet>.0/24`); the drivers, the input feed and the "
        "measurements run on this machine, another host on the bridge. The primary's workers are all in the failing "
        f"rack; the replica (the structure-aware plan for {c.ratio:.0%} of the tasks) runs on the standby host. "
        "*host-down*: every process on the rack's hosts is killed and their links cut (they answer nothing); "
        "*partition*: their links are cut while the worker and its executors keep running. The rack is given back "
        f"{c.new_capacity_after_s:.0f} s after the fault (host-down: its workers on new hosts of the rack; partition: "
        "its links healed). Detection: seconds until the "
        "master lists the rack's workers dead. Times are seconds from the fault.", "",
        "| drill | rack | fault | detection (s) | tentative accuracy | first tentative (s) | caught up (s) | lost | "
        "dup | output = reference | took (s) | pass |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|", *(_row(r) for r in rows), "", *plot,
        f"**{passed} of {len(rows)} passed** (target: every drill with 0 lost, 0 duplicated windows and output equal "
        f"to the reference){': met' if passed == len(rows) == c.drills else ': not met'}. Detection by fault: "
        f"{detection or '-'}.", "",
        f"Parameters: `{' '.join(c.params)}`.", ""])


def times_plot(rows: list[PartitionRow], out: Path) -> Path:
    from ft_core.bench.plots import grouped_bars, new_figure, save_next_to

    fig, ax = new_figure("Drills across hosts", "drill (rack, fault)", "seconds from the fault")
    groups = [f"{r.drill}: {r.domain[-1]} {r.fault}" for r in rows]
    grouped_bars(ax, groups, {
        "detected": [r.report.detection_s if r.report else None for r in rows],
        "first tentative": [r.report.time_to_first_tentative_s if r.report else None for r in rows],
        "caught up": [r.report.time_to_caught_up_s if r.report else None for r in rows]})
    return save_next_to(fig, out, "times")
