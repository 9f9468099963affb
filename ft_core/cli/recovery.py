"""``ftops plan recovery``, ``ftops plan stages`` and ``ftops bench recovery`` (paper 003)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ft_core.cli.output import command_line, emit_report, print_json, print_table
from ft_core.input.quantities import (NodeCount, Nodes, NonNegative, PositiveFraction, PositiveNodes, PositiveSeconds,
                                      TaskCount, check_list, comma_list, flag)
from ft_core.recovery.planners import ALGORITHMS, plan_recovery
from ft_core.recovery.problem import load_problem
from ft_core.errors import InputError
from ft_core.recovery.catch_up import CatchUpModel, check_catch_up_model, with_prediction
from ft_core.recovery.catch_up_order import POLICY as CATCH_UP, plan_catch_up
from ft_core.recovery.staged import DEFAULT_NODE_CAP, POLICIES, plan_stages

_UNITS = ("Costs, budgets and capacities share one unit; we use fractions of a node's CPU "
          "(1.0 = one node at 100 percent CPU, a cost of 0.25 = a quarter of a node).")


def register(sub, groups) -> None:
    rec = groups["plan"].add_parser(
        "recovery", help="choose failed partitions to restart within a budget (paper 003, Def. 2)",
        description="Choose the failed partitions to restart within budget R, maximising the priority of the "
                    "recovered queries (a query is recovered iff all its failed partitions are). " + _UNITS)
    rec.add_argument("problem", help="recovery problem document (.json, .yaml): explicit queries or topology + failed")
    rec.add_argument("--budget", "-R", type=flag(NonNegative), required=True,
                     help="available resources R (same unit as the costs)")
    rec.add_argument("--algorithm", choices=ALGORITHMS, default="best-density")
    rec.add_argument("--time-limit", type=flag(PositiveSeconds), default=60.0, help="seconds for the exact planner (default 60)")
    rec.add_argument("--json", action="store_true", help="print the plan as JSON")
    rec.set_defaults(func=_plan)

    st = groups["plan"].add_parser(
        "stages", help="stage-by-stage incremental recovery as capacity arrives (paper 003, Sec. 4.4)",
        description="Schedule the restart of failed partitions stage by stage: first the free capacity of the "
                    "surviving nodes (--capacity, already under the per-node cap), then one stage per arriving node "
                    "(--arrivals: each number is one new node's size, 1.0 = a whole node, of which --node-cap is "
                    "usable). Each started partition goes to the node with the most free capacity. " + _UNITS)
    st.add_argument("problem", help="recovery problem document (.json, .yaml)")
    st.add_argument("--capacity", required=True,
                    help="free capacity of the surviving nodes under the cap: one number (pooled) or one per node, comma-separated")
    st.add_argument("--arrivals", type=comma_list(PositiveNodes, max_items="max_nodes"), default=[],
                    help="sizes of the nodes arriving one by one, comma-separated (1.0 = one node)")
    st.add_argument("--node-cap", type=flag(PositiveFraction), default=DEFAULT_NODE_CAP,
                    help="usable fraction of a node's CPU (default 0.8)")
    st.add_argument("--policy", choices=(*POLICIES, CATCH_UP), default="order-then-pack",
                    help="order-then-pack (default: BestDensity order, packed into every stage), per-stage (BestDensity "
                         "per stage, whole queries only), operator-centric (the paper's OC baseline) or catch-up (the "
                         "order with the least predicted time back to normal, catch-up included; needs --catch-up)")
    st.add_argument("--catch-up", type=Path, metavar="FILE",
                    help='catch-up model (.json, .yaml): {"rates": {PARTITION: {"input_rate": rows/s, "processing_rate": '
                         'rows/s on a whole node, "restart_s": s}}, "stage_times": [s after the failure, one per stage], '
                         '"pending_s": s}; with it every policy predicts each query\'s time back')
    st.add_argument("--time-limit", type=flag(PositiveSeconds), default=10.0,
                    help="--policy catch-up: seconds for the search over orders; it returns the best so far (default 10)")
    st.add_argument("--failures", type=flag(NodeCount), default=None,
                    help="node failures since the last global checkpoint; below 2 recovery is blocking (default: incremental)")
    st.add_argument("--json", action="store_true", help="print the schedule as JSON")
    st.set_defaults(func=_stages)

    bench = groups["bench"].add_parser("recovery", help="paper 003's planner comparison (Fig. 16), Fig. 2 schedules, scale")
    bench.add_argument("--quick", action="store_true", help="a small run for CI smoke tests (seconds, not minutes)")
    bench.add_argument("--out", default=None, help="report path (default docs/benchmarks/recovery.md; --quick: stdout only)")
    bench.add_argument("--json", action="store_true", help='print {"out": PATH, "report": MARKDOWN}')
    bench.add_argument("--instances", type=flag(TaskCount), default=None, help="synthetic instances per setting (default 100)")
    bench.set_defaults(func=_bench)


def _plan(args: argparse.Namespace) -> int:
    problem = load_problem(args.problem)
    options = {"time_limit": args.time_limit} if args.algorithm == "exact" else {}
    plan = plan_recovery(problem, args.budget, args.algorithm, **options)
    doc = plan.model_dump(mode="json")
    if args.json:
        print_json(doc)
        return 0
    print(f"{plan.algorithm}: restart {len(plan.partitions)} of {len(problem.partitions)} failed partitions "
          f"(cost {plan.cost:.4g} of budget {plan.budget:.4g}); recovers {len(plan.recovered_queries)} of "
          f"{len(problem.queries)} failed queries, priority {plan.recovered_priority:.4g} of {plan.total_priority:.4g}"
          f"{' (optimal)' if plan.optimal else ''}{f', gap {plan.gap:.2%}' if plan.gap else ''}, {plan.elapsed_s:.3f} s")
    print_table(["query", "priority", "recovered", "failed partitions"],
                [[q, problem.queries[q].priority, "yes" if q in plan.recovered_queries else "no", problem.queries[q].partitions]
                 for q in problem.query_ids()])
    return 0


def _stages(args: argparse.Namespace) -> int:
    capacity = check_list(Nodes, args.capacity, "--capacity", max_items="max_nodes", allow_empty=False)
    problem = load_problem(args.problem)
    model = _catch_up_model(args)
    if model is not None:
        check_catch_up_model(problem, model, len(args.arrivals) + 1, "--catch-up")
    pooled = capacity[0] if len(capacity) == 1 and "," not in args.capacity else capacity
    if args.policy == CATCH_UP:
        schedule = plan_catch_up(problem, pooled, args.arrivals, model, node_cap=args.node_cap, failures=args.failures,
                                 time_limit_s=args.time_limit, started=getattr(args, "started", None))
    else:
        schedule = plan_stages(problem, pooled, args.arrivals, node_cap=args.node_cap, policy=args.policy, failures=args.failures)
        if model is not None:
            schedule = with_prediction(problem, schedule, model)
    if args.json:
        print_json(schedule)
        return 0
    print(f"{schedule.mode} recovery, policy {schedule.policy}, node cap {schedule.node_cap:.0%}; "
          f"recovered {len(schedule.recovered_queries)} of {len(problem.queries)} failed queries"
          + (f"; never scheduled: {', '.join(schedule.unscheduled_partitions)}" if schedule.unscheduled_partitions else ""))
    print_table(["stage", "event", "available", "started (node)", "recovered", "rollback"],
                [[s.stage, s.event, s.available, [f"{p}@{n}" for p, n in s.placement.items()] or "-",
                  s.recovered_queries or "-", "yes" if s.global_rollback else ""] for s in schedule.stages])
    if schedule.predicted_back_s is not None:
        print(f"predicted time back to normal (s), catch-up included; priority-weighted mean "
              f"{schedule.predicted_weighted_mean_s}")
        print_table(["query", "priority", "back (s)"], [[q, problem.queries[q].priority, "never" if t is None else t]
                                                         for q, t in schedule.predicted_back_s.items()])
    return 0


def _catch_up_model(args: argparse.Namespace) -> CatchUpModel | None:
    """The --catch-up document through the input gate (required by --policy catch-up)."""
    from ft_core.input.documents import read_document
    from ft_core.input.validation import validate

    if args.catch_up is None:
        if args.policy == CATCH_UP:
            raise InputError("--catch-up: --policy catch-up needs the catch-up model (rates per failed partition and "
                             "when each stage's capacity arrives)")
        return None
    return validate(CatchUpModel, read_document(args.catch_up, "--catch-up"), "--catch-up")


def _bench(args: argparse.Namespace) -> int:
    from ft_core.bench.recovery import QUICK, BenchConfig, run_benchmark  # matplotlib, HiGHS: only when benchmarking

    config = QUICK if args.quick else BenchConfig()
    if args.instances is not None:
        config = BenchConfig(**{**config.__dict__, "instances_per_setting": args.instances})
    command = command_line(["bench", "recovery"])
    out = args.out or (None if args.quick else "docs/benchmarks/recovery.md")
    report = run_benchmark(config, command, progress=lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True),
                           table=Path(out) if out else None)  # plots only beside a written report
    emit_report(report, out, args.json)
    return 0

