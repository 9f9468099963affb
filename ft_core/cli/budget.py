"""``ftops plan budget``: what each replication budget buys and the smallest that reaches a target (issue 37);
:func:`budget_or_auto`, the ``--budget`` of ``ftops plan replication`` that also takes ``auto``. The logic
lives in :mod:`ft_core.replication.budget_advice`."""

from __future__ import annotations

import argparse

from ft_core.errors import InfeasibleError, InputError
from ft_core.input.quantities import PositiveFraction, PositiveSeconds, TaskBudget, flag
from ft_core.replication.budget_advice import DEFAULT_MAX_BUDGET, DEFAULT_TARGET
from ft_core.replication.planners import ALGORITHMS

AUTO = "auto"
TARGET_HELP = (f"the output fidelity the plan must keep under a worst-case correlated failure (default {DEFAULT_TARGET}); "
               "judged on OF, since a topology document has no input to replay for accuracy (`ftops plan accuracy` does)")


def budget_or_auto(text: str) -> int | str:
    """``--budget``: a number of replicas (a task count from 0) or ``auto``.

    >>> budget_or_auto("4"), budget_or_auto("auto")
    (4, 'auto')
    """
    if text.strip().lower() == AUTO:
        return AUTO
    try:
        return flag(TaskBudget)(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or {AUTO})") from None


budget_or_auto.__name__ = "budget"


def check_target_flag(budget: int | str, target: float | None, what: str) -> None:
    """``--target-accuracy`` means something only with ``--budget auto``."""
    if target is not None and budget != AUTO:
        raise InputError(f"--target-accuracy: only with --budget auto (--budget {budget} is {what} as given)",
                         field="--target-accuracy")


def auto_budget_plan(graph, target: float | None, algorithm: str = "structure-aware", *, time_limit: float | None = 60.0,
                     started: float | None = None):
    """``--budget auto``: the plan of the smallest budget reaching ``target`` (default :data:`DEFAULT_TARGET`) and
    what the JSON says of the choice; InfeasibleError naming ``--target-accuracy`` when no budget does."""
    from ft_core.replication.budget_advice import smallest_budget_plan

    target = DEFAULT_TARGET if target is None else target
    plan = smallest_budget_plan(graph, target, algorithm, time_limit=time_limit, started=started)
    if plan is None:
        raise InfeasibleError(f"--target-accuracy: no budget up to the {graph.n} tasks keeps OF >= {target:g} with the "
                              f"{algorithm} planner", field="--target-accuracy")
    return plan, {"budget": AUTO, "target_accuracy": target, "target_measure": "output_fidelity"}


def register(sub, groups) -> None:
    adv = groups["plan"].add_parser(
        "budget", help="for each replication budget: OF, predicted accuracy, the replica's CPU share; the smallest "
                       "budget reaching a target (paper 000, issue 37)",
        description="Plan budgets 0, 1, ... with a replication planner and print, per budget, the plan's output fidelity "
                    "(OF) under a worst-case correlated failure, its predicted tentative accuracy (not estimated from a "
                    "topology document), the replica's expected CPU share (its tasks' share of the records the topology "
                    "reads) and why a plan of OF 0 keeps nothing; then the smallest budget whose OF reaches "
                    "--target-accuracy. The sweep ends at the first budget that keeps OF 1.")
    adv.add_argument("topology", help="topology document (.json, .yaml)")
    adv.add_argument("--target-accuracy", type=flag(PositiveFraction), default=DEFAULT_TARGET, help=TARGET_HELP)
    adv.add_argument("--max-budget", type=flag(TaskBudget), default=None,
                     help=f"the largest budget to try (default: the number of tasks, at most {DEFAULT_MAX_BUDGET})")
    adv.add_argument("--algorithm", choices=ALGORITHMS, default="structure-aware")
    adv.add_argument("--time-limit", type=flag(PositiveSeconds), default=60.0,
                     help="seconds the whole command may take with the exact planner (default 60)")
    adv.add_argument("--json", action="store_true", help="print the advice as JSON")
    adv.set_defaults(func=_plan_budget)


def _plan_budget(args: argparse.Namespace) -> int:
    from ft_core.cli.output import print_json
    from ft_core.cli.topology import load_graph
    from ft_core.replication.budget_advice import advise_budget

    advice = advise_budget(load_graph(args.topology), args.target_accuracy, algorithm=args.algorithm,
                           max_budget=args.max_budget, time_limit=args.time_limit, started=args.started)
    if args.json:
        print_json(advice)
    else:
        _print_advice(advice, args.topology)
    return 0


def _print_advice(advice, path: str) -> None:
    from ft_core.cli.output import print_table

    tree = advice.smallest_mc_tree
    size = f"needs {len(tree)} tasks" if advice.smallest_mc_tree_proven else f"found needs {len(tree)} tasks"
    print(f"{advice.topology}: {advice.tasks} tasks; the smallest MC-tree {size} ({', '.join(tree)}); "
          f"{advice.algorithm} plans")
    print_table(["budget", "replicas", "OF", "predicted accuracy", "replica CPU share", "note"],
                [[r.budget, len(r.tasks), r.output_fidelity, "not estimated" if r.predicted_accuracy is None else
                  r.predicted_accuracy, f"{r.cpu_share:.1%}", _note(advice, i)] for i, r in enumerate(advice.rows)])
    for first, last, reason in _empty_runs(advice.rows):
        print(f"{'budget ' + str(first) if first == last else f'budgets {first}-{last}'} keep no output: {reason}")
    print(f"predicted accuracy: {advice.accuracy_note}")
    print(f"{advice.stopped}")
    target = f"target OF >= {advice.target_accuracy:g} (--target-accuracy, judged on output fidelity)"
    if advice.smallest_budget is None:
        print(f"{target}: not reached by budgets up to {advice.max_budget}"
              + ("; try a larger --max-budget" if advice.max_budget < advice.tasks else ""))
        return
    row = advice.rows[advice.smallest_budget]
    print(f"{target}: smallest budget {row.budget} (OF {row.output_fidelity:.4f}, {len(row.tasks)} replicas, "
          f"replica CPU share {row.cpu_share:.1%})")
    print(f"next: ftops plan replication {path} --budget {row.budget} --algorithm {advice.algorithm}")


def _note(advice, i: int) -> str:
    row = advice.rows[i]
    if row.reason is not None:
        return "no output (below)"
    if advice.smallest_budget == row.budget:
        return "smallest reaching the target"
    if i > 0 and advice.rows[i - 1].tasks == row.tasks:
        return f"same plan as budget {row.budget - 1}"
    return ""


def _empty_runs(rows) -> list[tuple[int, int, str]]:
    """Consecutive budgets of OF 0 as (first, last, the last one's reason)."""
    runs: list[tuple[int, int, str]] = []
    for r in rows:
        if r.reason is None:
            continue
        if runs and runs[-1][1] == r.budget - 1:
            runs[-1] = (runs[-1][0], r.budget, r.reason)
        else:
            runs.append((r.budget, r.budget, r.reason))
    return runs
