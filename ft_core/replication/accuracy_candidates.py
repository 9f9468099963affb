r"""Candidate plans for the *accuracy* objective, and the choice among scored candidates.

Problem (issue 15): with ``--objective accuracy`` a planner should return the plan whose tentative
outputs score best with the job's accuracy function, not the one with the best OF. Accuracy has no
closed form (it is measured by replaying input: :mod:`ft_core.replication.predicted_accuracy`), so it
cannot be the MILP's or the structure-aware search's objective; instead those planners propose and a
replay disposes: a small set of good-OF plans is scored and the best-scoring one is taken.

Algorithm: the candidates, all within the budget R, without duplicates, are

1. the OF planners' plans for R (``exact`` when the topology has at most ``exact_max_tasks`` tasks,
   ``structure-aware`` always, ``greedy``): the paper's objective is always among them;
2. an MC-tree swap neighbourhood of the best-OF plan P: for every MC-tree T not inside P (lazily
   enumerated, at most ``max_trees``), ``P ∪ T`` pruned back to R tasks by removing, one at a
   time, the task of ``P \ T`` whose loss costs the least OF (T stays: pruning freely would only
   rebuild P), then every task no complete MC-tree needs
   (:func:`prune_to_budget`). These are plans that trade some OF for other key groups, which is
   where a top-k's accuracy can differ from OF.

Candidates that complete no MC-tree (OF 0: no tentative output at all) are dropped unless nothing
else fits; the rest are ranked by OF (ties: the planners' plans first) and at most ``limit`` are kept
(the OF optimum first). Complexity:
O(max_trees * R^2) OF evaluations of O(tasks + substreams) each, plus the planners'.
:func:`choose_by_accuracy` takes the candidate with the highest predicted mean accuracy; ties (within
``tolerance``) go to the higher OF, then to fewer tasks.

    >>> from ft_core.samples import load_sample
    >>> g = load_sample("q1-topk")
    >>> [len(c) <= 4 for c in accuracy_candidates(g, 4)][:3]
    [True, True, True]
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

from ft_core.replication.fidelity import replicated_fidelity
from ft_core.replication.mctree import iter_mc_trees
from ft_core.replication.planners import plan_replication
from ft_core.replication.predicted_accuracy import AccuracyEstimate
from ft_core.topology.task_graph import TaskGraph


def prune_to_budget(graph: TaskGraph, tasks: set[int], budget: int, protected: frozenset[int] = frozenset()) -> set[int]:
    """Remove the least useful tasks outside ``protected`` until at most ``budget`` remain, then the
    tasks no replicated MC-tree needs (their removal keeps OF unchanged)."""
    kept = set(tasks)
    while len(kept) > budget and kept - protected:
        kept.remove(max(sorted(kept - protected), key=lambda t: replicated_fidelity(graph, kept - {t})))
    if len(kept) > budget:
        return set()  # the protected tasks alone exceed the budget
    full = replicated_fidelity(graph, kept)
    for t in sorted(kept):
        if replicated_fidelity(graph, kept - {t}) >= full - 1e-12:
            kept.discard(t)
    return kept


def accuracy_candidates(graph: TaskGraph, budget: int, *, limit: int = 8, max_trees: int = 200,
                        exact_max_tasks: int = 200, time_limit: float | None = 60.0) -> list[list[str]]:
    """Candidate plans (task id lists), best OF first (see the module docstring)."""
    algorithms = (["exact"] if graph.n <= exact_max_tasks else []) + ["structure-aware", "greedy"]
    plans = [plan_replication(graph, budget, a, time_limit=time_limit) for a in algorithms]
    best = max(plans, key=lambda p: p.output_fidelity)
    found: dict[frozenset[int], float] = {}
    for plan in plans:
        chosen = frozenset(graph.index[t] for t in plan.tasks)
        found[chosen] = replicated_fidelity(graph, chosen)
    base = {graph.index[t] for t in best.tasks}
    for tree, _weight in islice(iter_mc_trees(graph), max_trees):
        if tree <= base:
            continue
        swapped = frozenset(prune_to_budget(graph, base | tree, budget, protected=frozenset(tree)))
        if swapped and swapped not in found:
            found[swapped] = replicated_fidelity(graph, swapped)
    if any(of > 0 for of in found.values()):  # a plan that completes no MC-tree has no tentative output
        found = {tasks: of for tasks, of in found.items() if of > 0}
    order = {tasks: rank for rank, tasks in enumerate(found)}  # equal OF: the planners' plans first
    ranked = sorted(found, key=lambda tasks: (-round(found[tasks], 12), order[tasks]))
    return [[graph.task_ids[i] for i in sorted(tasks)] for tasks in ranked[:limit]]


def choose_by_accuracy(estimates: Sequence[AccuracyEstimate], fidelity: Sequence[float],
                       tolerance: float = 1e-9) -> int:
    """Index of the candidate with the best predicted mean accuracy (ties: higher OF, fewer tasks).
    Candidates without an estimate rank last."""
    def key(i: int) -> tuple:
        mean = estimates[i].mean
        return (-(round(mean / tolerance) * tolerance) if mean is not None else 1.0, -fidelity[i],
                len(estimates[i].tasks), i)

    return min(range(len(estimates)), key=key)
