"""Interchangeable tasks: operators whose tasks only matter by how many of them are replicated.

Problem: full (shuffle) partitioning makes the tasks of an operator symmetric. When every task of
an operator ``V`` reads every task of ``U`` with the same substream shares (an *operator-level*
stream, e.g. a full stream under the rate rule of paper 000, Section II-A), all tasks of ``V`` see
one and the same input value from ``U``: the rate-weighted alive fraction of ``U``. If moreover every
stream in and out of ``V`` is operator-level, then under Eq. 1-4 a replicated task of ``V`` has the
same alive fraction ``F_V`` as any other, and each consumer (a downstream operator, or Eq. 4 when
``V``'s tasks are sinks) sees ``F_V`` times the summed shares of the replicated tasks. When the share
vectors of all consumers rank ``V``'s tasks in one common order, replicating the first ``k`` tasks in
that order is at least as good as any other ``k`` tasks for every consumer at once. The choice for
``V`` is then a count ``k_V`` and each consumer ``c`` sees ``rho_c(k_V) * F_V`` with
``rho_c(k) = sum of the first k shares``: exchanging individual tasks for counts removes the
symmetry that makes branch-and-bound enumerate equivalent plans (issue 19).

Algorithm: one pass over the task graph's input streams groups them by (upstream, downstream)
operator and checks that every downstream task reads all upstream tasks with equal shares; an
operator qualifies when all its in- and out-streams do, its tasks read identical inputs and one
order ranks every consumer's shares. O(T + S).

Example (Q1: 8 page tasks merge 2:1 into 4, then a full stream into one top-k task)::

    >>> from ft_core.samples import load_sample
    >>> groups = interchangeable_operators(load_sample("q1-topk"))
    >>> sorted(groups), groups["O3"].prefix_shares["sink"]
    (['O3'], (0.0, 1.0))
"""

from __future__ import annotations

from dataclasses import dataclass
from math import isclose

from ft_core.topology.task_graph import TaskGraph, rate_shares

SINK = "sink"  # the consumer name for Eq. 4's weights of an operator whose tasks are sinks


@dataclass(frozen=True, slots=True)
class InterchangeableOperator:
    """An operator whose replication is a count: ``order[:k]`` are the tasks to replicate for ``k``.

    ``prefix_shares[c][k]`` is ``rho_c(k)``: the summed shares (or Eq. 4 weights, for ``SINK``) of the
    first ``k`` tasks in ``order``, for each consumer ``c`` (a downstream operator or ``SINK``).
    """

    operator: str
    order: tuple[int, ...]
    prefix_shares: dict[str, tuple[float, ...]]


def operator_level_streams(graph: TaskGraph) -> dict[tuple[str, str], tuple[float, ...]]:
    """``(U, V) -> shares`` for every stream that all tasks of ``V`` read from all tasks of ``U`` alike.

    ``shares`` are aligned with ``graph.tasks_of[U]`` (Eq. 1's substream weights).
    """
    found: dict[tuple[str, str], tuple[float, ...] | None] = {}
    readers: dict[tuple[str, str], int] = {}
    for i in range(graph.n):
        v = graph.operator_of[i]
        for stream in graph.inputs[i]:
            key = (stream.operator, v)
            readers[key] = readers.get(key, 0) + 1
            if found.get(key, ()) is None:
                continue
            shares = tuple(rate_shares(stream.rates))
            whole = stream.upstream == tuple(graph.tasks_of[stream.operator])
            if not whole:
                found[key] = None
            elif key not in found:
                found[key] = shares
            elif not _same(found[key], shares):
                found[key] = None
    return {key: shares for key, shares in found.items()
            if shares is not None and readers[key] == len(graph.tasks_of[key[1]])}


def interchangeable_operators(graph: TaskGraph, streams: dict[tuple[str, str], tuple[float, ...]] | None = None
                              ) -> dict[str, InterchangeableOperator]:
    """The operators whose tasks are interchangeable up to a common rank order (see the module doc)."""
    streams = operator_level_streams(graph) if streams is None else streams
    inputs_of: dict[str, list[str]] = {op: [] for op in graph.tasks_of}
    outputs_of: dict[str, list[str]] = {op: [] for op in graph.tasks_of}
    for s in graph.topology.streams:
        inputs_of[s.target].append(s.source)
        outputs_of[s.source].append(s.target)
    sink_weight = dict(zip(graph.sinks, rate_shares([graph.rate[s] for s in graph.sinks])))
    found = {}
    for op, tasks in graph.tasks_of.items():
        if any((u, op) not in streams for u in inputs_of[op]) or any((op, w) not in streams for w in outputs_of[op]):
            continue
        if not _identical_inputs(graph, tasks):
            continue
        consumers = {w: streams[(op, w)] for w in outputs_of[op]}
        if not outputs_of[op]:
            consumers[SINK] = tuple(sink_weight[t] for t in tasks)
        position = {t: k for k, t in enumerate(tasks)}
        order = sorted(tasks, key=lambda t: (*(-v[position[t]] for v in consumers.values()), t))
        ranked = {c: [v[position[t]] for t in order] for c, v in consumers.items()}
        if not all(all(a >= b - 1e-12 for a, b in zip(vals, vals[1:])) for vals in ranked.values()):
            continue  # consumers disagree on which task matters most: no common order
        prefix = {}
        for c, vals in ranked.items():
            sums = [0.0]
            for val in vals:
                sums.append(sums[-1] + val)
            prefix[c] = tuple(sums)
        found[op] = InterchangeableOperator(op, tuple(order), prefix)
    return found


def _identical_inputs(graph: TaskGraph, tasks: list[int]) -> bool:
    first = graph.inputs[tasks[0]]
    return all(
        len(graph.inputs[t]) == len(first)
        and all(a.operator == b.operator and a.upstream == b.upstream and _same(rate_shares(a.rates), rate_shares(b.rates))
                and isclose(a.total_rate, b.total_rate, rel_tol=1e-9, abs_tol=1e-12)
                for a, b in zip(graph.inputs[t], first))
        for t in tasks[1:]
    )


def _same(a, b) -> bool:
    return len(a) == len(b) and all(isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a, b))
