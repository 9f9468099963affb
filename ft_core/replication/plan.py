"""The typed result of every replication planner (paper 000's PPA plan).

A plan names the tasks that get an active replica (``len(tasks) <= budget``); all tasks are
checkpointed. ``output_fidelity`` is the OF with every task outside ``tasks`` failed (the worst-case
correlated failure of Section III-B). ``optimal`` is true only when the planner proved it;
``upper_bound`` (exact planner) is a proven bound on the best achievable OF, so
``upper_bound - output_fidelity`` is the proven gap. A plan of OF 0 (no tentative output at all under
that failure) says why in ``reason`` (issue 37): its tasks complete no MC-tree, because the budget is
below the smallest MC-tree's size or because the planner's tasks do not form one.

    >>> from ft_core.samples import load_sample
    >>> g = load_sample("q1-topk")
    >>> print(make_plan(g, "greedy", 2, {0, 1}, 0.0).reason)
    the smallest MC-tree needs 3 tasks (O1[0], O2[0], O3[0]); a budget of 2 completes none, so no tentative output survives a worst-case correlated failure
    >>> make_plan(g, "greedy", 3, {0, 8, 12}, 0.0).reason is None
    True
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ft_core.replication.fidelity import replicated_fidelity
from ft_core.replication.mctree import completes_mc_tree, smallest_mc_tree
from ft_core.input_hash import input_hash
from ft_core.topology.task_graph import TaskGraph

ReplicationAlgorithm = Literal["exact", "structure-aware", "greedy"]


class ReplicationPlan(BaseModel):
    algorithm: ReplicationAlgorithm
    budget: int = Field(ge=0)
    tasks: list[str]
    output_fidelity: float
    optimal: bool
    elapsed_s: float
    upper_bound: float | None = None
    topology: str
    input_hash: str
    reason: str | None = Field(default=None, description="why the plan keeps no output (OF 0); None otherwise")

    @property
    def gap(self) -> float | None:
        return None if self.upper_bound is None else max(0.0, self.upper_bound - self.output_fidelity)


def make_plan(
    graph: TaskGraph,
    algorithm: ReplicationAlgorithm,
    budget: int,
    chosen: set[int],
    elapsed_s: float,
    *,
    optimal: bool = False,
    upper_bound: float | None = None,
) -> ReplicationPlan:
    """Build the plan from chosen task indices; OF is recomputed from Eq. 1-4, never trusted."""
    ordered = sorted(chosen)
    fidelity = replicated_fidelity(graph, ordered)
    return ReplicationPlan(
        algorithm=algorithm,
        budget=budget,
        tasks=[graph.task_ids[i] for i in ordered],
        output_fidelity=fidelity,
        optimal=optimal,
        elapsed_s=elapsed_s,
        upper_bound=upper_bound,
        topology=graph.topology.name,
        input_hash=input_hash(graph.topology, {"algorithm": algorithm, "budget": budget}),
        reason=empty_plan_reason(graph, algorithm, budget, set(ordered)) if fidelity <= EMPTY_OF else None,
    )


# OF at or below this keeps no tentative output (rounding of Eq. 1-4 on complete failure is exact 0).
EMPTY_OF = 1e-12


def empty_plan_reason(graph: TaskGraph, algorithm: str, budget: int, chosen: set[int]) -> str:
    """Why replicating ``chosen`` (a plan of OF 0) keeps no output; O(T + S), plus the smallest MC-tree's search."""
    tree, proven = smallest_mc_tree(graph)
    names = ", ".join(graph.task_ids[i] for i in sorted(tree))
    smallest = f"the smallest MC-tree needs {len(tree)} tasks" if proven else f"the smallest MC-tree found needs {len(tree)} tasks"
    if budget < len(tree) and proven:
        return (f"{smallest} ({names}); a budget of {budget} completes none, so no tentative output survives a "
                "worst-case correlated failure")
    if completes_mc_tree(graph, chosen):
        return f"the {len(chosen)} replicated tasks complete MC-trees whose rates are all 0, so they carry no output"
    hint = "" if algorithm == "exact" else "; the exact planner replicates whole MC-trees"
    return f"the {algorithm} planner's {len(chosen)} tasks complete no MC-tree ({smallest}: {names}){hint}"


def fidelity_under(graph: TaskGraph, tasks: list[str]) -> float:
    """The OF a plan's replicated ``tasks`` keep on ``graph`` (rates measured later, say).

    Comparing a new plan with the applied one only means something on the same rates: a plan's stored
    objective was computed on the profile of its day. Task ids that are no longer in the graph (the
    topology changed) replicate nothing. O(n + m) like ``replicated_fidelity``.

    >>> from ft_core.samples import load_sample
    >>> g = load_sample("fig2-join")
    >>> fidelity_under(g, []), fidelity_under(g, g.task_ids), fidelity_under(g, ["gone[0]"])
    (0.0, 1.0, 0.0)
    """
    return replicated_fidelity(graph, {graph.index[t] for t in tasks if t in graph.index})

