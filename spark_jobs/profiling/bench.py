"""``ftops bench checkpoint``: profile at least five intervals one at a time, choose the recovery-time
variant, recommend, and validate the recommendation three times in a row (issue 15: predicted recovery
within 20% of the measured one in 3 consecutive validations). The markdown and plots:
:mod:`spark_jobs.profiling.bench_report`."""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from pydantic import BaseModel, Field

from ft_core.checkpoint.profiles import ProfilesDocument, load_profiles, summarise
from ft_core.checkpoint.recovery_time import VARIANTS, Case, Variant, reprocess_time, total_recovery_time
from ft_core.checkpoint.tuning import DEFAULT_CASE, fit_quadratic, r_squared, recovery_points
from ft_core.checkpoint.variant_choice import AUTO, VariantChoice, resolve_variant
from ft_core.errors import InputError
from spark_jobs.profiling.profiles import interval_rows, run_profiling
from spark_jobs.profiling.reports import CopyResult, ProfileRaw, ProfileReport, ValidationReport
from spark_jobs.profiling.settings import (
    DEFAULT_MAX_RECOVERY_ERROR,
    ProfileConfig,
    Progress,
    RunSettings,
    ValidateConfig,
    check_intervals,
    check_settings,
)
from spark_jobs.profiling.validation import VALIDATED_CASE, validate_profiles

BENCH_MIN_INTERVALS = 5
BENCH_VALIDATIONS = 3


class BenchConfig(RunSettings):
    """``ftops bench checkpoint``: profile, choose the variant, recommend, validate ``validations`` times."""

    intervals_s: list[float]
    max_recovery_s: float | None = Field(default=None, gt=0, description="C_TRT (None: the median of the "
                                         "recovery model's values at the profiled intervals)")
    case: Case = DEFAULT_CASE
    variant: Variant | str = AUTO
    max_recovery_error: float = Field(default=DEFAULT_MAX_RECOVERY_ERROR, ge=0)
    validations: int = Field(default=BENCH_VALIDATIONS, ge=1, description="consecutive validation runs")


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
    load_1m: float | None


class GapAnalysis(BaseModel):
    """Where a validation's measured recovery time goes, and what the heuristic says with the
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
    variant: Variant
    variant_choice: VariantChoice | None
    rows: list[InSampleRow]
    r2_latency: float
    r2_recovery_by_case: dict[str, float]
    r2_model_vs_measured_recovery: float
    validations: list[ValidationReport]
    gaps: list[GapAnalysis]
    consecutive_within_target: int = Field(description="the longest run of consecutive validations within the target")
    target_met: bool = Field(description="every one of the validations (all consecutive) within the target")
    elapsed_s: float


def default_bound_s(doc: ProfilesDocument, case: Case, variant: Variant) -> float:
    """A bound in the middle of what the profiled intervals achieve: the median of the recovery
    model's values at the profiled intervals (so the constraint decides rather than holds
    everywhere, and at least one profiled interval meets it)."""
    rows = summarise(doc)
    x = [r.checkpoint_interval_ms / 1000.0 for r in rows]
    model = fit_quadratic(x, recovery_points(rows, case, variant))
    return float(statistics.median(float(model.predict(v)) for v in x))


def longest_streak(flags: list[bool]) -> int:
    """The longest run of consecutive True values."""
    best = run = 0
    for flag in flags:
        run = run + 1 if flag else 0
        best = max(best, run)
    return best


def run_bench(config: BenchConfig, command: str, progress: Progress | None = None) -> BenchResult:
    """Profile at least five intervals, choose the variant, plan, validate the recommendation ``validations`` times."""
    say = progress or (lambda _msg: None)
    if len(check_intervals(config.intervals_s)) < BENCH_MIN_INTERVALS:
        raise InputError(f"--intervals: the benchmark profiles at least {BENCH_MIN_INTERVALS} intervals, got "
                         f"{len(config.intervals_s)}")
    if config.variant != AUTO and config.variant not in VARIANTS:
        raise InputError(f"--variant: expected one of {AUTO}, {', '.join(VARIANTS)}, got {config.variant!r}")
    started = time.time()
    work = config.work_dir.resolve()
    run = {k: v for k, v in config.model_dump().items() if k in RunSettings.model_fields}
    profile_config = ProfileConfig(**{**run, "work_dir": work / "profile"}, intervals_s=config.intervals_s,
                                   out=work / "profile" / "profiles.json")
    check_settings(config)
    say(f"profiling {len(config.intervals_s)} intervals, {config.parallel} cop{'y' if config.parallel == 1 else 'ies'} at a time")
    profile = run_profiling(profile_config, lambda m: say(f"profile: {m}"))
    doc = load_profiles(profile.profiles)
    variant, choice = resolve_variant(doc, config.variant)
    if choice is not None:
        say(f"variant {choice.reason}")
    bound = config.max_recovery_s or default_bound_s(doc, config.case, variant)
    source = "--max-recovery-s" if config.max_recovery_s else f"median of A({config.case}, {variant}) at the profiled intervals"
    validations = []
    for n in range(1, config.validations + 1):
        validate_config = ValidateConfig(**{**run, "work_dir": work / f"validate-{n}"}, profiles=Path(profile.profiles),
                                         max_recovery_s=bound, case=config.case, variant=config.variant,
                                         max_recovery_error=config.max_recovery_error)
        say(f"validation {n} of {config.validations} with C_TRT = {bound:.1f} s ({source})")
        report = validate_profiles(validate_config, lambda m, n=n: say(f"validate {n}: {m}"))
        say(f"validation {n}: {report.reason}")
        validations.append(report)
    plan = validations[0].plan
    raw = ProfileRaw.model_validate_json(Path(profile.raw).read_text())
    rows = _in_sample_rows(doc, raw.copies, plan.latency_model, config.case, variant)
    met = [v.target_met for v in validations]
    return BenchResult(
        command=command, machine=f"{os.cpu_count()} cores, Spark {_spark_version()}, master {config.master}, "
        f"{min(config.parallel, len(config.intervals_s))} cop{'y' if config.parallel == 1 else 'ies'} at once",
        config=json.loads(config.model_dump_json()), bound_s=bound, bound_source=source, profile=profile,
        variant=variant, variant_choice=choice, rows=rows, r2_latency=plan.r2["latency"],
        r2_recovery_by_case=plan.recovery_r2_by_case,
        r2_model_vs_measured_recovery=r_squared([r.measured_recovery_s for r in rows], [r.model_recovery_s for r in rows]),
        validations=validations, gaps=[_gap(Path(v.raw)) for v in validations],
        consecutive_within_target=longest_streak(met), target_met=all(met), elapsed_s=time.time() - started)


def _spark_version() -> str:
    import pyspark

    return pyspark.__version__


def _in_sample_rows(doc: ProfilesDocument, copies: list[CopyResult], latency, case: Case, variant: Variant) -> list[InSampleRow]:
    """Per profiled interval: what was measured, the heuristic of the validated case (the failures'),
    and the models there."""
    summaries = summarise(doc)
    x = [s.checkpoint_interval_ms / 1000.0 for s in summaries]
    heuristic = recovery_points(summaries, VALIDATED_CASE, variant)
    recovery = fit_quadratic(x, heuristic)
    rows = {r.checkpoint_interval_ms: r for r in interval_rows(copies)}
    out = []
    for summary, trt, xi in zip(summaries, heuristic, x):
        row = rows[summary.checkpoint_interval_ms]
        out.append(InSampleRow(
            checkpoint_interval_ms=summary.checkpoint_interval_ms, avg_ingress_rate=summary.avg_ingress_rate,
            max_ingress_rate=summary.max_ingress_rate, utilisation=summary.utilisation,
            avg_latency_ms=summary.avg_latency_ms, model_latency_ms=float(latency.predict(xi)),
            restore_s=summary.recovery_time_s, warmup_s=summary.warmup_time_s,
            measured_recovery_s=row.measured_recovery_s, heuristic_recovery_s=trt,
            model_recovery_s=float(recovery.predict(xi)), checkpoint_duration_ms=summary.checkpoint_duration_ms,
            outputs_equal_reference=row.outputs_equal_reference, load_1m=row.load_1m))
    return out


def _gap(raw_file: Path) -> GapAnalysis:
    raw = ProfileRaw.model_validate_json(raw_file.read_text())
    failures = [f for c in raw.copies for f in c.failures]
    mean = lambda attr: statistics.fmean(getattr(f, attr) for f in failures)  # noqa: E731 - local shorthand
    t, r, w, first = mean("detection_s"), mean("restore_s"), mean("warmup_s"), mean("first_batch_s")
    u = statistics.fmean(c.avg_ingress_rate / c.max_ingress_rate for c in raw.copies)
    e = reprocess_time(raw.vector.trigger_s, VALIDATED_CASE)
    heuristic = {v: total_recovery_time(e, t, r, w, u, variant=v, unit="s") for v in VARIANTS}
    return GapAnalysis(detection_s=t, restore_s=r, first_batch_s=first, rest_s=mean("recovery_time_s") - t - r - first,
                       warmup_s=w, utilisation=u, reprocess_s=e, heuristic_with_measured_inputs_s=heuristic)
