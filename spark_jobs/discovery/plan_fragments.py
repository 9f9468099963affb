"""One micro-batch's physical plan cut into operators: Spark stages, split where a join reads a narrow input.

Problem: the REST API shows a micro-batch's plan as a graph of SQL nodes (``MicroBatchScan``,
``Exchange``, ``SortMergeJoin``, ``StateStoreSave``, ...) with edges child -> parent, and the stages
that ran it, but no link between the two beyond the metrics' annotations ``(stage 12.0: task 40)``.
Stage names say nothing ("start at NativeMethodAccessorImpl.java:0") and stage ids change every
batch, so operators must come from the plan.

Algorithm:

1. *Fragments* (= stages): every ``Exchange`` / ``BroadcastExchange`` node is split into a write
   side (joined to its child) and a read side (joined to its parent); the connected components of
   the remaining graph are the plan's stages (everything between two exchanges is narrow). An
   exchange links its writer fragment to its reader fragment with ``full`` partitioning (a shuffle:
   every map task feeds every reduce task; a broadcast: every task reads every partition).
2. *Operators*: inside a fragment, an edge into a join from a narrow input (an input whose upstream
   inside the fragment reads no exchange, e.g. the streamed side of a broadcast hash join) is cut;
   the cut pieces become operators of the same parallelism, linked ``one_to_one`` to the join. So
   every join, stream-static or stream-stream, is an operator with several inputs.
3. *Stages*: each fragment takes the stage its nodes' metrics name most often (a shuffle's
   write-side metrics name the writer's stage, its read-side metrics the reader's; a
   ``WholeStageCodegen`` cluster's metrics name the stage of its member nodes).
4. *Labels*: an operator's label is its node names (in plan order) plus the sorted labels of its
   inputs, so one operator has one label in every micro-batch of a query whatever its node ids
   and stage ids (:mod:`spark_jobs.discovery.stage_operators` merges batches by label).

Linear in nodes + edges + metrics (union-find, one topological pass).

    >>> plan = batch_plan({"nodes": [
    ...     {"nodeId": 0, "nodeName": "WriteToDataSourceV2", "metrics": []},
    ...     {"nodeId": 1, "nodeName": "HashAggregate", "metrics": [{"name": "time in aggregation build",
    ...      "value": "total (min, med, max (stageId: taskId))\\n3 ms (1 ms, 1 ms, 1 ms (stage 7.0: task 20))"}]},
    ...     {"nodeId": 2, "nodeName": "Exchange", "metrics": [{"name": "shuffle write time",
    ...      "value": "total (min, med, max (stageId: taskId))\\n1 ms (0 ms, 0 ms, 1 ms (stage 6.0: task 18))"}]},
    ...     {"nodeId": 3, "nodeName": "MicroBatchScan", "metrics": [{"name": "number of output rows", "value": "40"}]}],
    ...   "edges": [{"fromId": 1, "toId": 0}, {"fromId": 2, "toId": 1}, {"fromId": 3, "toId": 2}]})
    >>> [(op.kind, plan.stage_of(op)) for op in plan.operators], plan.links
    ([('aggregate', 7), ('source', 6)], [(1, 0, 'full')])
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from graphlib import TopologicalSorter

BOUNDARIES = {"Exchange", "BroadcastExchange", "ShuffleExchange"}
WRITE_SIDE_METRICS = {"shuffle bytes written", "shuffle records written", "shuffle write time", "data size"}
STATEFUL_KINDS = (("StateStoreSave", "aggregate"), ("StreamingDeduplicate", "deduplicate"),
                  ("FlatMapGroupsWithState", "stateful"), ("TransformWithState", "stateful"),
                  ("SessionWindowStateStoreSave", "aggregate"))
_STAGE = re.compile(r"\(stage (\d+)\.(\d+): task \d+\)")
_CODEGEN = re.compile(r"^WholeStageCodegen \((\d+)\)$")

Vertex = int | tuple[str, int]  # a plan node id, or ("read" | "write", exchange node id)


@dataclass
class PlanOperator:
    """An operator of one micro-batch: its plan nodes, fragment (stage) and label."""

    index: int
    node_ids: list[int]
    names: list[str]
    fragment: int
    kind: str = "stage"
    is_join: bool = False
    label: str = ""

    @property
    def key(self) -> str:
        return hashlib.sha1(self.label.encode()).hexdigest()[:16]


@dataclass
class BatchPlan:
    """Operators, links ``(upstream, downstream, partitioning)`` and per-fragment stage evidence."""

    operators: list[PlanOperator]
    links: list[tuple[int, int, str]]
    fragment_stage: dict[int, int] = field(default_factory=dict)  # fragment -> stage id (when metrics name one)
    fragment_scan_rows: dict[int, int] = field(default_factory=dict)  # rows the fragment's leaf scans output

    def stage_of(self, op: PlanOperator) -> int | None:
        return self.fragment_stage.get(op.fragment)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Vertex, Vertex] = {}

    def add(self, v: Vertex) -> None:
        self.parent.setdefault(v, v)

    def find(self, v: Vertex) -> Vertex:
        root = v
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[v] != root:
            self.parent[v], v = root, self.parent[v]
        return root

    def union(self, a: Vertex, b: Vertex) -> None:
        self.parent[self.find(a)] = self.find(b)


def batch_plan(execution: dict) -> BatchPlan:
    """The operators of one SQL execution (``/sql/{id}?details=true``)."""
    nodes = {n["nodeId"]: n for n in execution.get("nodes", [])}
    clusters = {n["nodeId"]: int(m[1]) for n in nodes.values() if (m := _CODEGEN.match(n["nodeName"]))}
    boundaries = {i for i, n in nodes.items() if n["nodeName"] in BOUNDARIES}
    edges: list[tuple[Vertex, Vertex]] = []
    for e in execution.get("edges", []):
        src, dst = e["fromId"], e["toId"]
        if src in clusters or dst in clusters or src not in nodes or dst not in nodes:
            continue
        edges.append((("read", src) if src in boundaries else src, ("write", dst) if dst in boundaries else dst))
    vertices: list[Vertex] = [i for i in nodes if i not in clusters and i not in boundaries]
    vertices += sorted({v for edge in edges for v in edge if isinstance(v, tuple)})
    preds: dict[Vertex, list[Vertex]] = {v: [] for v in vertices}
    for src, dst in edges:
        preds[dst].append(src)

    fragments = _components(vertices, edges)
    cut = {(src, dst) for src, dst in edges if _narrow_join_input(src, dst, nodes, preds)}
    pieces = _components(vertices, [e for e in edges if e not in cut])

    operators, op_of, fragment_of = _operators(vertices, pieces, fragments, nodes)
    links: dict[tuple[int, int], str] = {}
    for x in sorted(boundaries):
        if ("write", x) in op_of and ("read", x) in op_of:
            links.setdefault((op_of[("write", x)], op_of[("read", x)]), "full")
    for src, dst in sorted(cut, key=str):
        links.setdefault((op_of[src], op_of[dst]), "one_to_one")
    plan = BatchPlan(operators, [(a, b, p) for (a, b), p in links.items() if a != b])
    _label(plan)
    _stage_evidence(plan, nodes, clusters, boundaries, fragment_of, preds)
    return plan


def _components(vertices: list[Vertex], edges: list[tuple[Vertex, Vertex]]) -> dict[Vertex, Vertex]:
    uf = _UnionFind()
    for v in vertices:
        uf.add(v)
    for src, dst in edges:
        uf.union(src, dst)
    return {v: uf.find(v) for v in vertices}


def _is_join(name: str) -> bool:
    return "Join" in name or name == "CartesianProduct"


def _narrow_join_input(src: Vertex, dst: Vertex, nodes: dict, preds: dict) -> bool:
    """An edge into a join from a plan node whose upstream (inside its stage) reads no exchange."""
    if not isinstance(dst, int) or not isinstance(src, int) or not _is_join(nodes[dst]["nodeName"]):
        return False
    stack, seen = [src], set()
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            return False  # an exchange's read side: this input is a shuffle, not narrow
        if v not in seen:
            seen.add(v)
            stack.extend(preds[v])
    return True


def _operators(vertices, pieces, fragments, nodes) -> tuple[list[PlanOperator], dict[Vertex, int], dict[Vertex, int]]:
    """Operators in plan order (node ids are given root first), each vertex's operator and fragment index."""
    def order(v: Vertex) -> tuple[int, int]:
        return (v[1], 0 if v[0] == "read" else 1) if isinstance(v, tuple) else (v, 2)

    members: dict[Vertex, list[Vertex]] = {}
    for v in sorted(vertices, key=order):
        members.setdefault(pieces[v], []).append(v)
    frag_index = {root: i for i, root in enumerate(dict.fromkeys(fragments[m[0]] for m in members.values()))}
    operators, op_of = [], {}
    for vs in sorted(members.values(), key=lambda vs: order(vs[0])):
        real = [v for v in vs if isinstance(v, int)]
        names = [nodes[v]["nodeName"] for v in real] + [f"{side}:{nodes[x]['nodeName']}" for side, x in
                                                        (v for v in vs if isinstance(v, tuple))]
        op = PlanOperator(index=len(operators), node_ids=real, names=names, fragment=frag_index[fragments[vs[0]]])
        op.is_join = any(_is_join(nodes[v]["nodeName"]) for v in real)
        op.kind = _kind([nodes[v]["nodeName"] for v in real], op.is_join)
        for v in vs:
            op_of[v] = op.index
        operators.append(op)
    return operators, op_of, {v: frag_index[fragments[v]] for v in vertices}


def _kind(names: list[str], is_join: bool) -> str:
    """A readable operator kind from its plan nodes (the document's operator names start with it)."""
    if is_join:
        return "join"
    for marker, kind in STATEFUL_KINDS:
        if any(n.startswith(marker) for n in names):
            return kind
    if any(n == "MicroBatchScan" or n.startswith("StreamingDataSourceV2") for n in names):
        return "source"
    if any(n.startswith(("Scan", "FileScan", "BatchScan", "LocalTableScan", "InMemoryTableScan", "Range")) for n in names):
        return "scan"
    if any(n.endswith("Aggregate") for n in names):
        return "aggregate"
    if any(n.startswith(("WriteToDataSourceV2", "WriteToMicroBatch")) for n in names):
        return "sink"
    return "repartition" if not names else "stage"


def _label(plan: BatchPlan) -> None:
    """Labels in topological order: own node names plus the sorted labels of the inputs; equal labels
    within one plan (two identical branches) are told apart by their order."""
    ups: dict[int, list[tuple[int, str]]] = {op.index: [] for op in plan.operators}
    for a, b, p in plan.links:
        ups[b].append((a, p))
    seen: Counter[str] = Counter()
    for i in TopologicalSorter({b: [a for a, _ in ins] for b, ins in ups.items()}).static_order():
        op = plan.operators[i]
        inputs = sorted(f"{plan.operators[a].label}~{p}" for a, p in ups[i])
        label = f"{'/'.join(op.names)}<{'|'.join(inputs)}>"
        seen[label] += 1
        op.label = label if seen[label] == 1 else f"{label}#{seen[label]}"


def _stage_evidence(plan: BatchPlan, nodes: dict, clusters: dict, boundaries: set, fragment_of: dict, preds: dict) -> None:
    """Each fragment's stage (the one its metrics name most often; ties: the newest) and its leaf scans' rows."""
    members: dict[int, list[int]] = {}
    for i, n in nodes.items():
        if n.get("wholeStageCodegenId") is not None:
            members.setdefault(int(n["wholeStageCodegenId"]), []).append(i)
    votes: dict[int, Counter[int]] = {}
    for i, n in nodes.items():
        for metric in n.get("metrics", []):
            stages = [int(stage) for stage, _attempt in _STAGE.findall(str(metric.get("value", "")))]
            if not stages:
                continue
            if i in clusters:
                where: list[Vertex] = members.get(clusters[i], [])
            elif i in boundaries:
                where = [("write" if metric.get("name") in WRITE_SIDE_METRICS else "read", i)]
            else:
                where = [i]
            for v in where:
                if v in fragment_of:
                    votes.setdefault(fragment_of[v], Counter()).update(stages)
    plan.fragment_stage = {f: max(c.items(), key=lambda kv: (kv[1], kv[0]))[0] for f, c in votes.items()}
    for i, n in nodes.items():
        rows = _output_rows(n) if i in fragment_of and not preds.get(i) else None
        if rows is not None:
            plan.fragment_scan_rows[fragment_of[i]] = plan.fragment_scan_rows.get(fragment_of[i], 0) + rows


def _output_rows(node: dict) -> int | None:
    for metric in node.get("metrics", []):
        if metric.get("name") == "number of output rows":
            try:
                return int(str(metric["value"]).replace(",", ""))
            except ValueError:
                return None
    return None
