"""Expansion of a topology document into its task graph with substream rates.

Problem: planners work on tasks, not operators. Each stream between operators becomes substreams
between tasks according to its partitioning, each carrying a rate (paper 000, Section II-A and the
rate rule of the topology contract): unless given explicitly, a task's output rate is divided equally
among its targets *within each downstream stream* (``one_to_one`` and ``merge``: the whole rate;
``split`` and ``full``: rate / number of targets). Explicit ``substreams`` for a pair of operators
replace the rule for that stream entirely.

Algorithm: operators are ordered topologically (Kahn, ties in document order) and tasks numbered in
that order, so iterating task indices ascending is a topological order of the task DAG; each stream
is expanded by its partitioning. Complexity O(T + S) for T tasks and S substreams.

Example::

    >>> from ft_core.topology.document import parse_topology
    >>> g = build_task_graph(parse_topology({"operators": [
    ...     {"name": "A", "parallelism": 2}, {"name": "B", "parallelism": 1}],
    ...     "streams": [{"from": "A", "to": "B", "partitioning": "merge"}]}))
    >>> g.task_ids, g.sinks, [s.upstream for s in g.inputs[2]]
    (['A[0]', 'A[1]', 'B[0]'], [2], [(0, 1)])
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ft_core.topology.document import Stream, Topology, split_task_id

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True, slots=True)
class InputStream:
    """The substreams one task receives from one upstream operator."""

    operator: str
    upstream: tuple[int, ...]
    rates: tuple[float, ...]

    @property
    def total_rate(self) -> float:
        return sum(self.rates)


@dataclass(slots=True)
class TaskGraph:
    """Tasks numbered in topological order, with their input streams and rates (plain data)."""

    topology: Topology
    operator_order: list[str]
    task_ids: list[str]
    index: dict[str, int]
    operator_of: list[str]
    correlated: list[bool]
    rate: list[float]
    inputs: list[list[InputStream]]
    downstream: list[list[int]]
    tasks_of: dict[str, list[int]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.task_ids)

    @property
    def sinks(self) -> list[int]:
        """Tasks with no outgoing substream; their rates weigh Eq. 4."""
        return [i for i in range(self.n) if not self.downstream[i]]

    @property
    def sources(self) -> list[int]:
        """Tasks with no incoming substream."""
        return [i for i in range(self.n) if not self.inputs[i]]

    def upstream_closure(self, task: int) -> set[int]:
        """The task and everything upstream of it (Definition 1 of paper 003: a query partition)."""
        seen = {task}
        queue = deque([task])
        while queue:
            for stream in self.inputs[queue.popleft()]:
                for up in stream.upstream:
                    if up not in seen:
                        seen.add(up)
                        queue.append(up)
        return seen

    def indices(self, task_ids: list[str] | tuple[str, ...] | set[str], what: str = "task") -> set[int]:
        """Task ids to indices; an unknown id raises InputError naming it."""
        from ft_core.errors import InputError

        out = set()
        for tid in task_ids:
            if tid not in self.index:
                raise InputError(f"{what} {tid!r} is not a task of topology {self.topology.name!r}")
            out.add(self.index[tid])
        return out

    def to_networkx(self) -> nx.DiGraph:
        """The task DAG as a networkx graph: node attrs ``operator``, ``rate``; edge attr ``rate``."""
        import networkx as nx  # for analysis and drawing only; the planners work on the arrays

        g = nx.DiGraph(name=self.topology.name)
        for i, tid in enumerate(self.task_ids):
            g.add_node(tid, operator=self.operator_of[i], rate=self.rate[i], correlated=self.correlated[i])
        for i, streams in enumerate(self.inputs):
            for s in streams:
                for up, r in zip(s.upstream, s.rates):
                    g.add_edge(self.task_ids[up], self.task_ids[i], rate=r)
        return g


def build_task_graph(topology: Topology) -> TaskGraph:
    """Expand a validated topology into its :class:`TaskGraph`."""
    order = _operator_order(topology)
    task_ids = [f"{name}[{k}]" for name in order for k in range(topology.operator(name).parallelism)]
    index = {tid: i for i, tid in enumerate(task_ids)}
    operator_of = [split_task_id(t)[0] for t in task_ids]
    tasks_of: dict[str, list[int]] = defaultdict(list)
    for i, op in enumerate(operator_of):
        tasks_of[op].append(i)
    correlated = [topology.operator(op).input_model == "correlated" for op in operator_of]
    rate = [topology.task_rate(t) for t in task_ids]

    edges = _substream_edges(topology, index, rate)
    inputs, downstream = _assemble(len(task_ids), edges, operator_of)
    return TaskGraph(topology, order, task_ids, index, operator_of, correlated, rate, inputs, downstream, dict(tasks_of))


def _operator_order(topology: Topology) -> list[str]:
    names = [op.name for op in topology.operators]
    indeg = {n: 0 for n in names}
    succ: dict[str, list[str]] = {n: [] for n in names}
    for s in topology.streams:
        indeg[s.target] += 1
        succ[s.source].append(s.target)
    ready = deque(n for n in names if indeg[n] == 0)
    order = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for nxt in succ[node]:
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                ready.append(nxt)
    return order


def _substream_edges(topology: Topology, index: dict[str, int], rate: list[float]) -> list[tuple[int, int, float]]:
    explicit: dict[tuple[str, str], list[tuple[int, int, float]]] = defaultdict(list)
    for sub in topology.substreams:
        pair = (split_task_id(sub.source)[0], split_task_id(sub.target)[0])
        explicit[pair].append((index[sub.source], index[sub.target], sub.rate))
    edges: list[tuple[int, int, float]] = []
    for stream in topology.streams:
        pair = (stream.source, stream.target)
        if pair in explicit:
            edges.extend(explicit[pair])
        else:
            edges.extend(_rule_edges(topology, stream, index, rate))
    return edges


def _rule_edges(topology: Topology, stream: Stream, index: dict[str, int], rate: list[float]) -> list[tuple[int, int, float]]:
    n1 = topology.operator(stream.source).parallelism
    n2 = topology.operator(stream.target).parallelism
    edges = []
    for k in range(n1):
        u = index[f"{stream.source}[{k}]"]
        targets = partition_targets(stream.partitioning, k, n1, n2)
        share = rate[u] / len(targets)
        edges.extend((u, index[f"{stream.target}[{t}]"], share) for t in targets)
    return edges


def rate_shares(rates) -> list[float]:
    """Each rate's share of the total (Eq. 1/3 weights); equal shares when the total is zero."""
    rates = list(rates)
    total = sum(rates)
    if total > 0:
        return [r / total for r in rates]
    return [1.0 / len(rates)] * len(rates) if rates else []


def partition_targets(partitioning: str, k: int, n1: int, n2: int) -> list[int]:
    """Downstream task indices that upstream task ``k`` feeds under a partitioning."""
    if partitioning == "one_to_one":
        return [k]
    if partitioning == "split":
        m = n2 // n1
        return list(range(k * m, k * m + m))
    if partitioning == "merge":
        return [k // (n1 // n2)]
    return list(range(n2))


def _assemble(n: int, edges: list[tuple[int, int, float]], operator_of: list[str]):
    grouped: dict[int, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    downstream: list[list[int]] = [[] for _ in range(n)]
    for u, v, r in sorted(edges):
        grouped[v][operator_of[u]].append((u, r))
        downstream[u].append(v)
    inputs: list[list[InputStream]] = [[] for _ in range(n)]
    for v, by_op in grouped.items():
        inputs[v] = [
            InputStream(op, tuple(u for u, _ in subs), tuple(r for _, r in subs)) for op, subs in by_op.items()
        ]
    return inputs, downstream
