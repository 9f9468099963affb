"""``--objective accuracy``: the replication plan whose predicted tentative accuracy is best.

Problem: output fidelity is the planners' objective (paper 000) and stays the default; a user who
cares about the accuracy of tentative results as their pipeline scores it can ask for that instead.
Algorithm: the candidates of :func:`ft_core.replication.accuracy_candidates.accuracy_candidates`
(the exact / structure-aware / greedy plans for the budget and an MC-tree swap neighbourhood of the
best-OF plan) are scored in one replay (:func:`spark_jobs.accuracy.estimator.estimate_accuracy`) and
:func:`~ft_core.replication.accuracy_candidates.choose_by_accuracy` takes the best. Cost: one Spark
application with one batch job per candidate (``limit``, default 8).

    choose_plan(load_workload("topk"), 4).tasks        # a plan of at most 4 tasks, best predicted accuracy
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ft_core.replication.accuracy_candidates import accuracy_candidates, choose_by_accuracy
from ft_core.replication.plan import fidelity_under
from ft_core.replication.predicted_accuracy import AccuracyEstimate
from ft_core.topology.task_graph import TaskGraph, build_task_graph
from spark_jobs.accuracy.estimator import estimate_accuracy
from spark_jobs.pipeline.definition import Workload

Objective = Literal["output-fidelity", "accuracy"]
OBJECTIVES = ("output-fidelity", "accuracy")


class ScoredPlan(BaseModel):
    tasks: list[str]
    output_fidelity: float
    predicted_accuracy: AccuracyEstimate


class AccuracyChoice(BaseModel):
    """The chosen plan and every candidate with its OF and predicted accuracy (chosen one first)."""

    tasks: list[str]
    output_fidelity: float
    predicted_accuracy: AccuracyEstimate
    candidates: list[ScoredPlan]


def choose_plan(workload: Workload, budget: int, *, graph: TaskGraph | None = None, limit: int = 8,
                **estimate_options) -> AccuracyChoice:
    """Score the candidate plans for ``budget`` and return the best by predicted accuracy."""
    graph = graph or build_task_graph(workload.topology())
    candidates = accuracy_candidates(graph, budget, limit=limit) or [[]]
    estimates = estimate_accuracy(workload, candidates, **estimate_options)
    fidelity = [fidelity_under(graph, c) for c in candidates]
    best = choose_by_accuracy(estimates, fidelity)
    order = [best] + [i for i in range(len(candidates)) if i != best]
    scored = [ScoredPlan(tasks=candidates[i], output_fidelity=fidelity[i], predicted_accuracy=estimates[i]) for i in order]
    return AccuracyChoice(tasks=scored[0].tasks, output_fidelity=scored[0].output_fidelity,
                          predicted_accuracy=scored[0].predicted_accuracy, candidates=scored)
