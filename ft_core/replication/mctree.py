"""Minimal complete trees (MC-trees): counting without enumeration, and lazy enumeration.

Problem: an MC-tree (paper 000, Section III-B, Definition 1) is a tree-shaped sub-DAG whose leaves
are source tasks and whose root is a sink task, and which keeps producing output iff all its tasks
are alive. Through an independent task one upstream substream is enough; through a join
(correlated) task one subtree per input stream is needed. Fig. 1 of the paper has 16 MC-trees with
O3 independent and 8 with O3 a join.

Each MC-tree also carries a *weight*: the share of the OF it keeps alive. Expanding Eq. 1-4 for
alive/failed indicators gives ``OF(P) = sum_trees weight(tree) * [tree ⊆ P]`` when every task
outside ``P`` has failed, which makes the replication problem a set-union knapsack over MC-trees.

Algorithms:
- :func:`count_mc_trees`: dynamic programming over tasks in topological order with Python integers
  (exact for astronomically many trees): sources count 1, independent tasks sum their upstream
  counts, joins multiply per-stream sums. O(T + S) big-integer operations.
- :func:`iter_mc_trees`: depth-first expansion yielding one tree at a time (lazy; memory
  proportional to the topology's depth, not to the number of trees).
- :func:`weighted_tree_sets`: distinct task sets with summed weights, stopping with an error past a
  limit: the set-union knapsack's items, to check OF against on small topologies (the exact planner
  itself never enumerates trees, see :mod:`ft_core.replication.alive_model`).
- :func:`smallest_mc_tree`: an MC-tree with the fewest tasks, the least budget that keeps any output
  (issue 37). The same dynamic programme as the count, keeping per task its smallest subtree (one
  upstream subtree through an independent task, the union of one per stream through a join): O(T + S)
  set unions. That is the minimum whenever the input streams of every join have no ancestor operator in
  common (their subtrees cannot share tasks); otherwise trees are enumerated when there are at most
  ``limit`` of them, and past that the tree found is reported as not proven smallest.
- :func:`completes_mc_tree`: whether a set of tasks contains a whole MC-tree, O(T + S) without
  enumeration (the same programme over booleans).

Example::

    >>> from ft_core.samples import load_sample
    >>> count_mc_trees(load_sample("fig1")), count_mc_trees(load_sample("fig2-join"))
    (16, 4)
    >>> g = load_sample("q1-topk")
    >>> tree, proven = smallest_mc_tree(g)
    >>> [g.task_ids[i] for i in sorted(tree)], proven
    (['O1[0]', 'O2[0]', 'O3[0]'], True)
    >>> completes_mc_tree(g, tree), completes_mc_tree(g, {g.index["O1[0]"], g.index["O3[0]"]})
    (True, False)
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

from ft_core.errors import InputError
from ft_core.topology.task_graph import InputStream, TaskGraph, rate_shares


def count_mc_trees(graph: TaskGraph) -> int:
    """Number of MC-trees of the topology, summed over sink tasks."""
    counts = count_per_task(graph)
    return sum(counts[i] for i in graph.sinks)


def count_per_task(graph: TaskGraph) -> list[int]:
    """Number of MC-subtrees rooted at each task (index order)."""
    counts = [1] * graph.n
    for i in range(graph.n):
        streams = graph.inputs[i]
        if not streams:
            continue
        sums = [sum(counts[u] for u in s.upstream) for s in streams]
        if graph.correlated[i]:
            total = 1
            for value in sums:
                total *= value
        else:
            total = sum(sums)
        counts[i] = total
    return counts


def iter_mc_trees(graph: TaskGraph, sink: int | None = None) -> Iterator[tuple[frozenset[int], float]]:
    """Yield ``(tasks, weight)`` for each MC-tree (of one sink, or of all sinks in index order).

    ``weight`` is the tree's share of the OF: the sum of the weights of all trees equals 1 when
    every rate is positive.
    """
    sinks = graph.sinks if sink is None else [sink]
    sink_weights = rate_shares([graph.rate[s] for s in graph.sinks])
    weight_of = dict(zip(graph.sinks, sink_weights))
    for s in sinks:
        for tasks, w in _subtrees(graph, s):
            yield frozenset(tasks), weight_of[s] * w


def weighted_tree_sets(graph: TaskGraph, limit: int) -> dict[frozenset[int], float]:
    """Distinct MC-tree task sets with their summed weights; InputError past ``limit`` trees."""
    total = count_mc_trees(graph)
    if total > limit:
        raise InputError(f"topology {graph.topology.name!r} has {total} MC-trees, more than the limit of {limit}")
    sets: dict[frozenset[int], float] = {}
    for tasks, w in iter_mc_trees(graph):
        sets[tasks] = sets.get(tasks, 0.0) + w
    return sets


def smallest_mc_tree(graph: TaskGraph, limit: int = 10_000) -> tuple[frozenset[int], bool]:
    """An MC-tree with the fewest tasks (ties: the smallest task indices), and whether it is proven the
    smallest (see the module docstring)."""
    best: list[frozenset[int]] = []
    for i in range(graph.n):
        streams = graph.inputs[i]
        if not streams:
            best.append(frozenset((i,)))
        elif graph.correlated[i]:
            best.append(frozenset((i,)).union(*(min((best[u] for u in s.upstream), key=_tree_key) for s in streams)))
        else:
            best.append(frozenset((i,)) | min((best[u] for s in streams for u in s.upstream), key=_tree_key))
    tree = min((best[s] for s in graph.sinks), key=_tree_key)
    if not _joins_may_share_tasks(graph):
        return tree, True
    if count_mc_trees(graph) <= limit:
        return min((t for t, _ in iter_mc_trees(graph)), key=_tree_key), True
    return tree, False


def completes_mc_tree(graph: TaskGraph, tasks: set[int] | frozenset[int]) -> bool:
    """Whether ``tasks`` contain every task of at least one MC-tree (some sink keeps producing output)."""
    whole = [False] * graph.n
    for i in range(graph.n):
        if i not in tasks:
            continue
        streams = graph.inputs[i]
        ready = [any(whole[u] for u in s.upstream) for s in streams]
        whole[i] = not streams or (all(ready) if graph.correlated[i] else any(ready))
    return any(whole[s] for s in graph.sinks)


def _tree_key(tasks: frozenset[int]) -> tuple[int, list[int]]:
    return len(tasks), sorted(tasks)


def _joins_may_share_tasks(graph: TaskGraph) -> bool:
    """Whether two input streams of some join descend from a common operator (their subtrees may meet)."""
    topo = graph.topology
    ancestors: dict[str, set[str]] = {}
    for op in graph.operator_order:
        ups = [s.source for s in topo.streams if s.target == op]
        ancestors[op] = set(ups).union(*(ancestors[u] for u in ups))
        if topo.operator(op).input_model == "correlated":
            seen: set[str] = set()
            for u in ups:
                line = ancestors[u] | {u}
                if line & seen:
                    return True
                seen |= line
    return False


def _subtrees(graph: TaskGraph, task: int) -> Iterator[tuple[tuple[int, ...], float]]:
    streams = graph.inputs[task]
    if not streams:
        yield (task,), 1.0
        return
    if graph.correlated[task]:
        yield from _join_subtrees(graph, task, streams)
    else:
        shares = rate_shares([r for s in streams for r in s.rates])
        ups = [u for s in streams for u in s.upstream]
        for u, share in zip(ups, shares):
            for tasks, w in _subtrees(graph, u):
                yield (task, *tasks), share * w


def _join_subtrees(graph: TaskGraph, task: int, streams: list[InputStream]) -> Iterator[tuple[tuple[int, ...], float]]:
    branches = [
        [(u, share) for u, share in zip(s.upstream, rate_shares(list(s.rates)))] for s in streams
    ]
    for choice in product(*branches):
        parts = [list(_subtrees(graph, u)) for u, _ in choice]
        base = 1.0
        for _, share in choice:
            base *= share
        for combo in product(*parts):
            tasks = {task}
            w = base
            for sub_tasks, sub_w in combo:
                tasks.update(sub_tasks)
                w *= sub_w
            yield tuple(sorted(tasks)), w
