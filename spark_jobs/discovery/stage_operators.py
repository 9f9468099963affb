"""A query's operators: the stages of its micro-batches, deduplicated across batches.

Problem: every micro-batch runs the same plan again with new stage ids (and, with sibling stages,
not even in the same order), so "one operator per stage" would give one operator per batch. The
topology needs one operator per *position in the plan*, with the parallelism and links it has in
every batch.

Algorithm: each batch's plan is cut into operators with a label that depends only on the plan's
shape (:func:`spark_jobs.discovery.plan_fragments.batch_plan`); operators with one label are one
operator. Its parallelism is the largest task count its stage had in the observed batches (a file
source's stage can have fewer partitions when few files arrived); links are the union of the
batches' links. Operators are ordered topologically (sources first, ties in plan order) and named
after their kind (``source``, ``scan``, ``join``, ``aggregate``, ...), numbered when a kind repeats.
Linear in the batches' operators and links.

    >>> from spark_jobs.discovery.plan_fragments import BatchPlan, PlanOperator
    >>> def batch(stage_ids):
    ...     ops = [PlanOperator(0, [1], ["MicroBatchScan"], 0, "source", label="s"),
    ...            PlanOperator(1, [0], ["HashAggregate"], 1, "aggregate", label="a")]
    ...     return BatchPlan(ops, [(0, 1, "full")], fragment_stage=dict(enumerate(stage_ids)))
    >>> ops = merge_operators([(batch([3, 4]), {0: 2, 1: 6}), (batch([9, 8]), {0: 2, 1: 6})])
    >>> [(op.name, op.parallelism, op.stage_ids, op.inputs) for op in ops]
    [('source', 2, [3, 9], []), ('aggregate', 6, [4, 8], [('source', 'full')])]
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from graphlib import TopologicalSorter

from spark_jobs.discovery.plan_fragments import BatchPlan


@dataclass
class QueryOperator:
    """One operator of the query, merged over micro-batches."""

    key: str
    kind: str
    is_join: bool
    plan_nodes: list[str]
    name: str = ""
    parallelism: int = 0
    stage_ids: list[int] = field(default_factory=list)
    inputs: list[tuple[str, str]] = field(default_factory=list)  # (upstream name, partitioning)
    upstream_keys: dict[str, str] = field(default_factory=dict)  # upstream key -> partitioning

    @property
    def input_model(self) -> str:
        return "correlated" if self.is_join else "independent"


def merge_operators(plans: list[tuple[BatchPlan, dict[int, int]]]) -> list[QueryOperator]:
    """Operators of the given batch plans, each with its fragments' task counts ``{fragment: numTasks}``
    (fragments whose stage did not run are absent)."""
    merged: dict[str, QueryOperator] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for b, (plan, task_counts) in enumerate(plans):
        for op in plan.operators:
            q = merged.get(op.key)
            if q is None:
                q = merged[op.key] = QueryOperator(key=op.key, kind=op.kind, is_join=op.is_join, plan_nodes=list(op.names))
                first_seen[op.key] = (b, op.index)
            if op.fragment in task_counts:
                q.parallelism = max(q.parallelism, task_counts[op.fragment])
                stage = plan.fragment_stage.get(op.fragment)
                if stage is not None and stage not in q.stage_ids:
                    q.stage_ids.append(stage)
        for a, z, partitioning in plan.links:
            merged[plan.operators[z].key].upstream_keys.setdefault(plan.operators[a].key, partitioning)
    order = _topological(merged, first_seen)
    _name(order)
    names = {q.key: q.name for q in order}
    for q in order:
        q.inputs = [(names[k], p) for k, p in sorted(q.upstream_keys.items(), key=lambda kp: first_seen[kp[0]])]
    return order


def _topological(merged: dict[str, QueryOperator], first_seen: dict[str, tuple[int, int]]) -> list[QueryOperator]:
    """Sources first; among operators ready at once, the first batch's first, nearest the plan's
    leaves first (Spark numbers plan nodes from the root)."""
    sorter = TopologicalSorter({k: list(q.upstream_keys) for k, q in merged.items()})
    sorter.prepare()
    order: list[QueryOperator] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=lambda k: (first_seen[k][0], -first_seen[k][1]))
        for k in ready:
            order.append(merged[k])
            sorter.done(k)
    return order


def _name(order: list[QueryOperator]) -> None:
    totals = Counter(q.kind for q in order)
    seen: Counter[str] = Counter()
    for q in order:
        seen[q.kind] += 1
        q.name = q.kind if totals[q.kind] == 1 else f"{q.kind}_{seen[q.kind]}"
