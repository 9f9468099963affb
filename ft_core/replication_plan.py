"""The typed result of every replication planner (paper 000's PPA plan).

A plan names the tasks that get an active replica (``len(tasks) <= budget``); all tasks are
checkpointed. ``output_fidelity`` is the OF with every task outside ``tasks`` failed (the worst-case
correlated failure of Section III-B). ``optimal`` is true only when the planner proved it;
``upper_bound`` (exact planner) is a proven bound on the best achievable OF, so
``upper_bound - output_fidelity`` is the proven gap.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ft_core.fidelity import replicated_fidelity
from ft_core.input_hash import input_hash
from ft_core.task_graph import TaskGraph

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
    return ReplicationPlan(
        algorithm=algorithm,
        budget=budget,
        tasks=[graph.task_ids[i] for i in ordered],
        output_fidelity=replicated_fidelity(graph, ordered),
        optimal=optimal,
        elapsed_s=elapsed_s,
        upper_bound=upper_bound,
        topology=graph.topology.name,
        input_hash=input_hash(graph.topology, {"algorithm": algorithm, "budget": budget}),
    )
