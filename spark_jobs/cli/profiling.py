"""``ftops profile checkpoint|validate|topology`` and ``ftops bench checkpoint`` (registered through the
``ftops.commands`` entry point ``profiling = "spark_jobs.cli.profiling"``); the logic lives in
:mod:`spark_jobs.profiling`, so Airflow operators run the same steps.

- ``profile checkpoint --workload W --intervals 1,2,5,10,20 --failures 3 --duration S``: one isolated
  copy per interval (and repetition) on a shared, seeded input fed in real time, ``--parallel`` at a
  time; writes the profiles document ``ftops plan checkpoint`` reads (``--out``, default
  ``<work-dir>/profiles.json``) and ``<name>.raw.json`` next to it with every sample.
- ``profile validate --workload W --profiles PROFILES.json --max-recovery-s X``: Chiron's
  recommendation from the document, run with failures; predicted against measured latency and
  recovery time. The profiled workload parameters are taken from the raw file when ``--param`` is
  not given; an unreachable bound exits 3 as ``ftops plan checkpoint`` does.
- ``bench checkpoint``: profile (at least 5 intervals, one copy at a time), choose the variant, recommend,
  validate 3 times in a row; writes ``docs/benchmarks/checkpoint.md`` and its plots.

Progress goes to stderr; bad input exits 2 with one line before anything starts; a run that fails
midway stops everything it started and names the copy and the step.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from ft_core.input.quantities import Fraction, Positive, PositiveNodeCount, PositiveSeconds, PortBase, Seconds, TaskCount, check_list, flag
from ft_core.checkpoint.recovery_time import CASES, VARIANTS
from ft_core.checkpoint.variant_choice import AUTO
from ft_core.cli.output import command_line, print_json, print_table
from ft_core.cli.progress import Progress
from ft_core.errors import InputError
from spark_jobs.cli.discovery import register_topology_command
from spark_jobs.profiling.settings import DEFAULT_MAX_RECOVERY_ERROR
from spark_jobs.pipeline.loading import add_pipeline_arguments, pipeline_ref

DEFAULT_BENCH_INTERVALS = "2,3,4,6,8"
DEFAULT_BENCH_PARAMS = ["rate=100", "window_s=4", "slide_s=2", "watermark_s=1", "p1=2", "n_pages=60"]


def register(sub, groups) -> None:
    profile = sub.add_parser("profile", help="profiling on Spark: checkpoint intervals (paper 004, Chiron); "
                             "a running job's topology from its Spark UI")
    psub = profile.add_subparsers(dest="profile_command", required=True, parser_class=type(profile))

    cp = psub.add_parser("checkpoint", help="profile checkpoint intervals with injected failures; write the profiles document",
                         description="One isolated copy of the job per interval, all reading one seeded input fed in "
                         "real time; failures injected near the end of a checkpoint interval.")
    _run_options(cp, intervals=True)
    cp.add_argument("--out", type=Path, help="profiles document (default <work-dir>/profiles.json); raw samples "
                    "go to <name>.raw.json next to it")
    cp.add_argument("--json", action="store_true", help="print the per-interval summary as JSON")
    cp.set_defaults(func=_profile)

    val = psub.add_parser("validate", help="run Chiron's recommended interval with failures; predicted vs measured",
                          description="Plan from a profiles document, run the recommended interval, compare.")
    _run_options(val, intervals=False)
    val.add_argument("--profiles", type=Path, required=True, help="profiles document (ftops profile checkpoint)")
    _plan_options(val, bound_required=True)
    val.add_argument("--against-checkpoint", type=Path, help="a running job's checkpoint folder: may the "
                     "recommendation restart on it, or does it need a new checkpoint lineage?")
    val.add_argument("--json", action="store_true", help="print the validation report as JSON")
    val.set_defaults(func=_validate)

    register_topology_command(psub)  # ``profile topology``: discovery from a Spark UI (spark_jobs.cli.discovery)

    bench = groups["bench"].add_parser("checkpoint", help="profile >= 5 intervals, recommend, validate 3 times; writes "
                                       "docs/benchmarks/checkpoint.md")
    _run_options(bench, intervals=True, bench=True)
    _plan_options(bench, bound_required=False)
    bench.add_argument("--out", type=Path, default=Path("docs/benchmarks/checkpoint.md"), help="markdown report to write (default docs/benchmarks/checkpoint.md)")
    bench.add_argument("--validations", type=flag(TaskCount), default=3,
                       help="consecutive validation runs of the recommendation (default 3)")
    bench.add_argument("--json", action="store_true", help="print the whole result as JSON instead of the markdown")
    bench.set_defaults(func=_bench)


def _run_options(parser, intervals: bool, bench: bool = False) -> None:
    add_pipeline_arguments(parser)
    if intervals:
        parser.add_argument("--intervals", required=not bench, default=DEFAULT_BENCH_INTERVALS if bench else None,
                            help="candidate trigger (checkpoint) intervals in seconds, e.g. 1,2,5,10,20"
                            + (f" (default {DEFAULT_BENCH_INTERVALS})" if bench else ""))
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="pipeline parameter (repeatable)" + (f"; default {' '.join(DEFAULT_BENCH_PARAMS)}" if bench else ""))
    parser.add_argument("--failures", type=flag(TaskCount), default=3, help="failures injected per copy (default 3)")
    parser.add_argument("--duration", type=flag(PositiveSeconds), required=not bench, default=30.0 if bench else None, metavar="S",
                        help="seconds of steady operation per copy, split around the failures" + (" (default 30)" if bench else ""))
    parser.add_argument("--repetitions", type=flag(TaskCount), default=1, help="copies per interval (default 1)")
    parser.add_argument("--parallel", type=flag(PositiveNodeCount), default=1,
                        help="copies at once (default 1: copies side by side compete for cores and distort what is measured)")
    parser.add_argument("--work-dir", type=Path, help="an empty folder for input, copies, logs (default: a new temp folder)")
    parser.add_argument("--master", default="local[1]", help="Spark master of every copy (default local[1]; or spark://HOST:PORT)")
    parser.add_argument("--detection-timeout-s", type=flag(Seconds), default=5.0,
                        help="T: seconds from a kill to the relaunch (default 5)")
    parser.add_argument("--min-deltas-for-snapshot", type=flag(TaskCount), help="state snapshot every N deltas (fixed for the run)")
    parser.add_argument("--shuffle-partitions", type=flag(TaskCount), default=2, help="pinned by the checkpoint (default 2)")
    parser.add_argument("--state-store", default="hdfs", help="hdfs or rocksdb (pinned by the checkpoint; default hdfs)")
    parser.add_argument("--changelog", action="store_true", help="RocksDB changelog checkpointing")
    parser.add_argument("--no-event-log", action="store_true", help="no Spark event logs (then no checkpoint cost)")
    parser.add_argument("--ui-port-base", type=flag(PortBase), help="Spark UI of the i-th concurrent copy on BASE+i (default: no UI)")
    parser.add_argument("--mtbf-s", type=flag(Positive), help="MTBF recorded in the document (Young/Daly baselines)")
    parser.add_argument("--timeout-s", type=flag(PositiveSeconds), default=600.0, help="deadline of each wait (default 600)")


def _plan_options(parser, bound_required: bool) -> None:
    parser.add_argument("--max-recovery-s", type=flag(PositiveSeconds), required=bound_required,
                        help="C_TRT, bound on the total recovery time" + ("" if bound_required else
                        " (default: the median of the recovery model at the profiled intervals)"))
    parser.add_argument("--case", default="max", help=f"{'|'.join(CASES)} (default max: failures are injected near "
                        "the end of an interval)")
    parser.add_argument("--variant", default=AUTO, help=f"{AUTO}|{'|'.join(VARIANTS)} (default {AUTO}: the variant whose "
                        "recovery model is closest to the recovery times the profiling copies measured)")
    parser.add_argument("--max-recovery-error", type=flag(Fraction), default=DEFAULT_MAX_RECOVERY_ERROR, metavar="SHARE",
                        help="the prediction validates when |predicted - measured| / measured recovery is at most this "
                        f"(default {DEFAULT_MAX_RECOVERY_ERROR})")




def _intervals(text: str) -> list[float]:
    return check_list(PositiveSeconds, text, "--intervals", max_items="max_tasks")


def _choice(value: str, choices, flag: str) -> str:
    if value not in choices:
        raise InputError(f"{flag}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def _run_values(args: argparse.Namespace, prefix: str) -> dict:
    return dict(pipeline=pipeline_ref(args), params=args.param, failures=args.failures, duration_s=args.duration,
                repetitions=args.repetitions, parallel=args.parallel,
                work_dir=args.work_dir or Path(tempfile.gettempdir()) / f"{prefix}{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}",
                master=args.master, detection_timeout_s=args.detection_timeout_s,
                min_deltas_for_snapshot=args.min_deltas_for_snapshot, shuffle_partitions=args.shuffle_partitions,
                state_store=_choice(args.state_store, ("hdfs", "rocksdb"), "--state-store"),
                changelog_checkpointing=args.changelog, event_log=not args.no_event_log, ui_port_base=args.ui_port_base,
                mtbf_s=args.mtbf_s, timeout_s=args.timeout_s)


def _plan_values(args: argparse.Namespace) -> dict:
    return dict(case=_choice(args.case, CASES, "--case"), variant=_choice(args.variant, (AUTO, *VARIANTS), "--variant"),
                max_recovery_error=args.max_recovery_error)


def _validated(model, **values):
    """Build a pydantic config; a bad value becomes an InputError naming the option."""
    from pydantic import ValidationError

    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "input"
        flag = {"duration_s": "duration", "intervals_s": "intervals", "params": "param",
                "changelog_checkpointing": "changelog"}.get(field, field).replace("_", "-")
        raise InputError(f"--{flag}: {err['msg'].removeprefix('Value error, ')}") from None


def _profile(args: argparse.Namespace) -> int:
    from spark_jobs.profiling import ProfileConfig, run_profiling

    intervals = _intervals(args.intervals)  # the flags first, then the pipeline they apply to
    config = _validated(ProfileConfig, **_run_values(args, "ftops-profile-"), intervals_s=intervals, out=args.out)
    report = run_profiling(config, Progress("profile checkpoint"))
    if args.json:
        print_json(report)
        return 0
    print(f"profiles of {report.workload} written to {report.profiles} (raw samples: {report.raw}) in {report.elapsed_s:.0f} s")
    print_table(["interval ms", "copies", "I_avg", "I_max", "U", "latency ms", "R s", "W s", "TRT s", "output ok"],
                [(f"{r.checkpoint_interval_ms:g}", r.copies, f"{r.avg_ingress_rate:.1f}", f"{r.max_ingress_rate:.1f}",
                  f"{r.utilisation:.3f}", f"{r.avg_latency_ms:.0f}", f"{r.restore_s:.1f}", f"{r.warmup_s:.1f}",
                  f"{r.measured_recovery_s:.1f}", "yes" if r.outputs_equal_reference else "NO") for r in report.intervals])
    for warning in report.warnings:
        print(f"warning: {warning}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from spark_jobs.profiling import ValidateConfig, validate_profiles

    config = _validated(ValidateConfig, **_run_values(args, "ftops-validate-"), **_plan_values(args),
                        profiles=args.profiles, max_recovery_s=args.max_recovery_s,
                        against_checkpoint=args.against_checkpoint)
    report = validate_profiles(config, Progress("profile validate"))
    if args.json:
        print_json(report)
        return 0
    print(f"recommended interval {report.validated_interval_ms:g} ms ({report.plan.case}, {report.plan.variant})")
    if report.variant_choice is not None:
        print(f"  variant: {report.variant_choice.reason}")
    print(f"  latency: predicted {report.predicted_latency_ms:.0f} ms, measured {report.measured_latency_ms:.0f} ms "
          f"(error {report.latency_error:.1%})")
    print(f"  recovery ({report.validated_case} case, as injected): {report.reason}")
    print_table(["variant", "predicted recovery s", "error"],
                [(name, f"{e.predicted_recovery_s:.1f}", f"{e.recovery_error:.1%}") for name, e in report.by_variant.items()])
    print(f"  conditions: {report.conditions.describe()}" + ("" if report.profile_conditions is None else
          f" (profile: {report.profile_conditions.describe()})"))
    print(f"  outputs {'equal' if report.outputs_equal_reference else 'DIFFER FROM'} the reference; {report.lineage.message}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from spark_jobs.profiling import BenchConfig, render_bench, run_bench

    if not args.out.parent.is_dir():
        raise InputError(f"--out: folder {str(args.out.parent)!r} does not exist")
    if not args.workload and not args.pipeline:
        args.workload = "topk"  # the benchmark's default pipeline
    values = _run_values(args, "ftops-bench-checkpoint-")
    values["params"] = args.param or list(DEFAULT_BENCH_PARAMS)
    config = _validated(BenchConfig, **values, **_plan_values(args), intervals_s=_intervals(args.intervals),
                        max_recovery_s=args.max_recovery_s, validations=args.validations)
    command = command_line(["bench", "checkpoint"])
    progress = Progress("bench checkpoint")
    result = run_bench(config, command, progress)
    (config.work_dir / "bench.json").write_text(result.model_dump_json(indent=2))
    report = render_bench(result, args.out)
    args.out.write_text(report)
    if args.json:
        print_json(result)
    else:
        print(report)
    progress.close(f"wrote {args.out} (whole result: {config.work_dir / 'bench.json'})")
    return 0
