"""Choosing a replication planner by name: the one entry point the CLI, Spark jobs and DAGs use.

    >>> from ft_core.samples import load_sample
    >>> plan_replication(load_sample("q1-topk"), 4, "exact").output_fidelity
    0.25
"""

from __future__ import annotations

from ft_core.errors import InputError
from ft_core.replication.plan import ReplicationPlan
from ft_core.topology.task_graph import TaskGraph

ALGORITHMS = ("exact", "structure-aware", "greedy")


def plan_replication(graph: TaskGraph, budget: int, algorithm: str, *, time_limit: float | None = 60.0,
                     started: float | None = None) -> ReplicationPlan:
    """Run the named planner with ``budget`` replicas (R of paper 000); the exact planner returns
    within ``time_limit`` seconds (plus a small constant) from ``started`` (a ``time.perf_counter()``
    value, default now)."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise InputError(f"budget: must be a non-negative integer number of replicas, got {budget!r}")
    if algorithm == "exact":
        from ft_core.replication.exact import exact_plan

        return exact_plan(graph, budget, time_limit=time_limit, started=started)
    if algorithm == "structure-aware":
        from ft_core.replication.structure_aware import structure_aware_plan

        return structure_aware_plan(graph, budget)
    if algorithm == "greedy":
        from ft_core.replication.greedy import greedy_plan

        return greedy_plan(graph, budget)
    raise InputError(f"algorithm: unknown replication planner {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
