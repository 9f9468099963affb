"""``ftops bench checkpoint``: profile at least five intervals, recommend, validate, write the table."""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from pydantic import BaseModel, Field

from ft_core.checkpoint.profiles import ProfilesDocument, load_profiles, summarise
from ft_core.checkpoint.recovery_time import VARIANTS, Case, Variant
from ft_core.checkpoint.tuning import DEFAULT_CASE, DEFAULT_VARIANT, CheckpointPlan, fit_quadratic, recovery_points
from ft_core.errors import InputError
from spark_jobs.profiling.profiles import interval_rows, run_profiling
from spark_jobs.profiling.reports import CopyResult, ProfileRaw, ProfileReport, ValidationReport
from spark_jobs.profiling.settings import (
    ProfileConfig,
    Progress,
    RunSettings,
    ValidateConfig,
    check_intervals,
    check_settings,
)
from spark_jobs.profiling.validation import relative_error, validate_profiles

BENCH_MIN_INTERVALS = 5


class BenchConfig(RunSettings):
    """``ftops bench checkpoint``: profile, recommend, validate."""

    intervals_s: list[float]
    max_recovery_s: float | None = Field(default=None, gt=0, description="C_TRT (None: the median of the "
                                         "recovery model's values at the profiled intervals)")
    case: Case = DEFAULT_CASE
    variant: Variant = DEFAULT_VARIANT


class InSampleRow(BaseModel):
    """One profiled interval: measured values, the heuristic and the fitted models there."""

    checkpoint_interval_ms: float
    avg_ingress_rate: float
    max_ingress_rate: float
    utilisation: float
    avg_latency_ms: float
    model_latency_ms: float
    restore_s: float
    warmup_s: float
    measured_recovery_s: float
    heuristic_recovery_s: float
    model_recovery_s: float
    checkpoint_duration_ms: float | None
    outputs_equal_reference: bool


class GapAnalysis(BaseModel):
    """Where the validation's measured recovery time goes, and what the heuristic says with the
    validation run's own inputs (so the heuristic's form is separated from the profiling noise)."""

    detection_s: float
    restore_s: float
    first_batch_s: float
    rest_s: float = Field(description="after the first batch: catch-up batches and the trigger wait until the lag is back")
    warmup_s: float
    utilisation: float
    reprocess_s: float
    heuristic_with_measured_inputs_s: dict[str, float]


class BenchResult(BaseModel):
    command: str
    machine: str
    config: dict
    bound_s: float
    bound_source: str
    profile: ProfileReport
    rows: list[InSampleRow]
    r2_latency: float
    r2_recovery_by_case: dict[str, float]
    r2_model_vs_measured_recovery: float
    validation: ValidationReport
    gap: GapAnalysis
    elapsed_s: float


def default_bound_s(doc: ProfilesDocument, case: Case, variant: Variant) -> float:
    """A bound in the middle of what the profiled intervals achieve: the median of the recovery
    model's values at the profiled intervals (so the constraint decides rather than holds
    everywhere, and at least one profiled interval meets it)."""
    rows = summarise(doc)
    x = [r.checkpoint_interval_ms / 1000.0 for r in rows]
    model = fit_quadratic(x, recovery_points(rows, case, variant))
    return float(statistics.median(float(model.predict(v)) for v in x))


def run_bench(config: BenchConfig, command: str, progress: Progress | None = None) -> BenchResult:
    """Profile at least five intervals, plan with Chiron's optimiser, validate the recommendation."""
    say = progress or (lambda _msg: None)
    if len(check_intervals(config.intervals_s)) < BENCH_MIN_INTERVALS:
        raise InputError(f"--intervals: the benchmark profiles at least {BENCH_MIN_INTERVALS} intervals, got "
                         f"{len(config.intervals_s)}")
    started = time.time()
    work = config.work_dir.resolve()
    run = {k: v for k, v in config.model_dump().items() if k in RunSettings.model_fields}
    profile_config = ProfileConfig(**{**run, "work_dir": work / "profile"}, intervals_s=config.intervals_s,
                                   out=work / "profile" / "profiles.json")
    check_settings(config)
    say(f"profiling {len(config.intervals_s)} intervals")
    profile = run_profiling(profile_config, lambda m: say(f"profile: {m}"))
    doc = load_profiles(profile.profiles)
    bound = config.max_recovery_s or default_bound_s(doc, config.case, config.variant)
    source = "--max-recovery-s" if config.max_recovery_s else f"median of A({config.case}, {config.variant}) at the profiled intervals"
    validate_config = ValidateConfig(**{**run, "work_dir": work / "validate"}, profiles=Path(profile.profiles),
                                     max_recovery_s=bound, case=config.case, variant=config.variant)
    say(f"validating with C_TRT = {bound:.1f} s ({source})")
    validation = validate_profiles(validate_config, lambda m: say(f"validate: {m}"))
    raw = ProfileRaw.model_validate_json(Path(profile.raw).read_text())
    rows = _in_sample_rows(doc, raw.copies, validation.plan, config.case, config.variant)
    return BenchResult(
        command=command, machine=f"{os.cpu_count()} cores, Spark {_spark_version()}, master {config.master}, "
        f"{min(config.parallel, len(config.intervals_s))} copies at once", config=json.loads(config.model_dump_json()),
        bound_s=bound, bound_source=source, profile=profile, rows=rows, r2_latency=validation.plan.r2["latency"],
        r2_recovery_by_case=validation.plan.recovery_r2_by_case,
        r2_model_vs_measured_recovery=_r2([r.measured_recovery_s for r in rows], [r.model_recovery_s for r in rows]),
        validation=validation, gap=_gap(work / "validate" / "validation.raw.json", config), elapsed_s=time.time() - started)


def _spark_version() -> str:
    import pyspark

    return pyspark.__version__


def _r2(observed: list[float], fitted: list[float]) -> float:
    from ft_core.checkpoint.tuning import r_squared

    return r_squared(observed, fitted)


def _in_sample_rows(doc: ProfilesDocument, copies: list[CopyResult], plan: CheckpointPlan, case: Case,
                    variant: Variant) -> list[InSampleRow]:
    summaries = summarise(doc)
    heuristic = recovery_points(summaries, case, variant)
    rows = {r.checkpoint_interval_ms: r for r in interval_rows(copies)}
    out = []
    for summary, trt in zip(summaries, heuristic):
        row, x = rows[summary.checkpoint_interval_ms], summary.checkpoint_interval_ms / 1000.0
        out.append(InSampleRow(
            checkpoint_interval_ms=summary.checkpoint_interval_ms, avg_ingress_rate=summary.avg_ingress_rate,
            max_ingress_rate=summary.max_ingress_rate, utilisation=summary.utilisation,
            avg_latency_ms=summary.avg_latency_ms, model_latency_ms=float(plan.latency_model.predict(x)),
            restore_s=summary.recovery_time_s, warmup_s=summary.warmup_time_s,
            measured_recovery_s=row.measured_recovery_s, heuristic_recovery_s=trt,
            model_recovery_s=float(plan.recovery_model.predict(x)), checkpoint_duration_ms=summary.checkpoint_duration_ms,
            outputs_equal_reference=row.outputs_equal_reference))
    return out


def _gap(raw_file: Path, config: BenchConfig) -> GapAnalysis:
    from ft_core.checkpoint.recovery_time import reprocess_time, total_recovery_time

    raw = ProfileRaw.model_validate_json(raw_file.read_text())
    failures = [f for c in raw.copies for f in c.failures]
    mean = lambda attr: statistics.fmean(getattr(f, attr) for f in failures)  # noqa: E731 - local shorthand
    t, r, w, first = mean("detection_s"), mean("restore_s"), mean("warmup_s"), mean("first_batch_s")
    u = statistics.fmean(c.avg_ingress_rate / c.max_ingress_rate for c in raw.copies)
    e = reprocess_time(raw.vector.trigger_s, config.case)
    heuristic = {v: total_recovery_time(e, t, r, w, u, variant=v, unit="s") for v in VARIANTS}
    return GapAnalysis(detection_s=t, restore_s=r, first_batch_s=first, rest_s=mean("recovery_time_s") - t - r - first,
                       warmup_s=w, utilisation=u, reprocess_s=e, heuristic_with_measured_inputs_s=heuristic)


def render_bench(result: BenchResult) -> str:
    """The benchmark's markdown (docs/benchmarks/checkpoint.md)."""
    v, p, g = result.validation, result.validation.plan, result.gap
    cfg = result.config
    lines = [
        "# Checkpoint-interval profiling on Spark (paper 004, Chiron)", "",
        f"Produced by `{result.command}` ({result.machine}; {result.elapsed_s / 60:.0f} min). "
        "Definitions of every measure: the docstring of `spark_jobs/profiling.py`.", "",
        f"- Pipeline `{cfg['pipeline']}`: " + ", ".join(f"{k}={val}" for k, val in _bench_params(result).items()) + ".",
        f"- Checkpoint vector: the trigger interval is profiled; {result.profile.vector.describe()} are fixed.",
        f"- Per copy: {cfg['duration_s']:g} s of steady operation around {cfg['failures']} failure(s): SIGKILL of the "
        "driver's process group near the end of a checkpoint interval, relaunch on the same checkpoint after "
        f"T = {cfg['detection_timeout_s']:g} s (`detection_timeout_s`).", "",
        "## Profiled intervals", "",
        f"Medians per interval (one copy each unless stated); TRT heuristic and A(CI) with case `{p.case}`, "
        f"variant `{p.variant}`.", "",
        "| interval s | I_avg rows/s | I_max rows/s | U | latency ms | P(CI) ms | R s | W s | TRT measured s "
        "| TRT heuristic s | A(CI) s | checkpoint cost ms | output = reference |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result.rows:
        cost = "-" if r.checkpoint_duration_ms is None else f"{r.checkpoint_duration_ms:.0f}"
        lines.append(f"| {r.checkpoint_interval_ms / 1000:g} | {r.avg_ingress_rate:.1f} | {r.max_ingress_rate:.1f} | "
                     f"{r.utilisation:.3f} | {r.avg_latency_ms:.0f} | {r.model_latency_ms:.0f} | {r.restore_s:.1f} | "
                     f"{r.warmup_s:.1f} | {r.measured_recovery_s:.1f} | {r.heuristic_recovery_s:.1f} | "
                     f"{r.model_recovery_s:.1f} | {cost} | {'yes' if r.outputs_equal_reference else 'NO'} |")
    lines += [
        "", "## Models", "",
        f"- R^2 of the latency model P: {result.r2_latency:.3f}.",
        "- R^2 of the recovery models A (fitted to the heuristic): "
        + ", ".join(f"{c} {val:.3f}" for c, val in result.r2_recovery_by_case.items()) + ".",
        f"- R^2 of A({p.case}) against the *measured* recovery times at the profiled intervals: "
        f"{result.r2_model_vs_measured_recovery:.3f}.", "",
        "## Recommendation", "",
        f"C_TRT = {result.bound_s:.1f} s ({result.bound_source}). Chiron's optimiser picks **{p.checkpoint_interval_ms / 1000:.3f} s** "
        f"(predicted latency {p.predicted_latency_ms:.0f} ms, predicted recovery {p.predicted_recovery_s:.1f} s; feasible "
        + ", ".join(f"{a / 1000:.2f}-{b / 1000:.2f} s" for a, b in p.feasible_ranges_ms) + "). "
        f"Applying it: {v.lineage.message}.", "",
        *(f"- warning: {w}" for w in p.warnings + result.profile.warnings), "",
        "## Validation", "",
        f"The recommended interval ({v.validated_interval_ms / 1000:g} s), a new copy with {cfg['failures']} failure(s):", "",
        "| | predicted | measured | relative error |", "|---|---|---|---|",
        f"| latency ms | {v.predicted_latency_ms:.0f} | {v.measured_latency_ms:.0f} | {v.latency_error:.1%} |",
        f"| recovery time s | {v.predicted_recovery_s:.1f} | {v.measured_recovery_s:.1f} | {v.recovery_error:.1%} |",
        "", "Per failure: " + ", ".join(f"{m:.1f} s ({e:.0%})" for m, e in
                                        zip(v.measured_recovery_per_failure_s, v.recovery_error_per_failure)) + ".",
        "", "The recovery model of each heuristic variant at the validated interval:", "",
        "| variant | predicted recovery s | relative error |", "|---|---|---|",
        *(f"| {name} | {e.predicted_recovery_s:.1f} | {e.recovery_error:.1%} |" for name, e in v.by_variant.items()),
        "", f"Outputs: {'every copy equals the reference' if v.outputs_equal_reference and all(r.outputs_equal_reference for r in result.rows) else 'NOT all equal to the reference'}; "
        f"{v.lost_windows} lost and {v.duplicated_windows} duplicated windows in the validation.", "",
        "## Target", "",
        f"Chiron's predicted recovery time within {v.recovery_target:.0%} of the measured one on validation: "
        f"**{'met' if v.target_met else 'not met'}** (error {v.recovery_error:.1%}).", "",
        f"Where the measured recovery time goes (validation, mean over failures): T {g.detection_s:.1f} s + R "
        f"{g.restore_s:.1f} s + first batch after the restart {g.first_batch_s:.1f} s (of which W {g.warmup_s:.1f} s) "
        f"+ {g.rest_s:.1f} s of catch-up batches and trigger waits until the lag is back = {v.measured_recovery_s:.1f} s. "
        f"With the validation run's own T, R, W and U = {g.utilisation:.3f} (E = {g.reprocess_s:.1f} s, case {p.case}) "
        "the heuristic gives " + ", ".join(f"{name} {val:.1f} s ({relative_error(val, v.measured_recovery_s):.0%})"
                                            for name, val in g.heuristic_with_measured_inputs_s.items())
        + f"; the profiled models give {v.predicted_recovery_s:.1f} s.", "",
    ]
    return "\n".join(lines)


def _bench_params(result: BenchResult) -> dict:
    raw = ProfileRaw.model_validate_json(Path(result.profile.raw).read_text())
    return raw.params
