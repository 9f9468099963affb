"""The markdown and plots of ``ftops bench checkpoint`` (docs/benchmarks/checkpoint.md and its SVGs).

Two plots beside the table (:mod:`ft_core.bench.plots`): the recovery time against the interval (the
measured recovery of every profiled copy, each variant's recovery model A, and the validations at the
recommended interval), and the validations' measured against predicted recovery with the 20% band.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ft_core.bench.plots import markdown_image, new_figure, predicted_vs_measured, save_next_to
from ft_core.checkpoint.recovery_time import VARIANTS
from ft_core.checkpoint.tuning import fit_quadratic, recovery_points
from ft_core.checkpoint.profiles import load_profiles, summarise
from spark_jobs.profiling.bench import BenchResult
from spark_jobs.profiling.reports import ProfileRaw
from spark_jobs.profiling.validation import VALIDATED_CASE, relative_error


def render_bench(result: BenchResult, out: Path) -> str:
    """The benchmark's markdown; writes its plots beside ``out``."""
    curves = _plot_recovery_curves(result, out)
    scatter = _plot_validations(result, out)
    return "\n".join([*_header(result), *_profiled(result), *_variants(result), *_recommendation(result),
                      *_validations(result), markdown_image(curves, "recovery time by interval"), "",
                      markdown_image(scatter, "validations: measured against predicted recovery"), "",
                      *_target(result), *_gaps(result)])


def _header(result: BenchResult) -> list[str]:
    cfg = result.config
    params = ProfileRaw.model_validate_json(Path(result.profile.raw).read_text()).params
    return [
        "# Checkpoint-interval profiling on Spark (paper 004, Chiron)", "",
        f"Produced by `{result.command}` ({result.machine}; {result.elapsed_s / 60:.0f} min). "
        "Definitions of every measure: the docstring of `spark_jobs/profiling/__init__.py`.", "",
        f"- Pipeline `{cfg['pipeline']}`: " + ", ".join(f"{k}={val}" for k, val in params.items()) + ".",
        f"- Checkpoint vector: the trigger interval is profiled; {result.profile.vector.describe()} are fixed.",
        f"- Per copy: {cfg['duration_s']:g} s of steady operation around {cfg['failures']} failure(s): SIGKILL of the "
        "driver's process group just before a checkpoint (E = one interval, case max), relaunch on the same "
        f"checkpoint after T = {cfg['detection_timeout_s']:g} s (`detection_timeout_s`).",
        f"- Copies run {cfg['parallel']} at a time, in the profile and in every validation (the validation "
        "reruns the profile's conditions); the load average is the machine's, other programs included.", "",
    ]


def _profiled(result: BenchResult) -> list[str]:
    lines = [
        "## Profiled intervals", "",
        f"Medians per interval (one copy each unless stated); the heuristic and A(CI) with case `{VALIDATED_CASE}` "
        f"(the failures') and the chosen variant `{result.variant}`.", "",
        "| interval s | I_avg rows/s | I_max rows/s | U | latency ms | P(CI) ms | R s | W s | TRT measured s "
        "| TRT heuristic s | A(CI) s | checkpoint cost ms | load | output = reference |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result.rows:
        cost = "-" if r.checkpoint_duration_ms is None else f"{r.checkpoint_duration_ms:.0f}"
        load = "-" if r.load_1m is None else f"{r.load_1m:.1f}"
        lines.append(f"| {r.checkpoint_interval_ms / 1000:g} | {r.avg_ingress_rate:.1f} | {r.max_ingress_rate:.1f} | "
                     f"{r.utilisation:.3f} | {r.avg_latency_ms:.0f} | {r.model_latency_ms:.0f} | {r.restore_s:.1f} | "
                     f"{r.warmup_s:.1f} | {r.measured_recovery_s:.1f} | {r.heuristic_recovery_s:.1f} | "
                     f"{r.model_recovery_s:.1f} | {cost} | {load} | {'yes' if r.outputs_equal_reference else 'NO'} |")
    lines += [
        "", f"R^2 of the latency model P: {result.r2_latency:.3f}; of the recovery models A (fitted to the heuristic): "
        + ", ".join(f"{c} {val:.3f}" for c, val in result.r2_recovery_by_case.items())
        + f"; of A({VALIDATED_CASE}) against the *measured* recovery times: {result.r2_model_vs_measured_recovery:.3f}.", "",
    ]
    return lines


def _variants(result: BenchResult) -> list[str]:
    choice = result.variant_choice
    n = len(result.validations)
    head = "| variant | mean error at the profiled intervals | predicted at the validated interval s | " + \
        " | ".join(f"error, validation {i}" for i in range(1, n + 1)) + " |"
    lines = ["## The recovery-time variant", ""]
    lines.append(f"Chosen: **{result.variant}**. " + (f"{choice.reason}; method: {choice.method}." if choice else
                                                      "Given with --variant."))
    lines += ["", head, "|---|---|---|" + "---|" * n]
    for name in VARIANTS:
        cv = "-" if choice is None else f"{choice.errors[name]:.1%}"
        predicted = result.validations[0].by_variant[name].predicted_recovery_s
        errors = " | ".join(f"{v.by_variant[name].recovery_error:.1%}" for v in result.validations)
        lines.append(f"| {name}{' (chosen)' if name == result.variant else ''} | {cv} | {predicted:.1f} | {errors} |")
    return [*lines, ""]


def _recommendation(result: BenchResult) -> list[str]:
    p, v = result.validations[0].plan, result.validations[0]
    return [
        "## Recommendation", "",
        f"C_TRT = {result.bound_s:.1f} s ({result.bound_source}). Chiron's optimiser picks **{p.checkpoint_interval_ms / 1000:.3f} s** "
        f"(case {p.case}, variant {p.variant}; predicted latency {p.predicted_latency_ms:.0f} ms, predicted recovery "
        f"{p.predicted_recovery_s:.1f} s; feasible " + ", ".join(f"{a / 1000:.2f}-{b / 1000:.2f} s" for a, b in p.feasible_ranges_ms)
        + f"). Applying it: {v.lineage.message}.", "",
        *(f"- warning: {w}" for w in p.warnings + result.profile.warnings), "",
    ]


def _validations(result: BenchResult) -> list[str]:
    target = result.validations[0].recovery_target
    lines = [
        "## Validations", "",
        f"{len(result.validations)} consecutive validation runs of the recommended interval, each a new copy with "
        f"{result.config['failures']} failure(s) injected as in the profile; the prediction is A({VALIDATED_CASE}, "
        f"{result.variant}) there, the measurement the mean over the run's failures.", "",
        f"| # | interval s | predicted recovery s | measured recovery s | error | within {target:.0%} | per failure s "
        "| latency predicted / measured ms | load | output = reference |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, v in enumerate(result.validations, start=1):
        per = ", ".join(f"{m:.1f}" for m in v.measured_recovery_per_failure_s)
        load = "-" if v.conditions.load_1m is None else f"{v.conditions.load_1m:.1f}"
        lines.append(f"| {i} | {v.validated_interval_ms / 1000:g} | {v.predicted_recovery_s:.1f} | {v.measured_recovery_s:.1f} | "
                     f"{v.recovery_error:.1%} | {'yes' if v.target_met else 'no'} | {per} | "
                     f"{v.predicted_latency_ms:.0f} / {v.measured_latency_ms:.0f} | {load} | "
                     f"{'yes' if v.outputs_equal_reference else 'NO'} |")
    return [*lines, ""]


def _target(result: BenchResult) -> list[str]:
    vs = result.validations
    target = vs[0].recovery_target
    verdict = "met" if result.target_met else "not met"
    lines = ["## Target", "",
             f"Predicted recovery within {target:.0%} of the measured one in {len(vs)} consecutive validations: "
             f"**{verdict}** ({result.consecutive_within_target} of {len(vs)} in a row; errors "
             + ", ".join(f"{v.recovery_error:.1%}" for v in vs) + ")."]
    misses = [(i, v) for i, v in enumerate(vs, start=1) if not v.target_met]
    for i, v in misses:
        lines.append(f"- validation {i}: {v.reason}.")
    return [*lines, ""]


def _gaps(result: BenchResult) -> list[str]:
    lines = ["## Where the measured recovery time goes", "",
             "Per validation, the mean over its failures: T (kill to relaunch), R (relaunch to the first batch), the "
             "first batch (W of it is warm-up), then catch-up batches and trigger waits until the lag is back; and "
             "the heuristic evaluated with the validation run's own T, R, W and U (the form of each variant, "
             "without the profiling noise).", "",
             "| # | T s | R s | first batch s (W) | rest s | measured s | U | " + " | ".join(VARIANTS) + " |",
             "|---|---|---|---|---|---|---|" + "---|" * len(VARIANTS)]
    for i, (v, g) in enumerate(zip(result.validations, result.gaps), start=1):
        heur = " | ".join(f"{g.heuristic_with_measured_inputs_s[name]:.1f} ({relative_error(g.heuristic_with_measured_inputs_s[name], v.measured_recovery_s):.0%})"
                          for name in VARIANTS)
        lines.append(f"| {i} | {g.detection_s:.1f} | {g.restore_s:.1f} | {g.first_batch_s:.1f} ({g.warmup_s:.1f}) | "
                     f"{g.rest_s:.1f} | {v.measured_recovery_s:.1f} | {g.utilisation:.3f} | {heur} |")
    return [*lines, ""]


def _plot_recovery_curves(result: BenchResult, out: Path) -> Path:
    doc = load_profiles(result.profile.profiles)
    rows = summarise(doc)
    x = [r.checkpoint_interval_ms / 1000.0 for r in rows]
    fine = np.linspace(min(x), max(x), 200)
    fig, ax = new_figure("Recovery time by checkpoint interval", "trigger (checkpoint) interval s", "recovery time s")
    for name in VARIANTS:
        model = fit_quadratic(x, recovery_points(rows, VALIDATED_CASE, name))
        ax.plot(fine, model.predict(fine), linewidth=2.5 if name == result.variant else 1,
                linestyle="-" if name == result.variant else ":", label=f"A({VALIDATED_CASE}), {name}")
    ax.scatter([r.checkpoint_interval_ms / 1000 for r in result.rows], [r.measured_recovery_s for r in result.rows],
               color="black", zorder=3, label="measured, profiling copies")
    ax.scatter([v.validated_interval_ms / 1000 for v in result.validations], [v.measured_recovery_s for v in result.validations],
               color="red", marker="x", s=60, zorder=4, label="measured, validations")
    ax.legend(loc="best", fontsize="small")
    return save_next_to(fig, out, "recovery")


def _plot_validations(result: BenchResult, out: Path) -> Path:
    fig, ax = new_figure("Validations: measured vs predicted recovery", "predicted recovery s", "measured recovery s")
    predicted = [v.predicted_recovery_s for v in result.validations]
    measured = [v.measured_recovery_s for v in result.validations]
    predicted_vs_measured(ax, predicted, measured, [f"validation {i}" for i in range(1, len(predicted) + 1)])
    target = result.validations[0].recovery_target
    lo, hi = ax.get_xlim()
    xs = np.linspace(max(lo, 1e-9), hi, 50)
    ax.fill_between(xs, xs / (1 + target), xs / (1 - target) if target < 1 else hi, color="green", alpha=0.1,
                    label=f"within {target:.0%}")
    ax.legend(loc="best", fontsize="small")
    return save_next_to(fig, out, "validations")
