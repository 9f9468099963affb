"""A drill's predicted tentative accuracy (issue 15): what the plan's tentative outputs should score,
estimated before the failure, next to the planner's output fidelity.

The drill feeds its pipeline's seeded sample input from file 0; the prediction replays the same
generator from file :data:`PREDICTION_FIRST_FILE` on (``sample_s`` seconds of event time), an index
range a drill's input never reaches, so the prediction is never scored against windows it replayed
(it is an independent sample of the same input process, as a plan's estimate from last hour's input
is for a failure now). With ``objective="accuracy"`` the plan is chosen here too
(:func:`spark_jobs.accuracy.objective.choose_plan`); a given ``--plan`` is only estimated.
"""

from __future__ import annotations

from pathlib import Path

from ft_core.replication.fidelity import internal_completeness
from ft_core.replication.predicted_accuracy import AccuracyEstimate
from ft_core.topology.task_graph import build_task_graph
from spark_jobs.accuracy.estimator import estimate_accuracy
from spark_jobs.accuracy.objective import choose_plan

PREDICTION_FIRST_FILE = 100_000


def predict_for_drill(setup, budget: int | None, objective: str, sample_s: float, work_dir: Path,
                      replan: bool) -> AccuracyEstimate:
    """The estimate of the drill's plan; with ``objective == "accuracy"`` and ``replan`` (the plan came
    from a budget) the setup's plan and predicted OF are replaced by the best-accuracy candidate."""
    options = dict(sample_s=sample_s, first_file=PREDICTION_FIRST_FILE, work_dir=work_dir)
    if objective == "accuracy" and replan and budget is not None:
        choice = choose_plan(setup.workload, budget, **options)
        setup.plan_tasks = choice.tasks
        setup.predicted_output_fidelity = choice.output_fidelity
        graph = build_task_graph(setup.workload.topology())
        chosen = set(graph.indices(choice.tasks, "plan task"))
        setup.predicted_internal_completeness = internal_completeness(graph, [i for i in range(graph.n) if i not in chosen])
        return choice.predicted_accuracy
    return estimate_accuracy(setup.workload, [setup.plan_tasks], **options)[0]
