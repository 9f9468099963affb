"""Decomposition of a topology into *full* and *structured* sub-topologies (paper 000, IV-C3).

Problem: MC-trees multiply across Full partitionings (a chain of k Full operators has prod M_i
trees), so the structure-aware planner (:mod:`ft_core.replication.structure_aware`) works on pieces:

- a *structured* sub-topology has Full partitioning only into its output operator; its other
  streams are one_to_one, split or merge;
- a *full* sub-topology has Full partitioning on every internal stream.

Neighbouring sub-topologies are joined by Full streams, so that every task on one side feeds every
task on the other and the choice of tasks on each side is independent of the other side.

Algorithm (the paper's DFS from the sink): a start-point set ``SP`` holds the sink operators. Pick
an operator ``O_s`` from ``SP``, decide the kind of its sub-topology, and search upstream from it;
an operator reached through an incompatible stream is not added but put into ``SP`` (it becomes the
output operator of a later sub-topology). Repeat until ``SP`` is empty. Choices where the paper is
silent (its Fig. 4 is not in the text):

1. *Kind.* The sub-topology started at ``O_s`` is full iff all of ``O_s``'s input streams are Full
   and at least one of its upstream operators also has only Full inputs (a Full chain of at least
   two hops); otherwise it is structured. A single Full hop into an output operator is structured
   (the paper's random "structured" topologies have exactly that shape), which keeps the number of
   sub-topologies minimal as the paper asks.
2. *Compatibility in a full sub-topology.* Upstream operator ``u`` of stream ``u -> v`` joins iff the
   stream is Full and every input stream of ``u`` is Full (source operators qualify). Otherwise
   ``u`` starts a new (structured) sub-topology whose output feeds the boundary Full stream.
3. *Compatibility in a structured sub-topology.* A non-Full stream always joins its upstream
   operator. A Full stream joins it only when it enters the start operator ``O_s`` (the output
   operator) and the upstream operator has no Full input of its own (else that Full chain becomes a
   full sub-topology of its own behind a Full boundary).
4. An operator already assigned (fan-out reached from two sub-topologies) stays where it was first
   assigned; the second stream becomes a boundary even if it is not Full. The planner evaluates the
   true OF, so such a boundary costs at most some planning quality, never correctness.

Complexity: O(N + E) for N operators and E streams (each operator and stream is visited once).

Example (paper Fig. 1, reconstructed: O1, O2 -one_to_one-> O3 -full-> O4; one structured piece)::

    >>> from ft_core.samples import load_sample
    >>> [(s.kind, s.operators) for s in decompose_topology(load_sample("fig1").topology)]
    [('structured', ('O1', 'O2', 'O3', 'O4'))]
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from ft_core.topology.document import Topology

SubTopologyKind = Literal["full", "structured"]


@dataclass(frozen=True, slots=True)
class SubTopology:
    """One piece of the decomposition.

    ``operators`` are in the topology's topological order; ``start`` is the operator the DFS started
    from (its output operator); ``outputs`` are the operators that are sinks of the topology or feed
    another sub-topology; ``internal`` are the streams ``(from, to)`` inside the piece.
    """

    kind: SubTopologyKind
    start: str
    operators: tuple[str, ...]
    outputs: tuple[str, ...]
    internal: tuple[tuple[str, str], ...]


def decompose_topology(topology: Topology) -> list[SubTopology]:
    """Split ``topology`` into full and structured sub-topologies (DFS from the sinks, see module doc)."""
    names = [op.name for op in topology.operators]
    ins: dict[str, list[tuple[str, str]]] = {n: [] for n in names}
    outs: dict[str, list[str]] = {n: [] for n in names}
    for s in topology.streams:
        ins[s.target].append((s.source, s.partitioning))
        outs[s.source].append(s.target)
    order = _topological_order(names, ins, outs)
    position = {n: k for k, n in enumerate(order)}

    def only_full_inputs(op: str) -> bool:
        return all(p == "full" for _, p in ins[op])

    assigned: dict[str, int] = {}
    starts = deque(n for n in names if not outs[n])
    pieces: list[tuple[SubTopologyKind, str, list[str]]] = []
    while starts:
        start = starts.popleft()
        if start in assigned:
            continue
        kind: SubTopologyKind = "full" if _is_full_chain(start, ins, only_full_inputs) else "structured"
        sub = len(pieces)
        members = [start]
        assigned[start] = sub
        stack = [start]
        while stack:
            v = stack.pop()
            for u, part in ins[v]:
                if u in assigned:
                    continue
                if kind == "full":
                    ok = part == "full" and only_full_inputs(u)
                elif part != "full":
                    ok = True
                else:
                    ok = v == start and not any(p == "full" for _, p in ins[u])
                if ok:
                    assigned[u] = sub
                    members.append(u)
                    stack.append(u)
                else:
                    starts.append(u)
        pieces.append((kind, start, members))

    result = []
    for sub, (kind, start, members) in enumerate(pieces):
        ops = tuple(sorted(members, key=position.__getitem__))
        member_set = set(ops)
        outputs = tuple(op for op in ops if not outs[op] or any(assigned[d] != sub for d in outs[op]))
        internal = tuple((u, v) for v in ops for u, _ in ins[v] if u in member_set)
        result.append(SubTopology(kind, start, ops, outputs, internal))
    return result


def _is_full_chain(start: str, ins: dict[str, list[tuple[str, str]]], only_full_inputs) -> bool:
    if not ins[start] or not only_full_inputs(start):
        return False
    return any(ins[u] and only_full_inputs(u) for u, _ in ins[start])


def _topological_order(names: list[str], ins, outs) -> list[str]:
    indeg = {n: len(ins[n]) for n in names}
    ready = deque(n for n in names if indeg[n] == 0)
    order = []
    while ready:
        n = ready.popleft()
        order.append(n)
        for d in outs[n]:
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append(d)
    return order
