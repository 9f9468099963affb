"""Information loss and output fidelity (OF) of a topology under a set of failed tasks.

Problem: during a correlated failure, tasks without an active replica stop; how faithful are the
tentative outputs of the rest? Paper 000, Section III-A, Eq. 1-4:

- a failed task loses everything, ``IL(i) = 1``; an alive source loses nothing, ``IL(i) = 0``;
- Eq. 1, an input stream's loss is the rate-weighted loss of its substreams;
- Eq. 2, a *correlated* (join) task: ``IL(i) = 1 - prod_j (1 - IL_in(i, j))``;
- Eq. 3, an *independent* task: ``IL(i) = sum_j lambda_j IL_in(i, j) / sum_j lambda_j``;
- Eq. 4, ``OF = 1 - sum_sinks lambda_i IL(i) / sum_sinks lambda_i``.

Where a stream (or the set of sinks) carries zero total rate the weights are undefined; we then
use the unweighted mean, so a zero-rate topology still has a defined OF.

The baseline metric IC (internal completeness, reference [4] of the paper, Section VI-B) is the
fraction of tuples processed by all tasks under the failure compared with no failure, computed as if
every operator were independent: it ignores the correlation of join inputs, which is why it
mispredicts join queries.

Algorithm: one pass over tasks in topological order. Complexity O(T + S).

Example (paper Fig. 2: t31 reads O1 = {t11: 1, t12: 2} and O2 = {t21: 3, t22: 2}; t22 fails)::

    >>> from ft_core.samples import load_sample
    >>> g = load_sample("fig2-join")
    >>> round(information_loss(g, {g.index["O2[1]"]})[g.index["O3[0]"]], 6)
    0.4
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from ft_core.topology.task_graph import InputStream, TaskGraph


class FidelityReport(BaseModel):
    """What ``ftops fidelity`` prints."""

    output_fidelity: float
    internal_completeness: float
    information_loss: dict[str, float]


def information_loss(graph: TaskGraph, failed: Iterable[int], *, ignore_correlation: bool = False) -> list[float]:
    """``IL_out`` of every task (index order) when the tasks in ``failed`` are down (Eq. 1-3)."""
    down = set(failed)
    il = [0.0] * graph.n
    for i in range(graph.n):
        if i in down:
            il[i] = 1.0
            continue
        streams = graph.inputs[i]
        if not streams:
            continue
        losses = [_stream_loss(s, il) for s in streams]
        if graph.correlated[i] and not ignore_correlation:
            alive = 1.0
            for loss in losses:
                alive *= 1.0 - loss
            il[i] = 1.0 - alive
        else:
            il[i] = _weighted_mean(losses, [s.total_rate for s in streams])
    return il


def output_fidelity(graph: TaskGraph, failed: Iterable[int]) -> float:
    """Eq. 4: OF of the sink outputs when the tasks in ``failed`` are down."""
    il = information_loss(graph, failed)
    sinks = graph.sinks
    return 1.0 - _weighted_mean([il[i] for i in sinks], [graph.rate[i] for i in sinks])


def replicated_fidelity(graph: TaskGraph, replicated: Iterable[int]) -> float:
    """The PPA objective: OF when every task outside ``replicated`` has failed (the worst case)."""
    keep = set(replicated)
    return output_fidelity(graph, (i for i in range(graph.n) if i not in keep))


def internal_completeness(graph: TaskGraph, failed: Iterable[int]) -> float:
    """IC: tuples processed by all tasks under the failure / without it (correlation ignored)."""
    down = set(failed)
    il = information_loss(graph, down, ignore_correlation=True)
    expected = processed = 0.0
    for i in range(graph.n):
        volume = sum(s.total_rate for s in graph.inputs[i]) if graph.inputs[i] else graph.rate[i]
        expected += volume
        if i not in down:
            if graph.inputs[i]:
                processed += sum(r * (1.0 - il[u]) for s in graph.inputs[i] for u, r in zip(s.upstream, s.rates))
            else:
                processed += volume
    return processed / expected if expected > 0 else (0.0 if down else 1.0)


def fidelity_report(graph: TaskGraph, failed: Iterable[int]) -> FidelityReport:
    down = set(failed)
    il = information_loss(graph, down)
    sinks = graph.sinks
    of = 1.0 - _weighted_mean([il[i] for i in sinks], [graph.rate[i] for i in sinks])
    return FidelityReport(
        output_fidelity=of,
        internal_completeness=internal_completeness(graph, down),
        information_loss={tid: il[i] for i, tid in enumerate(graph.task_ids)},
    )


def _stream_loss(stream: InputStream, il: list[float]) -> float:
    return _weighted_mean([il[u] for u in stream.upstream], stream.rates)


def _weighted_mean(values: list[float], weights: Iterable[float]) -> float:
    weights = list(weights)
    total = sum(weights)
    if total > 0:
        return sum(v * w for v, w in zip(values, weights)) / total
    return sum(values) / len(values) if values else 0.0
