"""Incremental OF of a growing replication set: the gain of adding tasks without a full recompute.

Problem: a planner that grows a replicated set ``P`` asks many times "how much does OF rise if I
also replicate these tasks?" (paper 000, the profit density of Algorithms 3-5). With every task
outside ``P`` failed, Eq. 1-4 read in *alive fractions* ``A = 1 - IL``:

- ``A_i = 0`` for ``i`` outside ``P``; ``A_i = 1`` for a replicated source;
- independent task: ``A_i = sum_u c_iu A_u`` (``c_iu`` = stream weight x substream share, Eq. 1/3);
- join task: ``A_i = prod_j sum_{u in stream j} s_ju A_u`` (Eq. 2);
- ``OF = sum_sinks w_s A_s`` (Eq. 4).

Algorithm: keep ``A`` and, per task and input group, the running sums ``S``. Adding a set ``C``
recomputes the tasks of ``C`` and pushes the change ``dA`` along out-edges, revisiting (in index
order, which is topological) only tasks in ``P`` or ``C`` whose input changed. :meth:`gain` does this
tentatively with dictionaries and discards it; :meth:`commit` writes it. Zero-rate streams use the
unweighted mean, exactly as :mod:`ft_core.replication.fidelity` does.

Complexity: building O(T + S); one gain or commit O(E_C log E_C) where E_C is the number of
substreams leaving the changed tasks (the affected part of ``P``'s downstream cone), not O(T + S).

Example::

    >>> from ft_core.samples import load_sample
    >>> state = IncrementalFidelity(load_sample("fig2-join"))
    >>> round(state.gain([1, 2, 4]), 4), state.commit([1, 2, 4]), round(state.of, 4)
    (0.4, None, 0.4)
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush

from ft_core.topology.task_graph import TaskGraph, rate_shares

_REL_EPS = 1e-12


class IncrementalFidelity:
    """Alive fractions of a replicated set that grows one committed batch at a time."""

    def __init__(self, graph: TaskGraph) -> None:
        n = graph.n
        self.n = n
        self.join = [False] * n
        self.source = [not graph.inputs[i] for i in range(n)]
        self.sums: list[list[float]] = [[0.0] for _ in range(n)]
        self.out: list[list[tuple[int, int, float]]] = [[] for _ in range(n)]
        for i in range(n):
            streams = graph.inputs[i]
            if not streams:
                continue
            if graph.correlated[i] and len(streams) > 1:
                self.join[i] = True
                self.sums[i] = [0.0] * len(streams)
                for g, s in enumerate(streams):
                    for u, share in zip(s.upstream, rate_shares(s.rates)):
                        self.out[u].append((i, g, share))
            else:
                weights = rate_shares([s.total_rate for s in streams])
                for s, sw in zip(streams, weights):
                    for u, share in zip(s.upstream, rate_shares(s.rates)):
                        self.out[u].append((i, 0, sw * share))
        sinks = graph.sinks
        self.weight = [0.0] * n
        for s, w in zip(sinks, rate_shares([graph.rate[s] for s in sinks])):
            self.weight[s] = w
        self.alive = [0.0] * n
        self.chosen = bytearray(n)
        self.of = 0.0

    def gain(self, tasks) -> float:
        """OF increase if ``tasks`` (not yet chosen) were added; the state is unchanged."""
        return self._propagate(tasks, commit=False)

    def commit(self, tasks) -> None:
        """Add ``tasks`` to the replicated set."""
        self.of += self._propagate(tasks, commit=True)

    def _propagate(self, tasks, commit: bool) -> float:
        chosen, alive, sums, out, join, source, weight = (
            self.chosen, self.alive, self.sums, self.out, self.join, self.source, self.weight)
        new = set(tasks)
        heap = list(new)
        heapify(heap)
        delta_sums: dict[tuple[int, int], float] = {}
        new_alive: dict[int, float] = {}
        done: set[int] = set()
        gain = 0.0
        while heap:
            i = heappop(heap)
            if i in done:
                continue
            done.add(i)
            if source[i]:
                a = 1.0
            elif join[i]:
                a = 1.0
                for g, value in enumerate(sums[i]):
                    a *= value + delta_sums.get((i, g), 0.0)
            else:
                a = sums[i][0] + delta_sums.get((i, 0), 0.0)
            d = a - alive[i]
            if abs(d) <= _REL_EPS * abs(a):  # relative: OF of wide full chains is tiny but not zero
                continue
            new_alive[i] = a
            gain += weight[i] * d
            for v, g, c in out[i]:
                key = (v, g)
                delta_sums[key] = delta_sums.get(key, 0.0) + c * d
                if (chosen[v] or v in new) and v not in done:
                    heappush(heap, v)
        if commit:
            for i in new:
                chosen[i] = 1
            for i, a in new_alive.items():
                alive[i] = a
            for (v, g), d in delta_sums.items():
                sums[v][g] += d
        return gain
