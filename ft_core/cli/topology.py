"""``ftops topology check``, ``ftops fidelity`` and ``ftops plan replication`` (``--budget auto``: the smallest
budget whose plan reaches ``--target-accuracy``, :mod:`ft_core.replication.budget_advice`)."""

from __future__ import annotations

import argparse

from ft_core.cli.budget import AUTO, TARGET_HELP, auto_budget_plan, budget_or_auto, check_target_flag
from ft_core.cli.output import print_json, print_table
from ft_core.input.quantities import PositiveFraction, PositiveSeconds, flag
from ft_core.replication.fidelity import fidelity_report
from ft_core.replication.mctree import count_mc_trees
from ft_core.replication.planners import ALGORITHMS, plan_replication
from ft_core.topology.document import load_topology
from ft_core.topology.task_graph import TaskGraph, build_task_graph


def register(sub, groups) -> None:
    topo = sub.add_parser("topology", help="validate and summarise topology documents")
    topo_sub = topo.add_subparsers(dest="topology_command", required=True, parser_class=type(topo))
    check = topo_sub.add_parser("check", help="validate a topology document and print a one-line summary")
    check.add_argument("topology", help="topology document (.json, .yaml)")
    check.add_argument("--json", action="store_true", help="print the summary as JSON")
    check.set_defaults(func=_check)

    fid = sub.add_parser("fidelity", help="output fidelity (Eq. 1-4), IC and per-task information loss")
    fid.add_argument("topology", help="topology document (.json, .yaml)")
    fid.add_argument("--failed", default="", help="comma-separated failed tasks, e.g. 'O1[0],O2[1]'")
    fid.add_argument("--json", action="store_true", help="print JSON")
    fid.set_defaults(func=_fidelity)

    rep = groups["plan"].add_parser("replication", help="choose tasks to replicate actively (paper 000, PPA)")
    rep.add_argument("topology", help="topology document (.json, .yaml)")
    rep.add_argument("--budget", "-R", type=budget_or_auto, required=True,
                     help="number of active replicas R, or auto: the smallest budget whose plan reaches --target-accuracy "
                          "(`ftops plan budget` shows every budget)")
    rep.add_argument("--target-accuracy", type=flag(PositiveFraction), default=None, help="with --budget auto: " + TARGET_HELP)
    rep.add_argument("--algorithm", choices=ALGORITHMS, default="structure-aware")
    rep.add_argument("--time-limit", type=flag(PositiveSeconds), default=60.0,
                     help="seconds the whole command may take with the exact planner (default 60; it returns its best plan and gap)")
    rep.add_argument("--json", action="store_true", help="print the plan as JSON")
    rep.set_defaults(func=_plan)


def load_graph(path: str) -> TaskGraph:
    return build_task_graph(load_topology(path))


def parse_task_list(graph: TaskGraph, text: str, what: str) -> set[int]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    return graph.indices(names, what)


def _check(args: argparse.Namespace) -> int:
    graph = load_graph(args.topology)
    summary = {
        "name": graph.topology.name,
        "operators": len(graph.topology.operators),
        "tasks": graph.n,
        "substreams": sum(len(s.upstream) for streams in graph.inputs for s in streams),
        "sinks": len(graph.sinks),
        "mc_trees": count_mc_trees(graph),
    }
    if args.json:
        print_json(summary)
    else:
        print(f"{summary['name']}: ok, {summary['operators']} operators, {summary['tasks']} tasks, "
              f"{summary['substreams']} substreams, {summary['sinks']} sink tasks, {summary['mc_trees']} MC-trees")
    return 0


def _fidelity(args: argparse.Namespace) -> int:
    graph = load_graph(args.topology)
    report = fidelity_report(graph, parse_task_list(graph, args.failed, "failed task"))
    if args.json:
        print_json(report)
        return 0
    print(f"output fidelity {report.output_fidelity:.4f}   internal completeness {report.internal_completeness:.4f}")
    print_table(["task", "information loss"], sorted(report.information_loss.items()))
    return 0


def _plan(args: argparse.Namespace) -> int:
    check_target_flag(args.budget, args.target_accuracy, "planned")
    graph = load_graph(args.topology)
    if args.budget == AUTO:
        plan, choice = auto_budget_plan(graph, args.target_accuracy, args.algorithm, time_limit=args.time_limit,
                                        started=args.started)
    else:
        plan, choice = plan_replication(graph, args.budget, args.algorithm, time_limit=args.time_limit,
                                        started=args.started), None
    if args.json:
        print_json({**plan.model_dump(mode="json"), **({"budget_choice": choice} if choice else {})})
        return 0
    if choice:
        print(f"budget auto: {plan.budget}, the smallest whose plan keeps OF >= {choice['target_accuracy']:g} "
              "(--target-accuracy, judged on output fidelity)")
    status = "proven optimal" if plan.optimal else (f"gap <= {plan.gap:.4f}" if plan.gap is not None else "heuristic")
    print(f"{plan.algorithm} plan for {plan.topology}: {len(plan.tasks)}/{plan.budget} replicas, "
          f"OF {plan.output_fidelity:.4f} ({status}), {plan.elapsed_s:.3f} s")
    if plan.reason:
        print(f"no tentative output: {plan.reason}")
    print_table(["replicated task"], [[t] for t in plan.tasks])
    return 0
