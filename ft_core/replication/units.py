"""Units and segments: the pieces the structure-aware planner chains into MC-trees (paper 000, IV-C1).

Problem: even a structured sub-topology can have very many MC-trees (a task with N_in input and
N_out output substreams lies on at least N_in * N_out of them; a join of N_k and N_j substreams on
N_k * N_j). The paper cuts it into *units*, whose MC-trees (*segments*) stay few, and builds complete
MC-trees as chains of connected segments of neighbouring units.

Unit boundaries (operator-level streams that are cut):

- every stream between different sub-topologies (:mod:`ft_core.replication.sub_topology`);
- paper rule 1: an operator with a Merge input and a Split output: its Merge inputs are cut
  (Fig. 3, the boundary between O1 and O2);
- paper rule 2: a join operator with a Merge input: its Merge inputs are cut (Fig. 3, O1 | O3);
- our rule 3: a Full stream inside a structured sub-topology (into its output operator) is cut.
  Both sides connect to every task across it, so keeping it inside one unit would multiply the
  unit's segments by the upstream parallelism without adding any choice;
- our rule 4 (a guard the paper does not need for its examples): if a unit still has more than
  ``max(64, 4 x its tasks)`` segments (e.g. a Merge reaching a Split through one_to_one streams),
  all its non-one_to_one streams are cut;
- in a *full* sub-topology every operator is its own unit (Algorithm 4 works per operator) and a
  segment is a single task.

Units are the connected components of operators over the remaining streams. A *segment* is an
MC-tree of its unit treated as an independent topology: its root is a unit output task (a sink
or a task with a downstream task in another unit); at a task whose input comes from another unit it stops with a
*requirement*: an independent task needs any one of its cross-unit upstream tasks, a join task one
upstream task of each cross-unit input stream.

Each segment carries ``coef``: the alive fraction it delivers at its root when its requirements are
met (product of Eq. 1-3 shares along it), and ``weight = value[root] * coef`` where ``value`` is the
static OF sensitivity of a task (d OF / d A with every task alive: sinks' Eq. 4 weights pushed
upstream by the shares). ``weight`` ranks segments as the paper's ``max_of`` does. ``potential``
is, per task, the largest alive fraction one MC-subtree rooted at it can deliver (Alg. 4's
``delta_ij`` ranking inside a full operator is ``value``).

Complexity: O(T + S) for the cuts, values and potentials, plus the size of the segments, which the
cuts keep O(T) per unit (at most ``max(64, 4 x tasks)`` segments of at most N tasks each).

Example (q2-incidents: O1 -merge-> O3 (join) is cut by rule 2, so O1 and O2+O3+O4 are two units)::

    >>> from ft_core.samples import load_sample
    >>> d = build_units(load_sample("q2-incidents"))
    >>> [u.operators for u in d.units]
    [('O2', 'O3', 'O4'), ('O1',)]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ft_core.replication.sub_topology import SubTopology, decompose_topology
from ft_core.topology.task_graph import TaskGraph, rate_shares

SEGMENT_FACTOR = 4
SEGMENT_FLOOR = 64


@dataclass(frozen=True, slots=True)
class Requirement:
    """Task ``task`` needs one of ``upstream`` (ordered best first by static score) alive."""

    task: int
    upstream: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Segment:
    id: int
    unit: int
    root: int
    tasks: tuple[int, ...]
    requirements: tuple[int, ...]  # indices into UnitDecomposition.requirements
    coef: float
    weight: float


@dataclass(frozen=True, slots=True)
class Unit:
    id: int
    sub_topology: int
    kind: str  # "full" or "structured", the kind of its sub-topology
    operators: tuple[str, ...]
    tasks: tuple[int, ...]


@dataclass(slots=True)
class UnitDecomposition:
    sub_topologies: list[SubTopology]
    units: list[Unit]
    unit_of: list[int]
    segments: list[Segment]
    requirements: list[Requirement]
    value: list[float]
    potential: list[float]
    coefficient: list[dict[int, float]]
    segments_by_root: dict[int, list[int]] = field(default_factory=dict)
    segments_by_requirement_task: dict[int, list[int]] = field(default_factory=dict)
    cut: set[tuple[str, str]] = field(default_factory=set)


def build_units(graph: TaskGraph, subs: list[SubTopology] | None = None) -> UnitDecomposition:
    """Cut every sub-topology into units and enumerate their segments (see the module docstring)."""
    topo = graph.topology
    subs = decompose_topology(topo) if subs is None else subs
    sub_of = {op: k for k, s in enumerate(subs) for op in s.operators}
    partitioning = {(s.source, s.target): s.partitioning for s in topo.streams}
    ins: dict[str, list[str]] = {op.name: [] for op in topo.operators}
    outs: dict[str, list[str]] = {op.name: [] for op in topo.operators}
    for s in topo.streams:
        ins[s.target].append(s.source)
        outs[s.source].append(s.target)

    cut: set[tuple[str, str]] = set()
    for (u, v), part in partitioning.items():
        if sub_of[u] != sub_of[v] or subs[sub_of[v]].kind == "full" or part == "full":
            cut.add((u, v))
    for op in topo.operators:
        name = op.name
        if subs[sub_of[name]].kind == "full":
            continue
        merge_in = [u for u in ins[name] if partitioning[(u, name)] == "merge" and (u, name) not in cut]
        split_out = any(partitioning[(name, d)] == "split" and (name, d) not in cut for d in outs[name])
        is_join = op.input_model == "correlated" and len(ins[name]) > 1
        if merge_in and (split_out or is_join):
            cut.update((u, name) for u in merge_in)

    coefficient, groups = _coefficients(graph)
    value = _values(graph, coefficient)
    potential = _potentials(graph, coefficient, groups)
    while True:
        units, unit_of = _components(graph, subs, sub_of, cut)
        oversized = [u for u in units if u.kind == "structured" and
                     _segment_count(graph, u, unit_of) > max(SEGMENT_FLOOR, SEGMENT_FACTOR * len(u.tasks))]
        if not oversized:
            break
        before = len(cut)
        for u in oversized:
            members = set(u.operators)
            cut.update((a, b) for (a, b), p in partitioning.items() if a in members and b in members and p != "one_to_one")
        if len(cut) == before:
            break

    d = UnitDecomposition(subs, units, unit_of, [], [], value, potential, coefficient, cut=cut)
    _enumerate_segments(graph, d, groups)
    return d


def _coefficients(graph: TaskGraph):
    """Per task: upstream -> coefficient (independent: stream weight x share; join: share in its stream)."""
    coefficient: list[dict[int, float]] = [{} for _ in range(graph.n)]
    groups: list[list[tuple[int, ...]]] = [[] for _ in range(graph.n)]
    for i in range(graph.n):
        streams = graph.inputs[i]
        if not streams:
            continue
        join = graph.correlated[i] and len(streams) > 1
        weights = [1.0] * len(streams) if join else rate_shares([s.total_rate for s in streams])
        for s, sw in zip(streams, weights):
            for u, share in zip(s.upstream, rate_shares(s.rates)):
                coefficient[i][u] = sw * share
            groups[i].append(s.upstream)
        if not join:
            groups[i] = [tuple(u for g in groups[i] for u in g)]
    return coefficient, groups


def _values(graph: TaskGraph, coefficient: list[dict[int, float]]) -> list[float]:
    sinks = graph.sinks
    value = [0.0] * graph.n
    for s, w in zip(sinks, rate_shares([graph.rate[s] for s in sinks])):
        value[s] = w
    for i in range(graph.n - 1, -1, -1):
        vi = value[i]
        if vi:
            for u, c in coefficient[i].items():
                value[u] += c * vi
    return value


def _potentials(graph: TaskGraph, coefficient, groups) -> list[float]:
    pot = [1.0] * graph.n
    for i in range(graph.n):
        if not groups[i]:
            continue
        p = 1.0
        for g in groups[i]:
            p *= max(coefficient[i][u] * pot[u] for u in g)
        pot[i] = p
    return pot


def _components(graph: TaskGraph, subs, sub_of, cut):
    parent = {op: op for op in graph.operator_order}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for s in graph.topology.streams:
        if (s.source, s.target) not in cut:
            parent[find(s.source)] = find(s.target)
    groups: dict[str, list[str]] = {}
    for op in reversed(graph.operator_order):  # units listed from the sinks upstream
        groups.setdefault(find(op), []).append(op)
    units: list[Unit] = []
    unit_of = [0] * graph.n
    for ops in groups.values():
        ops_sorted = tuple(op for op in graph.operator_order if op in ops)
        tasks = tuple(t for op in ops_sorted for t in graph.tasks_of[op])
        uid = len(units)
        sub = sub_of[ops_sorted[0]]
        units.append(Unit(uid, sub, subs[sub].kind, ops_sorted, tasks))
        for t in tasks:
            unit_of[t] = uid
    return units, unit_of


def _segment_count(graph: TaskGraph, unit: Unit, unit_of: list[int]) -> int:
    count: dict[int, int] = {}
    total = 0
    for i in unit.tasks:  # index order is topological
        streams = graph.inputs[i]
        inner = [s for s in streams if unit_of[s.upstream[0]] == unit.id]
        if graph.correlated[i] and len(streams) > 1:
            c = 1
            for s in inner:
                c *= sum(count[u] for u in s.upstream)
        else:
            c = sum(count[u] for s in inner for u in s.upstream) + (1 if len(inner) < len(streams) else 0)
            c = max(c, 1)
        count[i] = c
        if not graph.downstream[i] or any(unit_of[v] != unit.id for v in graph.downstream[i]):
            total += c
    return total


def _enumerate_segments(graph: TaskGraph, d: UnitDecomposition, groups) -> None:
    req_ids: dict[tuple[int, int], int] = {}
    coefficient, potential = d.coefficient, d.potential

    def requirement(i: int, key: int, ups: tuple[int, ...]) -> int:
        rid = req_ids.get((i, key))
        if rid is None:
            ranked = tuple(sorted(ups, key=lambda u: (-coefficient[i][u] * potential[u], u)))
            rid = req_ids[(i, key)] = len(d.requirements)
            d.requirements.append(Requirement(i, ranked))
        return rid

    for unit in d.units:
        uid = unit.id
        memo: dict[int, list[tuple[tuple[int, ...], tuple[int, ...], float]]] = {}
        for i in unit.tasks:
            streams = graph.inputs[i]
            if not streams:
                memo[i] = [((i,), (), 1.0)]
                continue
            join = graph.correlated[i] and len(streams) > 1
            if join:
                combos: list[tuple[tuple[int, ...], tuple[int, ...], float]] = [((i,), (), 1.0)]
                for g, s in enumerate(streams):
                    if d.unit_of[s.upstream[0]] == uid:
                        opts = [(t, r, coefficient[i][u] * c) for u in s.upstream for t, r, c in memo[u]]
                    else:
                        opts = [((), (requirement(i, g, s.upstream),), 1.0)]
                    combos = [(t1 + t2, r1 + r2, c1 * c2) for t1, r1, c1 in combos for t2, r2, c2 in opts]
                memo[i] = [(tuple(sorted(set(t))), r, c) for t, r, c in combos]
            else:
                opts = []
                boundary: list[int] = []
                for s in streams:
                    if d.unit_of[s.upstream[0]] == uid:
                        opts.extend(((i,) + t, r, coefficient[i][u] * c) for u in s.upstream for t, r, c in memo[u])
                    else:
                        boundary.extend(s.upstream)
                if boundary:
                    share = sum(coefficient[i][u] for u in boundary)
                    opts.append(((i,), (requirement(i, -1, tuple(boundary)),), share))
                memo[i] = opts
        for i in unit.tasks:
            if graph.downstream[i] and all(d.unit_of[v] == uid for v in graph.downstream[i]):
                continue
            for tasks, reqs, coef in memo[i]:
                sid = len(d.segments)
                d.segments.append(Segment(sid, uid, i, tasks, reqs, coef, d.value[i] * coef))
                d.segments_by_root.setdefault(i, []).append(sid)
                for task in {d.requirements[rid].task for rid in reqs}:
                    d.segments_by_requirement_task.setdefault(task, []).append(sid)
        memo.clear()
    for lists in (d.segments_by_root, d.segments_by_requirement_task):
        for key, sids in lists.items():
            sids.sort(key=lambda s: (-d.segments[s].weight, s))
