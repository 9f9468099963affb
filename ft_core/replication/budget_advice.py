"""Budget advice: what each replication budget buys, and the smallest budget that reaches a target.

Problem (issue 37): a user choosing the budget R of paper 000's PPA plan sees one plan at a time, and a
budget below the smallest MC-tree silently keeps nothing. For R = 0, 1, ..., ``max_budget`` this module
gives the plan's output fidelity (OF, the worst-case correlated failure of Section III-B), the replica's
expected CPU share, why a plan of OF 0 keeps nothing (:func:`ft_core.replication.plan.empty_plan_reason`),
and the smallest R whose plan reaches ``target``.

What the target is judged on: a plan's *predicted tentative accuracy* is measured by replaying the
pipeline's input (:mod:`ft_core.replication.predicted_accuracy`, ``ftops plan accuracy``), which a
topology document cannot do, and ftops does not treat OF as an estimate of accuracy (on a top-k they
differ a lot, issue 15). So the advice is judged on OF, said so in ``target_measure``, and every row's
``predicted_accuracy`` is None ("not estimated"). OF is the rate-weighted share of the output that keeps
producing under the failure; paper 000 found accuracy tracking it on its two queries (Fig. 12), while
ftops's replay found a top-k scoring well above it (issue 15).

CPU share: a task's work is the records it reads per second (the rates of its input substreams; a source
task reads what it emits), the document's per-task ``rate`` expanded by
:func:`ft_core.topology.task_graph.build_task_graph`. The replica runs the plan's tasks on the same
records as the primary, so its CPU is the plan's share of the topology's work, assuming a record costs
the same in every operator (the document has no per-operator cost).

Algorithm: one planner run per budget (:func:`ft_core.replication.planners.plan_replication`), ascending;
the sweep stops at the first budget whose plan keeps OF 1 (more replicas add nothing) or, when asked, at
the first that reaches the target. Complexity: ``max_budget + 1`` planner runs (structure-aware: each
O(R N M^2 E)), plus O(T + S) per row for the CPU share; the exact planner shares one time limit over all.

    >>> from ft_core.samples import load_sample
    >>> advice = advise_budget(load_sample("q1-topk"), 0.25)
    >>> advice.smallest_budget, [round(r.output_fidelity, 3) for r in advice.rows][:5]
    (4, [0.0, 0.0, 0.0, 0.167, 0.25])
    >>> advice.rows[2].reason.split(";")[0]
    'the smallest MC-tree needs 3 tasks (O1[0], O2[0], O3[0])'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

from pydantic import BaseModel, Field

from ft_core.replication.mctree import smallest_mc_tree
from ft_core.replication.plan import ReplicationAlgorithm, ReplicationPlan
from ft_core.replication.planners import plan_replication
from ft_core.topology.task_graph import TaskGraph, rate_shares

# The target when none is given: half of the output's weight keeps producing under the worst-case failure.
DEFAULT_TARGET = 0.5
# The budgets `ftops plan budget` tries without --max-budget: every one up to the number of tasks, at most this.
DEFAULT_MAX_BUDGET = 64
# OF at or above this is complete: a larger budget cannot add anything.
COMPLETE_OF = 1.0 - 1e-12
# OF within this of the target reaches it (Eq. 1-4 in floating point).
TARGET_TOLERANCE = 1e-12
NOT_ESTIMATED = ("not estimated: a topology document has no pipeline input to replay; `ftops plan accuracy "
                 "--pipeline REF --budget R` replays one budget's plan")


class BudgetRow(BaseModel):
    """One budget's plan, as the advice table shows it."""

    budget: int = Field(ge=0)
    tasks: list[str] = Field(description="the replicated tasks (may be fewer than the budget)")
    output_fidelity: float
    optimal: bool
    predicted_accuracy: float | None = Field(default=None, description="None: not estimated (see accuracy_note)")
    cpu_share: float = Field(ge=0, le=1, description="the replica's expected CPU as a share of the primary's")
    reason: str | None = Field(default=None, description="why the plan keeps no output (OF 0)")


class BudgetAdvice(BaseModel):
    """The budgets tried and the smallest that reaches the target."""

    topology: str
    algorithm: ReplicationAlgorithm
    tasks: int = Field(description="tasks of the topology")
    smallest_mc_tree: list[str] = Field(description="an MC-tree with the fewest tasks: the least budget with any output")
    smallest_mc_tree_proven: bool
    target_accuracy: float
    target_measure: Literal["output_fidelity"] = "output_fidelity"
    accuracy_note: str = NOT_ESTIMATED
    smallest_budget: int | None = Field(description="the first budget reaching the target (None: none of those tried)")
    max_budget: int = Field(description="the largest budget asked for")
    stopped: str = Field(description="why the sweep ended where it did")
    rows: list[BudgetRow]


def task_work(graph: TaskGraph) -> list[float]:
    """Records each task reads per second (index order): its input substreams' rates; a source, its own rate.

    >>> from ft_core.samples import load_sample
    >>> [round(w, 3) for w in task_work(load_sample("fig2-join"))]
    [1.0, 2.0, 3.0, 2.0, 8.0]
    """
    return [sum(s.total_rate for s in streams) if streams else graph.rate[i] for i, streams in enumerate(graph.inputs)]


def cpu_share(graph: TaskGraph, tasks: Iterable[int], work: list[float] | None = None) -> float:
    """The share of the topology's work done by ``tasks`` (equal shares per task when all work is 0)."""
    shares = rate_shares(work if work is not None else task_work(graph))
    return min(1.0, sum(shares[i] for i in set(tasks)))


def budget_plans(graph: TaskGraph, algorithm: ReplicationAlgorithm, max_budget: int, *,
                 time_limit: float | None = 60.0, started: float | None = None) -> Iterator[ReplicationPlan]:
    """The planner's plan for budgets 0 .. ``max_budget``, ascending, up to the first that keeps OF 1."""
    for budget in range(max_budget + 1):
        plan = plan_replication(graph, budget, algorithm, time_limit=time_limit, started=started)
        yield plan
        if plan.output_fidelity >= COMPLETE_OF:
            return


def smallest_budget_plan(graph: TaskGraph, target: float = DEFAULT_TARGET,
                         algorithm: ReplicationAlgorithm = "structure-aware", *, time_limit: float | None = 60.0,
                         started: float | None = None) -> ReplicationPlan | None:
    """The plan of the smallest budget (up to the number of tasks) whose OF reaches ``target``; None if none does.

    >>> from ft_core.samples import load_sample
    >>> plan = smallest_budget_plan(load_sample("fig2-join"), 0.5)
    >>> plan.budget, plan.tasks
    (4, ['O1[1]', 'O2[0]', 'O2[1]', 'O3[0]'])
    """
    for plan in budget_plans(graph, algorithm, graph.n, time_limit=time_limit, started=started):
        if plan.output_fidelity >= target - TARGET_TOLERANCE:
            return plan
    return None


def budget_row(graph: TaskGraph, plan: ReplicationPlan, work: list[float]) -> BudgetRow:
    """The advice row of one plan."""
    return BudgetRow(budget=plan.budget, tasks=plan.tasks, output_fidelity=plan.output_fidelity, optimal=plan.optimal,
                     cpu_share=cpu_share(graph, graph.indices(plan.tasks), work), reason=plan.reason)


def advise_budget(graph: TaskGraph, target: float = DEFAULT_TARGET, *, algorithm: ReplicationAlgorithm = "structure-aware",
                  max_budget: int | None = None, stop_at_target: bool = False, time_limit: float | None = 60.0,
                  started: float | None = None) -> BudgetAdvice:
    """Plans for budgets 0 .. ``max_budget`` (default: every one up to the tasks, at most
    :data:`DEFAULT_MAX_BUDGET`) and the smallest budget whose OF reaches ``target`` (see the module docstring)."""
    limit = min(graph.n, DEFAULT_MAX_BUDGET) if max_budget is None else max_budget
    work = task_work(graph)
    rows: list[BudgetRow] = []
    smallest = None
    for plan in budget_plans(graph, algorithm, limit, time_limit=time_limit, started=started):
        rows.append(budget_row(graph, plan, work))
        if smallest is None and plan.output_fidelity >= target - TARGET_TOLERANCE:
            smallest = plan.budget
            if stop_at_target:
                break
    tree, proven = smallest_mc_tree(graph)
    return BudgetAdvice(topology=graph.topology.name, algorithm=algorithm, tasks=graph.n,
                        smallest_mc_tree=[graph.task_ids[i] for i in sorted(tree)], smallest_mc_tree_proven=proven,
                        target_accuracy=target, smallest_budget=smallest, max_budget=limit,
                        stopped=_stopped(rows, limit, smallest, stop_at_target, graph.n), rows=rows)


def _stopped(rows: list[BudgetRow], limit: int, smallest: int | None, stop_at_target: bool, tasks: int) -> str:
    last = rows[-1]
    if stop_at_target and smallest == last.budget:
        return f"budget {last.budget} reaches the target"
    if last.output_fidelity >= COMPLETE_OF:
        return f"budget {last.budget} keeps OF 1: a larger budget adds nothing"
    if limit < tasks:
        return f"budgets above {limit} not tried (of {tasks} tasks)"
    return f"every budget up to the {tasks} tasks tried"
