"""``ftops profile checkpoint``: profile every interval, write the profiles document and its raw samples."""

from __future__ import annotations

import json
import os
import statistics
import time

from ft_core.checkpoint.profiles import parse_profiles
from ft_core.errors import InputError
from spark_jobs.profiling.copies import run_copies
from spark_jobs.profiling.reports import CopyResult, IntervalRow, ProfileRaw, ProfileReport, RunConditions
from spark_jobs.profiling.settings import (
    ProfileConfig,
    Progress,
    RunSettings,
    check_intervals,
    check_settings,
    raw_path,
)
from spark_jobs.runtime.atomic_json import write_json
from spark_jobs.pipeline.definition import Workload


def repetition_entry(copy: CopyResult) -> dict:
    """One ``repetitions`` entry of the profiles document: a copy, R and W averaged over its failures."""
    entry = {"run_id": copy.copy_id, "avg_ingress_rate": copy.avg_ingress_rate, "max_ingress_rate": copy.max_ingress_rate,
             "avg_latency_ms": copy.avg_latency_ms, "recovery_time_s": copy.restore_s,
             "warmup_time_s": copy.warmup_s, "detection_timeout_s": copy.detection_s,
             "total_recovery_time_s": copy.recovery_time_s}
    if copy.checkpoint_duration_ms is not None:
        entry["checkpoint_duration_ms"] = copy.checkpoint_duration_ms
    return entry


def profiles_document(settings: RunSettings, workload: Workload, copies: list[CopyResult]) -> dict:
    """The profiles document of :mod:`ft_core.checkpoint.profiles` (validated before it is returned)."""
    by_interval: dict[float, list[dict]] = {}
    for copy in sorted(copies, key=lambda c: (c.vector.trigger_s, c.repetition)):
        by_interval.setdefault(round(copy.vector.trigger_s * 1000, 3), []).append(repetition_entry(copy))
    params = ", ".join(f"{k}={v}" for k, v in workload.params_dict().items())
    doc = {
        "job": workload.name,
        "description": (f"ftops profile checkpoint on Spark: pipeline {workload.name} ({params}); checkpoint vector: "
                        f"trigger interval profiled, {copies[0].vector.describe()}; {settings.failures} driver kill(s) "
                        f"per copy near the end of a checkpoint interval; master {settings.master}, "
                        f"{settings.parallel} copies at once on {os.cpu_count()} cores"),
        "detection_timeout_s": settings.detection_timeout_s,
        "profiles": [{"checkpoint_interval_ms": ms, "repetitions": reps} for ms, reps in sorted(by_interval.items())],
    }
    if settings.mtbf_s is not None:
        doc["mtbf_s"] = settings.mtbf_s
    parse_profiles(doc, min_intervals=1)
    return doc


def interval_rows(copies: list[CopyResult]) -> list[IntervalRow]:
    """Per interval, the means over its copies (the document keeps each copy)."""
    groups: dict[float, list[CopyResult]] = {}
    for copy in copies:
        groups.setdefault(copy.vector.trigger_s, []).append(copy)
    rows = []
    for trigger, group in sorted(groups.items()):
        mean = lambda attr: statistics.fmean(getattr(c, attr) for c in group)  # noqa: E731 - local shorthand
        costs = [c.checkpoint_duration_ms for c in group if c.checkpoint_duration_ms is not None]
        loads = [c.load_1m for c in group if c.load_1m is not None]
        outputs = [c.output for c in group if c.output is not None]
        rows.append(IntervalRow(
            checkpoint_interval_ms=round(trigger * 1000, 3), copies=len(group), avg_ingress_rate=mean("avg_ingress_rate"),
            max_ingress_rate=mean("max_ingress_rate"), utilisation=mean("avg_ingress_rate") / mean("max_ingress_rate"),
            avg_latency_ms=mean("avg_latency_ms"), restore_s=mean("restore_s"), warmup_s=mean("warmup_s"),
            measured_recovery_s=mean("recovery_time_s"), checkpoint_duration_ms=statistics.fmean(costs) if costs else None,
            outputs_equal_reference=len(outputs) == len(group) and all(o.equals_reference for o in outputs),
            lost_windows=sum(o.lost_windows for o in outputs), duplicated_windows=sum(o.duplicated_windows for o in outputs),
            load_1m=statistics.fmean(loads) if loads else None))
    return rows


def run_conditions(parallel: int, copies: list[CopyResult]) -> RunConditions:
    """How many copies ran at once and the machine's load while they ran."""
    loads = [c.load_1m for c in copies if c.load_1m is not None]
    return RunConditions(copies_at_once=min(parallel, len(copies)), cores=os.cpu_count() or 1,
                         load_1m=statistics.fmean(loads) if loads else None)


def _warnings(settings: RunSettings, rows: list[IntervalRow], copies: list[CopyResult]) -> list[str]:
    out = []
    if len(rows) < 3:
        out.append(f"{len(rows)} interval(s) profiled: `ftops plan checkpoint` needs at least 3")
    cores = os.cpu_count() or 1
    if min(settings.parallel, len(copies)) > 1:
        out.append(f"{min(settings.parallel, len(copies))} copies ran at once on {cores} cores and competed for them "
                   "(Chiron profiles on separate machines); compare intervals, not absolute numbers")
    out += [f"interval {r.checkpoint_interval_ms:g} ms: utilisation {r.utilisation:.2f} >= 1, the planner rejects it"
            for r in rows if r.utilisation >= 1]
    out += [f"copy {c.copy_id}: output differs from the reference ({c.output.lost_windows} lost, "
            f"{c.output.duplicated_windows} duplicated windows)" for c in copies if c.output and not c.output.equals_reference]
    out += [f"copy {c.copy_id}: failure {f.index} restarted with different pinned settings" for c in copies
            for f in c.failures if not f.lineage_unchanged]
    return out


def prepare_profiling(config: ProfileConfig) -> tuple[Workload, list[float]]:
    """Everything checked before a process starts (InputError names the option)."""
    intervals = check_intervals(config.intervals_s)
    workload = check_settings(config)
    out = config.out_path
    if not out.parent.is_dir() and out.parent != config.work_dir.resolve():
        raise InputError(f"--out: folder {str(out.parent)!r} does not exist")
    return workload, intervals


def run_profiling(config: ProfileConfig, progress: Progress | None = None) -> ProfileReport:
    """``ftops profile checkpoint``: profile every interval, write the profiles document and its raw file."""
    say = progress or (lambda _msg: None)
    workload, intervals = prepare_profiling(config)
    vectors = [(config.vector(ci), rep) for ci in intervals for rep in range(1, config.repetitions + 1)]
    copies, feed, started = run_copies(config, workload, vectors, say)
    doc = profiles_document(config, workload, copies)
    out = config.out_path
    write_json(out, doc)
    raw = ProfileRaw(kind="profile", settings=json.loads(config.model_dump_json()), vector=config.vector(intervals[0]),
                     params=workload.params_dict(), started_at=started, finished_at=time.time(), feed=feed, copies=copies)
    write_json(raw_path(out), raw)
    rows = interval_rows(copies)
    return ProfileReport(workload=workload.name, profiles=str(out), raw=str(raw_path(out)), vector=config.vector(intervals[0]),
                         intervals=rows, warnings=_warnings(config, rows, copies), elapsed_s=time.time() - started)


