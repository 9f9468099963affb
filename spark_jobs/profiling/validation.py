"""``ftops profile validate``: run the recommended interval with failures, compare predicted with measured."""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path
from typing import NamedTuple

from ft_core.checkpoint.profiles import ProfilesDocument, load_profiles, summarise
from ft_core.checkpoint.recovery_time import VARIANTS, Case, Variant
from ft_core.checkpoint.tuning import CheckpointPlan, fit_quadratic, plan_checkpoint, recovery_points
from ft_core.checkpoint.variant_choice import MEASURED_CASE, VariantChoice, resolve_variant
from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.validation import validate
from spark_jobs.profiling.copies import run_copies
from spark_jobs.profiling.profiles import interval_rows, run_conditions
from spark_jobs.profiling.reports import CopyResult, ProfileRaw, ValidationReport, VariantError
from spark_jobs.profiling.settings import Progress, ValidateConfig, check_settings, raw_path
from spark_jobs.profiling.vector import LineageCheck, lineage_check, pinned_settings
from spark_jobs.runtime.atomic_json import write_json
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.loading import load_workload

# The validation run injects failures as profiling does, just before a checkpoint: E is about one
# interval, the worst case, so the prediction it checks is the recovery model of case max.
VALIDATED_CASE = MEASURED_CASE
# Validation runs under the profile's conditions: as many copies at once, the same restart delay (T is an
# input of the model), master and driver memory.
INHERITED_CONDITIONS = ("parallel", "detection_timeout_s", "master", "driver_memory")


def relative_error(predicted: float, measured: float) -> float:
    """``|predicted - measured| / measured``: the error relative to what was measured."""
    return abs(predicted - measured) / measured if measured else math.inf


def recovery_model_at(doc: ProfilesDocument, interval_s: float, case: Case, variant: Variant) -> float:
    """Chiron's recovery model ``A`` (fitted to the TRT heuristic at the profiled intervals) at ``interval_s``."""
    rows = summarise(doc)
    model = fit_quadratic([r.checkpoint_interval_ms / 1000.0 for r in rows], recovery_points(rows, case, variant))
    return float(model.predict(interval_s))


def _profiled_raw(profiles: Path) -> ProfileRaw | None:
    path = raw_path(profiles)
    return validate(ProfileRaw, read_document(path, "raw samples"), "raw samples") if path.exists() else None


def _inherit_profiled(config: ValidateConfig) -> tuple[ValidateConfig, ProfileRaw | None]:
    """Validate what was profiled, under the profile's conditions: the raw file's pipeline parameters
    when none are given, its copies at once (as many copies of the recommended interval run together,
    so they compete for the machine as the profiled ones did), restart delay, master and driver memory;
    a different pipeline, parameters or fixed part of the vector is an InputError."""
    raw = _profiled_raw(config.profiles)
    if raw is None:
        return config, None
    if raw.settings.get("pipeline") != config.pipeline:
        raise InputError(f"--pipeline: the profiles were measured on {raw.settings.get('pipeline')!r}, not {config.pipeline!r}")
    if not config.params:
        config = config.model_copy(update={"params": list(raw.settings.get("params", []))})
    if load_workload(config.pipeline, config.params).params_dict() != raw.params:
        raise InputError("--param: the pipeline parameters differ from the profiled ones "
                         f"({', '.join(f'{k}={v}' for k, v in raw.params.items())})")
    ours = config.vector(raw.vector.trigger_s)
    if ours != raw.vector:
        raise InputError(f"the checkpoint vector differs from the profiled one ({raw.vector.describe()}); "
                         "validate with the same --shuffle-partitions, --state-store, --changelog and --min-deltas-for-snapshot")
    config = config.model_copy(update={k: raw.settings[k] for k in INHERITED_CONDITIONS if k in raw.settings})
    return config.model_copy(update={"repetitions": max(config.repetitions, config.parallel)}), raw


class _Prepared(NamedTuple):
    config: ValidateConfig
    workload: Workload
    doc: ProfilesDocument
    plan: CheckpointPlan
    choice: VariantChoice | None
    profiled: ProfileRaw | None


def prepare_validation(config: ValidateConfig) -> _Prepared:
    """Check the inputs, choose the variant and plan (InputError, or InfeasibleError when no interval
    meets the bound)."""
    if not config.profiles.is_file():
        raise InputError(f"--profiles: file {str(config.profiles)!r} does not exist")
    if config.against_checkpoint is not None and not config.against_checkpoint.is_dir():
        raise InputError(f"--against-checkpoint: folder {str(config.against_checkpoint)!r} does not exist")
    doc = load_profiles(config.profiles)
    config, profiled = _inherit_profiled(config)
    workload = check_settings(config)
    variant, choice = resolve_variant(doc, config.variant)
    plan = plan_checkpoint(doc, config.max_recovery_s, case=config.case, variant=variant, mtbf_s=config.mtbf_s)
    return _Prepared(config, workload, doc, plan, choice, profiled)


def validate_profiles(config: ValidateConfig, progress: Progress | None = None) -> ValidationReport:
    """``ftops profile validate``: plan from the profiles, run the recommended interval with failures,
    compare predicted with measured latency and recovery time."""
    say = progress or (lambda _msg: None)
    prep = prepare_validation(config)
    config, plan = prep.config, prep.plan
    trigger_s = round(plan.checkpoint_interval_ms) / 1000.0
    vector = config.vector(trigger_s)
    current = pinned_settings(config.against_checkpoint) if config.against_checkpoint else vector.pinned()
    lineage = lineage_check(vector, current)
    if prep.choice is not None:
        say(f"variant {prep.choice.reason}")
    say(f"recommended interval {trigger_s:g} s (predicted latency {plan.predicted_latency_ms:.0f} ms, recovery "
        f"{plan.predicted_recovery_s:.1f} s, variant {plan.variant}); running it with {config.failures} failure(s), "
        f"{config.repetitions} cop{'y' if config.repetitions == 1 else 'ies'}, {config.parallel} at a time")
    copies, feed, started = run_copies(config, prep.workload, [(vector, rep) for rep in range(1, config.repetitions + 1)], say)
    raw = ProfileRaw(kind="validate", settings=json.loads(config.model_dump_json()), vector=vector,
                     params=prep.workload.params_dict(), started_at=started, finished_at=time.time(), feed=feed, copies=copies)
    raw_file = config.work_dir.resolve() / "validation.raw.json"
    write_json(raw_file, raw)
    return _validation_report(prep, trigger_s, copies, lineage, raw_file, started)


def _validation_report(prep: _Prepared, trigger_s: float, copies: list[CopyResult], lineage: LineageCheck,
                       raw_file: Path, started: float) -> ValidationReport:
    config, doc, plan = prep.config, prep.doc, prep.plan
    measured = [f.recovery_time_s for c in copies for f in c.failures]
    latency = statistics.fmean(c.avg_latency_ms for c in copies)
    recovery = statistics.fmean(measured)
    by_variant = {}
    for variant in VARIANTS:
        predicted = recovery_model_at(doc, trigger_s, VALIDATED_CASE, variant)
        by_variant[variant] = VariantError(predicted_recovery_s=predicted, recovery_error=relative_error(predicted, recovery))
    outputs = [c.output for c in copies if c.output is not None]
    outputs_equal = all(o.equals_reference for o in outputs) and len(outputs) == len(copies)
    predicted = by_variant[plan.variant].predicted_recovery_s
    error = relative_error(predicted, recovery)
    met = error <= config.max_recovery_error
    return ValidationReport(
        workload=prep.workload.name, profiles=str(config.profiles), raw=str(raw_file), plan=plan,
        validated_interval_ms=trigger_s * 1000, predicted_latency_ms=plan.predicted_latency_ms,
        predicted_recovery_s=predicted, measured_latency_ms=latency, measured_recovery_s=recovery,
        measured_recovery_per_failure_s=measured, latency_error=relative_error(plan.predicted_latency_ms, latency),
        recovery_error=error, recovery_error_per_failure=[relative_error(predicted, m) for m in measured],
        recovery_target=config.max_recovery_error, target_met=met, validated=met and outputs_equal,
        reason=validation_reason(predicted, recovery, config.max_recovery_error, outputs_equal, plan.variant),
        validated_case=VALIDATED_CASE, variant_choice=prep.choice,
        profile_conditions=None if prep.profiled is None else run_conditions(int(prep.profiled.settings.get("parallel", 1)),
                                                                             prep.profiled.copies),
        conditions=run_conditions(config.parallel, copies), by_variant=by_variant, lineage=lineage,
        copies=interval_rows(copies), outputs_equal_reference=outputs_equal,
        lost_windows=sum(o.lost_windows for o in outputs), duplicated_windows=sum(o.duplicated_windows for o in outputs),
        elapsed_s=time.time() - started)


def validation_reason(predicted: float, measured: float, bound: float, outputs_equal: bool, variant: str) -> str:
    """One line: whether the prediction held, in numbers (and whether the output was right)."""
    error = relative_error(predicted, measured)
    verdict = "validated" if error <= bound else "not validated"
    line = (f"{verdict}: predicted recovery {predicted:.1f} s ({variant}) against {measured:.1f} s measured, error "
            f"{error:.1%} {'<=' if error <= bound else '>'} the bound {bound:.0%}")
    return line if outputs_equal else f"not validated: the output differs from the reference ({line})"


