"""``ftops plan accuracy``: the predicted tentative accuracy of a replication plan for a pipeline (issue 15),
registered through the ``ftops.commands`` entry point ``accuracy = "spark_jobs.cli.accuracy"``; the logic
lives in :mod:`spark_jobs.accuracy`.

    ftops plan accuracy --pipeline examples/sensor_alerts.py --plan plan.json               # seeded sample
    ftops plan accuracy --workload topk --plan plan.json --input data/in                    # the job's recent input
    ftops plan accuracy --workload topk --budget 4 --objective accuracy --json              # best of the candidates
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ft_core.cli.output import print_json, print_table
from ft_core.errors import InputError
from ft_core.input.quantities import PositiveSeconds, TaskBudget, TaskCount, flag
from spark_jobs.pipeline.loading import add_pipeline_arguments, pipeline_ref


def register(sub, groups) -> None:
    acc = groups["plan"].add_parser(
        "accuracy", help="predicted tentative accuracy of a replication plan: a replay of input, whole and restricted "
                         "to the plan, scored with the pipeline's accuracy function (issue 15)")
    add_pipeline_arguments(acc)
    acc.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pipeline parameter (repeatable)")
    plan = acc.add_mutually_exclusive_group(required=True)
    plan.add_argument("--plan", type=Path, help="replication plan JSON (ftops plan replication --json)")
    plan.add_argument("--budget", type=flag(TaskBudget), help="plan R replicas for the pipeline's topology first")
    acc.add_argument("--algorithm", choices=("exact", "structure-aware", "greedy"), default="structure-aware",
                     help="with --budget and --objective output-fidelity: the planner (default structure-aware)")
    acc.add_argument("--objective", choices=("output-fidelity", "accuracy"), default="output-fidelity",
                     help="with --budget: maximise output fidelity (default, the paper's objective) or the predicted "
                          "accuracy (the planners' candidates, each replayed; the best is chosen)")
    acc.add_argument("--candidates", type=flag(TaskCount), default=8, help="--objective accuracy: at most this many "
                     "candidate plans (default 8)")
    acc.add_argument("--input", type=Path, help="the job's input folder: replay its newest files (default: the "
                     "pipeline's seeded sample input)")
    acc.add_argument("--recent-files", type=flag(TaskCount), default=240, help="with --input: newest files per source "
                     "(default 240)")
    acc.add_argument("--sample-s", type=flag(PositiveSeconds), default=240.0, help="without --input: event seconds of "
                     "seeded input (default 240)")
    acc.add_argument("--master", default="local[2]", help="Spark master of the replay (default local[2], never the "
                     "job's cluster)")
    acc.add_argument("--work-dir", type=Path, help="keep the sample, request and log here (default: a temporary folder)")
    acc.add_argument("--json", action="store_true", help="print the result as JSON")
    acc.set_defaults(func=_accuracy)


def _plan_tasks(args: argparse.Namespace, workload, graph) -> list[str]:
    from ft_core.replication.planners import plan_replication
    from spark_jobs.runtime.run_pipeline import load_plan_tasks

    if args.plan is not None:
        return sorted(load_plan_tasks(args.plan, workload))
    return plan_replication(graph, args.budget, args.algorithm).tasks


def _accuracy(args: argparse.Namespace) -> int:
    from ft_core.replication.plan import fidelity_under
    from ft_core.topology.task_graph import build_task_graph
    from spark_jobs.accuracy.estimator import estimate_accuracy
    from spark_jobs.accuracy.objective import ScoredPlan, choose_plan
    from spark_jobs.pipeline.loading import load_workload

    workload = load_workload(pipeline_ref(args), args.param)
    if args.objective == "accuracy" and args.budget is None:
        raise InputError("--objective accuracy: give --budget (a given --plan is only estimated)")
    if args.input is not None and not args.input.is_dir():
        raise InputError(f"--input: {args.input} is not a folder")
    if args.work_dir is not None and args.work_dir.exists() and any(args.work_dir.iterdir()):
        raise InputError(f"--work-dir: {args.work_dir} is not an empty folder")
    graph = build_task_graph(workload.topology())
    options = dict(input_dir=args.input, recent_files=args.recent_files, sample_s=args.sample_s, master=args.master,
                   work_dir=args.work_dir)
    if args.objective == "accuracy":
        scored = choose_plan(workload, args.budget, graph=graph, limit=args.candidates, **options).candidates
    else:
        tasks = _plan_tasks(args, workload, graph)
        estimate = estimate_accuracy(workload, [tasks], **options)[0]
        scored = [ScoredPlan(tasks=tasks, output_fidelity=fidelity_under(graph, tasks), predicted_accuracy=estimate)]
    best = scored[0]
    if args.json:
        print_json({"pipeline": workload.name, "objective": args.objective, "plan_tasks": best.tasks,
                    "predicted_output_fidelity": best.output_fidelity, "predicted_accuracy": best.predicted_accuracy.mean,
                    "estimate": best.predicted_accuracy.model_dump(mode="json"),
                    "candidates": [c.model_dump(mode="json") for c in scored]})
        return 0
    print(f"{workload.name}: {best.predicted_accuracy.sample}")
    print_table(["plan", "tasks", "predicted OF", "predicted accuracy (± sd)", "min-max", "windows"],
                [[("chosen" if i == 0 and len(scored) > 1 else "") or ("plan" if len(scored) == 1 else ""),
                  " ".join(c.tasks) or "(none)", f"{c.output_fidelity:.3f}", _mean(c.predicted_accuracy),
                  _range(c.predicted_accuracy), c.predicted_accuracy.windows] for i, c in enumerate(scored)])
    return 0


def _mean(e) -> str:
    return "-" if e.mean is None else f"{e.mean:.3f} ± {e.stdev:.3f}"


def _range(e) -> str:
    return "-" if e.mean is None else f"{e.min:.2f}-{e.max:.2f}"
