"""``ftops plan fleet-recovery FILE``: the order in which jobs lost with a failure domain restart as capacity
returns, and when each is predicted back (see ft_core.fleet.recovery_order)."""

from __future__ import annotations

import argparse

from ft_core.cli.output import print_json, print_table
from ft_core.fleet.recovery_order import POLICIES


def register(sub, groups) -> None:
    cmd = groups["plan"].add_parser(
        "fleet-recovery", help="which job restarts first as capacity returns after a domain is lost under several "
                               "jobs (paper 003, jobs as queries, with catch-up; issue 33)",
        description="Read the jobs lost (priority, cores, input and processing rates, restart delay) and the capacity "
                    "coming back (free cores now, workers returning), and print each job's restart stage and "
                    "predicted time back, and the priority-weighted mean.")
    cmd.add_argument("problem", help="JSON or YAML: {\"jobs\": [{\"job\", \"priority\", \"cores\", \"input_rate\", "
                                     "\"processing_rate\", \"restart_s\", \"pending_s\"}, ...], \"capacity\": "
                                     "{\"free_cores\", \"arrivals\": [{\"at_s\", \"cores\"}, ...]}}")
    cmd.add_argument("--policy", choices=POLICIES, default="staged",
                     help="staged (default: the better of paper 003's density order and the catch-up-weighted one), "
                          "density, or fifo (the order given, no job overtaking)")
    cmd.add_argument("--json", action="store_true", help="print the plan as JSON")
    cmd.set_defaults(func=_plan)


def _plan(args: argparse.Namespace) -> int:
    from ft_core.fleet.recovery_order import FleetRecoveryProblem, plan_fleet_recovery
    from ft_core.input.documents import read_document
    from ft_core.input.validation import validate

    problem = validate(FleetRecoveryProblem, read_document(args.problem, "problem"), "problem")
    plan = plan_fleet_recovery(problem.jobs, problem.capacity, policy=args.policy)
    if args.json:
        print_json(plan)
        return 0
    mean = "none back" if plan.predicted_weighted_mean_s is None else f"{plan.predicted_weighted_mean_s:g} s"
    print(f"{args.policy} plan ({plan.order_rule}): {len(plan.jobs)} jobs, priority-weighted mean time back {mean}")
    print_table(["job", "priority", "stage", "restart (s)", "back (s)"],
                [[j.job, f"{j.priority:g}", "-" if j.stage is None else j.stage, "never" if j.start_s is None else j.start_s,
                  "never" if j.predicted_back_s is None else j.predicted_back_s] for j in plan.jobs])
    if plan.never_back:
        print(f"never back: {', '.join(plan.never_back)} (no capacity fits it, or it cannot outpace its input)")
    return 0
