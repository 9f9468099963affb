"""``ftops plan checkpoint``: Chiron's checkpoint interval from a profiles document (paper 004).

``ftops plan checkpoint PROFILES --max-recovery-s X [--case min|avg|max]
[--variant auto|paper_eq4|eq2|closed_form|warmup_elapsed] [--eps-ms E] [--mtbf-s M] [--json]``

``--variant auto`` chooses the recovery-time variant whose model is closest to the recovery times the
profiling runs measured (:mod:`ft_core.checkpoint.variant_choice`); the JSON then has ``variant_choice``.

With ``--json`` it prints :class:`ft_core.checkpoint.tuning.CheckpointPlan` (``checkpoint_interval_ms``,
``predicted_latency_ms``, ``predicted_recovery_s``, ``r2.latency``, ``r2.recovery``, then the case,
variant, feasible ranges, Young/Daly baselines, models and per-interval points); otherwise a short
summary and a per-interval table. Bad input exits 2, an unreachable bound exits 3 with the smallest
achievable recovery time. The default case is ``max`` (the paper's experiments plan with ``A_max``;
only the worst case bounds recovery), see :mod:`ft_core.checkpoint.tuning`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ft_core.checkpoint.profiles import load_profiles
from ft_core.checkpoint.recovery_time import CASES, DEFAULT_CASE, DEFAULT_VARIANT, PAPER_EPS_MS, VARIANTS
from ft_core.checkpoint.variant_choice import AUTO, VariantChoice, resolve_variant
from ft_core.cli.output import print_json, print_table
from ft_core.input.quantities import Positive, PositiveSeconds, flag

if TYPE_CHECKING:
    from ft_core.checkpoint.tuning import CheckpointPlan


def register(sub, groups) -> None:
    cp = groups["plan"].add_parser(
        "checkpoint", help="choose the checkpoint interval from profiling runs (paper 004, Chiron)",
        description="Lowest-latency checkpoint interval whose predicted total recovery time meets a bound.")
    cp.add_argument("profiles", help="profiles document (.json, .yaml)")
    cp.add_argument("--max-recovery-s", type=flag(PositiveSeconds), required=True,
                    help="bound C_TRT on the total recovery time, s")
    cp.add_argument("--case", choices=CASES, default=DEFAULT_CASE,
                    help=f"reprocessing case E = 0 / CI/2 / CI (default {DEFAULT_CASE}, as in the paper's experiments)")
    cp.add_argument("--variant", choices=(AUTO, *VARIANTS), default=DEFAULT_VARIANT,
                    help=f"total-recovery-time heuristic (default {DEFAULT_VARIANT}, the equations as printed; "
                    f"{AUTO}: the one closest to the measured recovery times)")
    cp.add_argument("--eps-ms", type=flag(Positive), default=PAPER_EPS_MS,
                    help="series truncation threshold in ms (default 1, the paper's 'less than one')")
    cp.add_argument("--mtbf-s", type=flag(Positive), default=None, help="MTBF for the Young/Daly baselines (overrides the document)")
    cp.add_argument("--json", action="store_true", help="print the plan as JSON")
    cp.set_defaults(func=_plan)


def _plan(args: argparse.Namespace) -> int:
    from ft_core.checkpoint.tuning import plan_checkpoint  # numpy: only when planning

    doc = load_profiles(args.profiles)
    variant, choice = resolve_variant(doc, args.variant)
    plan = plan_checkpoint(doc, args.max_recovery_s, case=args.case, variant=variant, eps_ms=args.eps_ms,
                           mtbf_s=args.mtbf_s)
    if args.json:
        print_json({**plan.model_dump(mode="json"), **({"variant_choice": choice.model_dump(mode="json")} if choice else {})})
    else:
        _print_human(plan, choice)
    return 0


def _print_human(plan: CheckpointPlan, choice: VariantChoice | None) -> None:
    if choice is not None:
        print(f"variant {choice.chosen}: {choice.reason}")
    print(f"checkpoint interval {plan.checkpoint_interval_ms:.0f} ms: predicted latency "
          f"{plan.predicted_latency_ms:.1f} ms, predicted recovery {plan.predicted_recovery_s:.2f} s "
          f"<= {plan.max_recovery_s:g} s (case {plan.case}, variant {plan.variant})")
    print(f"R^2 latency {plan.r2['latency']:.3f}, recovery {plan.r2['recovery']:.3f}; feasible "
          + ", ".join(f"{a:.0f}-{b:.0f}" for a, b in plan.feasible_ranges_ms)
          + f" ms of {plan.profiled_range_ms[0]:.0f}-{plan.profiled_range_ms[1]:.0f} ms")
    if plan.young_interval_ms is not None:
        print(f"baselines: Young {plan.young_interval_ms:.0f} ms, Daly {plan.daly_interval_ms:.0f} ms "
              f"(checkpoint cost {plan.checkpoint_cost_ms:.0f} ms, MTBF {plan.mtbf_s:g} s)")
    for warning in plan.warnings:
        print(f"warning: {warning}")
    print_table(
        ["interval ms", "runs", "latency ms", "U", "recovery s", "model latency", "model recovery"],
        [(f"{p.checkpoint_interval_ms:.0f}", p.repetitions, f"{p.avg_latency_ms:.1f}", f"{p.utilisation:.3f}",
          f"{p.recovery_s:.2f}", f"{p.predicted_latency_ms:.1f}", f"{p.predicted_recovery_s:.2f}") for p in plan.points],
    )
