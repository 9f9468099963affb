"""Task rates of a pipeline's topology: records per second each task represents, expected or measured.

Problem: the planners weigh tasks by their rates (paper 000's OF weighs sinks by their output rates),
so the document must say how much of the input each task stands for. A task's *represented rate* is
the rate of source records whose key path passes through it:

- a source operator's task: its input records per second (measured from the per-task counts of
  :mod:`spark_jobs.pipeline.metrics`, or the sample input's model, or 1.0 each when nothing is known);
- downstream, along each input stream: ``one_to_one`` passes a task's rate on, ``merge`` sums the
  upstream tasks that feed a task, ``split`` divides an upstream task's rate among its targets, and a
  ``full`` stream gives task ``d`` the upstream total times ``d``'s share of the operator's input
  (measured shares when known, else ``1 / p``); an operator with several inputs (a union or a join)
  adds them up.

Complexity: O(tasks x inputs).

    >>> from spark_jobs.workloads.topk import pipeline
    >>> w = pipeline.bind(["p1=4", "p2=2"])
    >>> r = represented_rates(w, {"O1[0]": 1.0, "O1[1]": 2.0, "O1[2]": 3.0, "O1[3]": 4.0})
    >>> r["O2[0]"], r["O2[1]"], r["O3[0]"]
    (3.0, 7.0, 10.0)
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_jobs.pipeline.definition import Workload


def represented_rates(workload: Workload, source_rates: dict[str, float],
                      shares: dict[str, float] | None = None) -> dict[str, float]:
    """Every task's represented rate from the source operators' task rates (see the module docstring)."""
    rates: dict[str, float] = {}
    for op in workload.operators():
        own = [0.0] * op.parallelism
        for k in range(op.parallelism):
            own[k] += source_rates.get(f"{op.name}[{k}]", 0.0)
        for up_name in workload.upstream(op.name):
            up = workload.operator(up_name)
            up_rates = [rates[f"{up_name}[{k}]"] for k in range(up.parallelism)]
            for k, value in enumerate(_along(workload.partitioning(up_name, op.name), up_rates, op.name,
                                             op.parallelism, shares)):
                own[k] += value
        for k in range(op.parallelism):
            rates[f"{op.name}[{k}]"] = own[k]
    return rates


def _along(partitioning: str, up_rates: list[float], down: str, p_down: int, shares: dict[str, float] | None) -> list[float]:
    p_up = len(up_rates)
    out = [0.0] * p_down
    if partitioning in ("one_to_one", "merge"):
        for k, r in enumerate(up_rates):
            out[k * p_down // p_up] += r
    elif partitioning == "split":
        m = p_down // p_up
        for k, r in enumerate(up_rates):
            for j in range(k * m, k * m + m):
                out[j] += r / m
    else:  # full
        total = sum(up_rates)
        for j in range(p_down):
            out[j] = total * _share(shares, f"{down}[{j}]", p_down)
    return out


def _share(shares: dict[str, float] | None, task: str, p: int) -> float:
    return shares[task] if shares and task in shares else 1.0 / p


def full_substreams(workload: Workload, rates: dict[str, float], shares: dict[str, float] | None) -> list[dict[str, Any]]:
    """Explicit substream rates for ``full`` streams with measured shares (the document's default
    divides a task's rate equally among its targets, which a skewed key would make untrue)."""
    out = []
    for up, down in workload.stream_pairs():
        if workload.partitioning(up, down) != "full":
            continue
        p_down = workload.parallelism(down)
        for k in range(workload.parallelism(up)):
            for j in range(p_down):
                out.append({"from": f"{up}[{k}]", "to": f"{down}[{j}]",
                            "rate": round(rates.get(f"{up}[{k}]", 0.0) * _share(shares, f"{down}[{j}]", p_down), 6)})
    return out


def measured(records: list[dict[str, Any]], workload: Workload) -> tuple[dict[str, float], dict[str, float]]:
    """(source task rates, input shares) from metrics lines: each source operator task's input records per
    wall-clock second (first batch start to last batch end), and each task's share of its operator's
    input rows over the run."""
    if not records:
        return {}, {}
    starts = [datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")).timestamp() for r in records]
    last = max(range(len(records)), key=lambda i: starts[i])
    elapsed = max(starts[last] + records[last]["batch_duration_ms"] / 1000 - min(starts), 1e-9)
    totals: dict[str, int] = defaultdict(int)
    for rec in records:
        for task, counts in rec["tasks"].items():
            totals[task] += counts.get("in", 0)  # input rows: what a task stands for
    sources = {t: totals.get(t, 0) / elapsed for op in workload.source_operators() for t in workload.operator(op).task_ids()}
    shares: dict[str, float] = {}
    for op in workload.operators():
        total = sum(totals.get(t, 0) for t in op.task_ids())
        if total > 0:
            shares.update({t: totals.get(t, 0) / total for t in op.task_ids()})
    return sources, shares


def measured_topology(records: list[dict[str, Any]], workload: Workload, name: str | None = None):
    """The topology document with the rates a run measured (the expected ones when it measured none)."""
    sources, shares = measured(records, workload)
    if not sources:
        return workload.topology(name=name)
    return workload.topology(represented_rates(workload, sources, shares), name=name, shares=shares)
