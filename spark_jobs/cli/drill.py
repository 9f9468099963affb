"""``ftops drill run``, ``ftops drill job`` and ``ftops bench drills`` (registered through the ``ftops.commands`` entry
point ``drill = "spark_jobs.cli.drill"``); the logic lives in :mod:`spark_jobs.drills.local` (a private job drilled
by the drill engine), :mod:`spark_jobs.drills.job_drill` and :mod:`spark_jobs.drills.bench`; the Airflow operators
run the same engine's steps."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from ft_core.cli.db import add_db_dir_argument
from ft_core.cli.output import command_line, emit_report, format_table, print_json
from ft_core.cli.progress import Progress
from ft_core.errors import InputError
from ft_core.input.names import name_flag
from ft_core.input.quantities import (Positive, PositiveFraction, PositiveNodeCount, PositiveSeconds, PortBase, Seconds,
                                      Subnet, TaskBudget, comma_list, flag)
from spark_jobs.cli.drill_forecast_bench import register_bench as register_forecast_bench
from spark_jobs.cli.job_lease import add_lease_ttl_argument, command_holder
from spark_jobs.drills.ports import DEFAULT_PORT_BASE
from spark_jobs.pipeline.loading import add_pipeline_arguments, pipeline_ref


def register(sub, groups) -> None:
    drill = sub.add_parser("drill", help="chaos drills: kill a failure domain under a running job, measure tentative accuracy")
    dsub = drill.add_subparsers(dest="drill_command", required=True, parser_class=type(drill))
    run = dsub.add_parser("run", help="one complete drill of a pipeline on a private local cluster and history store, "
                          "by the same drill engine as `drill job`; prints the report and its verdict (exit 0 passed, 1 failed)")
    add_pipeline_arguments(run)
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--plan", type=Path, help="replication plan JSON (ftops plan replication --json)")
    source.add_argument("--budget", type=flag(TaskBudget), help="plan R replicas for the pipeline's topology instead")
    run.add_argument("--algorithm", choices=("exact", "structure-aware", "greedy"), default="structure-aware")
    _accuracy_options(run)
    run.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pipeline parameter (repeatable)")
    run.add_argument("--fail", type=name_flag("failure domain"), default="rack-a", metavar="DOMAIN", help="failure domain the primary runs in (default rack-a)")
    run.add_argument("--kill-driver", action="store_true", help="kill the primary driver too (restarted from its checkpoint)")
    run.add_argument("--fault", choices=("host-down", "partition"), default="host-down",
                     help="host-down: kill the domain's workers and executors (default); partition: cut the domain's "
                          "hosts off the network while they keep running (needs --network namespaces)")
    run.add_argument("--network", choices=("loopback", "namespaces"), default="loopback",
                     help="loopback (default): every daemon on 127.0.0.1; namespaces: each master and worker on a host "
                          "of its own (a Linux network namespace on a private bridge, 198.18.<subnet>.0/24; needs root)")
    run.add_argument("--subnet", type=flag(Subnet), help="with --network namespaces: use 198.18.<subnet>.0/24 "
                     "(default: the first free one)")
    run.add_argument("--new-capacity-after", type=flag(Seconds), default=30.0, metavar="S",
                     help="the failed domain given back after S seconds (default 30); S x --speedup event seconds must hold whole "
                          "windows of the pipeline, or the drill is refused before it starts")
    run.add_argument("--primary-workers", type=flag(PositiveNodeCount), default=2, help="one-core workers in the failure domain (default 2)")
    run.add_argument("--trigger-s", type=flag(PositiveSeconds), default=1.0, help="micro-batch and checkpoint interval (default 1)")
    run.add_argument("--speedup", type=flag(Positive), default=1.0, help="event seconds generated per wall second (default 1)")
    run.add_argument("--serve", action="store_true", help="also run the serving view over both sinks and report gaps and final content")
    _common(run)
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.set_defaults(func=_run)
    _add_job_drill(dsub)
    _add_partitions_bench(groups["bench"])
    register_forecast_bench(groups["bench"])

    bench = groups["bench"].add_parser("drills", help="drills over replication ratios: predicted OF vs measured accuracy (Fig. 12)")
    bench.add_argument("--workloads", default="topk,incidents,examples/sensor_alerts.py", help="pipelines to drill, "
                       "comma-separated (sample names, module:attribute references or .py files; default: both samples "
                       "and the example pipeline)")
    bench.add_argument("--ratios", type=comma_list(PositiveFraction, allow_empty=False), default="0.25,0.5,0.75,1.0",
                       help="replication ratios in (0, 1] (default 0.25,0.5,0.75,1.0)")
    bench.add_argument("--new-capacity-after", type=flag(Seconds), default=30.0, metavar="S")
    bench.add_argument("--kill-driver", action="store_true")
    bench.add_argument("--objective", choices=("output-fidelity", "accuracy"), default="output-fidelity",
                       help="what the plans maximise (default output-fidelity, the paper's; accuracy: the best "
                            "predicted accuracy among the planners' candidates)")
    bench.add_argument("--param", action="append", default=[], metavar="WORKLOAD:KEY=VALUE",
                       help="override a workload parameter of the benchmark (repeatable), e.g. topk:page_affinity=1")
    bench.add_argument("--out", type=Path, default=Path("docs/benchmarks/drills.md"))
    bench.add_argument("--append", action="store_true", help="append this run's section to --out instead of replacing it")
    _common(bench)
    bench.add_argument("--json", action="store_true", help='print {"out": PATH, "report": MARKDOWN} (this run\'s section)')
    bench.set_defaults(func=_bench)


def _accuracy_options(parser) -> None:
    """Issue 15's options of a drill: the objective of a plan made from --budget, the accuracy replay."""
    parser.add_argument("--objective", choices=("output-fidelity", "accuracy"), default="output-fidelity",
                        help="with --budget: maximise output fidelity (default, the paper's objective) or the predicted "
                             "tentative accuracy (candidate plans from the planners, each replayed)")
    parser.add_argument("--accuracy-sample-s", type=flag(PositiveSeconds), default=240.0, metavar="S",
                        help="event seconds of seeded input the accuracy replay reads (default 240)")
    parser.add_argument("--no-predict-accuracy", action="store_true",
                        help="skip the predicted accuracy (one local Spark application before the drill)")


def _common(parser) -> None:
    parser.add_argument("--work-dir", type=Path, help="an empty folder for input, outputs, checkpoints, logs (default: a new temp folder)")
    parser.add_argument("--port-base", type=flag(PortBase), default=DEFAULT_PORT_BASE,
                        help="ports: masters BASE+77/78, master UIs BASE+90/91, workers BASE+100.., drivers' UIs BASE+40/41 "
                             f"(default {DEFAULT_PORT_BASE}: clear of the local stack's 7077/7078 and 8080-8091)")
    parser.add_argument("--timeout-s", type=flag(PositiveSeconds), default=600.0, help="deadline of each wait (default 600)")




def _work_dir(args: argparse.Namespace, prefix: str) -> Path:
    """``--work-dir``, or a new (not yet created) folder in the temp dir: nothing is written before
    the input is validated."""
    return args.work_dir or Path(tempfile.gettempdir()) / f"{prefix}{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def _run(args: argparse.Namespace) -> int:
    from spark_jobs.drills.documents import DrillConfig
    from spark_jobs.drills.local import run_drill

    config = _validated(DrillConfig, pipeline=pipeline_ref(args), params=args.param, plan=args.plan, budget=args.budget,
                         algorithm=args.algorithm, fail_domain=args.fail, kill_driver=args.kill_driver, fault=args.fault,
                         network=args.network, subnet=args.subnet,
                         new_capacity_after_s=args.new_capacity_after, primary_workers=args.primary_workers,
                         trigger_s=args.trigger_s, speedup=args.speedup, port_base=args.port_base, timeout_s=args.timeout_s,
                         work_dir=_work_dir(args, "ftops-drill-"), serve=args.serve, objective=args.objective,
                         accuracy_sample_s=args.accuracy_sample_s, predict_accuracy=not args.no_predict_accuracy)
    report = run_drill(config, progress=Progress("drill"))
    if args.json:
        print_json(report)
    else:
        print(summary(report))
    return 0 if report.verdict == "passed" else 1


def summary(report) -> str:
    """A one-screen human summary of a drill report: its verdict first."""
    acc = "-" if report.tentative_accuracy is None else f"{report.tentative_accuracy:.3f}"
    est = report.predicted_accuracy_estimate
    first = "-" if report.time_to_first_tentative_s is None else f"{report.time_to_first_tentative_s:.1f} s"
    verdict = "PASSED" if report.verdict == "passed" else "FAILED: " + "; ".join(report.verdict_reasons)
    lines = [
        f"drill {report.workload}: {verdict}",
        f"  killed {', '.join(report.killed)} ({report.recovery})",
        f"  plan ({len(report.plan_tasks)} tasks): {' '.join(report.plan_tasks) or '(empty: no replica)'}",
        f"  predicted OF {report.predicted_output_fidelity:.3f} (IC {report.predicted_internal_completeness:.3f}), "
        f"predicted accuracy {est.spread() if est else '-'}",
        f"  measured tentative accuracy {acc} over {len(report.tentative_accuracy_per_window)} failure windows",
        f"  first tentative output {first} after the failure; primary caught up after {_seconds(report.time_to_caught_up_s)} "
        f"(capacity back after {_seconds(report.capacity_alive_s)}; forecast {_seconds(report.predicted_caught_up_s)})",
        f"  final output {'equals' if report.output_equals_reference else 'DIFFERS FROM'} the reference: "
        f"{report.windows_expected} windows, {report.lost_windows} lost, {report.duplicated_windows} duplicated",
        *[f"  warning: {w}" for w in report.design_warnings],
        f"  the drill engine's verdict: {report.experiment_verdict or '-'} (experiment report: {report.work_dir}/drills/"
        f"drill-{report.experiment_id}/experiment.json)",
        f"  work dir {report.work_dir}",
    ]
    if report.serve:
        rate = "-" if report.serve_windows_per_s is None else f"{report.serve_windows_per_s:.2f}"
        lines.insert(-1, f"  serving view: {rate} failure windows/s served (input closes {report.serve_expected_windows_per_s:.2f}/s), "
                         f"{report.serve_gap_windows} gaps, final view {'equals' if report.serve_equals_reference else 'DIFFERS FROM'} "
                         f"the reference")
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _bench(args: argparse.Namespace) -> int:
    from spark_jobs.drills.bench import BenchDrillsConfig, BenchResult, render, run_bench
    from spark_jobs.pipeline.loading import load_pipeline

    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    if not workloads:
        raise InputError(f"--workloads: expected a comma-separated list of pipelines, got {args.workloads!r}")
    for ref in workloads:
        load_pipeline(ref)  # an unknown pipeline is refused before anything starts
    ratios = args.ratios
    config = _validated(BenchDrillsConfig, workloads=workloads, params=_bench_params(args.param), ratios=ratios, new_capacity_after_s=args.new_capacity_after,
                               kill_driver=args.kill_driver, work_dir=_work_dir(args, "ftops-bench-drills-"),
                               port_base=args.port_base, timeout_s=args.timeout_s, objective=args.objective)
    progress = Progress("bench drills")
    rows = run_bench(config, progress)
    result = BenchResult(command=command_line(["bench", "drills"]), config=config, rows=rows)
    (config.work_dir / "reports.json").write_text(result.model_dump_json(indent=2))
    appending = args.append and args.out.exists()
    # an appended run's plot gets its own file: run 1 is the report's first table
    what = f"accuracy-run{args.out.read_text().count('## Additional run') + 2}" if appending else "accuracy"
    report = render(result, section=args.append, out=args.out, what=what)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if appending:
        args.out.write_text(args.out.read_text().rstrip("\n") + "\n\n" + report)
    else:
        args.out.write_text(report)
    if args.json:
        print_json({"out": str(args.out), "report": report})
    else:
        print(report)
    progress.close(f"wrote {args.out} (raw reports: {config.work_dir / 'reports.json'})")
    return 0


def _validated(model, **values):
    """Build a pydantic config; a bad value becomes an InputError naming the option."""
    from pydantic import ValidationError

    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]).replace("_", "-") if err["loc"] else "input"
        raise InputError(f"--{field}: {err['msg']}") from None


def _bench_params(items: list[str]) -> dict[str, list[str]]:
    """The benchmark's workload parameters: its defaults, then ``WORKLOAD:KEY=VALUE`` overrides."""
    from spark_jobs.drills.bench import DEFAULT_PARAMS

    params = {w: list(p) for w, p in DEFAULT_PARAMS.items()}
    for item in items:
        workload, sep, kv = item.partition(":")
        if not sep or workload not in params or "=" not in kv:
            raise InputError(f"--param: expected WORKLOAD:KEY=VALUE with WORKLOAD in {', '.join(params)}, got {item!r}")
        key = kv.partition("=")[0]
        params[workload] = [p for p in params[workload] if p.partition("=")[0] != key] + [kv]
    return params


def _add_job_drill(dsub) -> None:
    """``ftops drill job NAME``: the drill DAG's steps and guards on a registered, running job, from here
    (:mod:`spark_jobs.drills.job_drill`); exit 0 passed, 1 failed or aborted, 3 busy."""
    job = dsub.add_parser("job", help="drill a registered, running job (the drill DAG's steps and guards, from here)")
    job.add_argument("name", type=name_flag("job name"), help="a registered job")
    job.add_argument("--domain", type=name_flag("failure domain"), default="auto",
                     help="failure domain to fail (default auto: where the primary's executors run)")
    job.add_argument("--fault", choices=("host-down", "partition"), default="host-down",
                     help="host-down: the domain's workers and executors die (default); partition: its hosts are cut off "
                          "the network while they keep running (a cluster on namespace hosts)")
    job.add_argument("--kill-driver", action="store_true", help="kill the primary driver too (restarted from its checkpoint)")
    job.add_argument("--replacement-delay-s", type=flag(Seconds), default=30.0, help="seconds until replacement capacity (default 30)")
    job.add_argument("--timeout-s", type=flag(PositiveSeconds), default=600.0, help="deadline of each wait (default 600)")
    job.add_argument("--steady-lag-s", type=flag(PositiveSeconds), default=60.0, help="steady state: the primary at most this far "
                     "(event-time seconds) behind its input, before and after (default 60)")
    job.add_argument("--max-duration-s", type=flag(PositiveSeconds), default=1800.0, help="abort probe: the drill runs at most this long")
    job.add_argument("--max-lag-s", type=flag(PositiveSeconds), default=600.0, help="abort probe: once capacity is back, the primary at "
                     "most this far behind its input (default 600)")
    add_lease_ttl_argument(job)
    add_db_dir_argument(job)
    job.add_argument("--json", action="store_true", help="print the experiment report as JSON")
    job.set_defaults(func=_drill_job)


def _drill_job(args: argparse.Namespace) -> int:
    from ft_core.store.history import open_history_store
    from spark_jobs.drills.engine import DrillSettings
    from spark_jobs.drills.job_drill import run_job_drill
    from spark_jobs.drills.reconcile import driver_env

    settings = _validated(DrillSettings, job=args.name, domain=args.domain, fault=args.fault, kill_driver=args.kill_driver,
                          replacement_delay_s=args.replacement_delay_s, timeout_s=args.timeout_s,
                          steady_lag_s=args.steady_lag_s, max_duration_s=args.max_duration_s, max_lag_s=args.max_lag_s,
                          lease_ttl_s=args.lease_ttl_s)
    holder = command_holder(f"ftops drill job {args.name}")
    with Progress("drill job") as progress:
        report = run_job_drill(lambda: open_history_store(args.db_dir), settings, holder, progress=progress,
                               driver_env=driver_env(args.db_dir))
    if args.json:
        print_json(report.model_dump())
    else:
        print(job_report_text(report))
    return 0 if report.verdict == "passed" else 1


def job_report_text(report) -> str:
    """``drill job``'s text: the verdict and its reasons, the steady-state checks, then the measurements
    (predicted beside measured)."""

    parts = [report.title + ("" if not report.reasons else ": " + "; ".join(report.reasons)),
             format_table(["check", "expected", "observed", "held"],
                          [[c.name, c.expected, c.observed or "-", {True: "yes", False: "NO", None: "-"}[c.held]]
                           for c in [*report.hypothesis_before, *report.hypothesis_after]])]
    if report.measurements:
        parts += ["", format_table(["measurement", "predicted", "measured"], job_measurements(report.measurements))]
    return "\n".join(parts)


def job_measurements(m: dict) -> list[list[str]]:
    """``drill job``'s measurements as rows of (measurement, predicted, measured): what the experiment report's
    ``measurements`` hold, predicted beside measured.

        >>> job_measurements({"predicted_output_fidelity": 0.34, "predicted_accuracy": 0.21, "tentative_accuracy": 0.206,
        ...                   "time_to_first_tentative_s": 3.2, "predicted_caught_up_s": 80.1, "time_to_caught_up_s": 71.5,
        ...                   "caught_up_error": 0.12, "lost_windows": 0, "duplicated_windows": 0,
        ...                   "output_equals_reference": True})  # doctest: +NORMALIZE_WHITESPACE
        [['tentative accuracy', '0.210 (OF 0.340)', '0.206'],
         ['primary caught up', '80.1 s', '71.5 s after the failure (forecast 12% long)'],
         ['first tentative output', '-', '3.2 s after the failure'], ['windows lost', '-', '0'],
         ['windows duplicated', '-', '0'], ['output equals the reference', '-', 'yes']]
    """
    def num(key: str, fmt: str = "{:.3f}", none: str = "-") -> str:
        return none if m.get(key) is None else fmt.format(m[key])

    rows, shown = [], set()
    if {"predicted_output_fidelity", "predicted_accuracy", "tentative_accuracy"} & set(m):
        of = num("predicted_output_fidelity")
        predicted = num("predicted_accuracy", none="not estimated") + ("" if of == "-" else f" (OF {of})")
        rows.append(["tentative accuracy", predicted, num("tentative_accuracy", none="- (no failure window)")])
        shown |= {"predicted_output_fidelity", "predicted_accuracy", "tentative_accuracy"}
    if "predicted_caught_up_s" in m or "time_to_caught_up_s" in m:
        err = m.get("caught_up_error")  # (forecast - measured) / measured
        error = "" if err is None else f" (forecast {abs(err):.0%} {'long' if err > 0 else 'short'})"
        rows.append(["primary caught up", num("predicted_caught_up_s", "{:.1f} s", none="not forecast"),
                     num("time_to_caught_up_s", "{:.1f} s after the failure") + error])
        shown |= {"predicted_caught_up_s", "time_to_caught_up_s", "caught_up_error"}
    for key, label, fmt in (("time_to_first_tentative_s", "first tentative output", "{:.1f} s after the failure"),
                            ("peak_lag_s", "peak lag", "{:.1f} s"), ("throughput_dip", "throughput dip", "{:.0%}"),
                            ("records_reprocessed", "records reprocessed", "{}"), ("lost_windows", "windows lost", "{}"),
                            ("duplicated_windows", "windows duplicated", "{}")):
        if key in m:
            rows.append([label, "-", num(key, fmt)])
            shown.add(key)
    for key, label in (("output_equals_reference", "output equals the reference"), ("exactly_once_held", "exactly once")):
        if key in m:
            rows.append([label, "-", {True: "yes", False: "NO", None: "-"}.get(m[key], str(m[key]))])
            shown.add(key)
    rows += [[key.replace("_", " "), "-", str(value)] for key, value in m.items() if key not in shown]
    return rows


def _add_partitions_bench(bench_group) -> None:
    bench = bench_group.add_parser("partitions", help="drills across hosts (network namespaces, root): host down and "
                                   "network partition in turn, on either rack (issue 14)")
    add_pipeline_arguments(bench)
    bench.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="pipeline parameter (repeatable; default the benchmark's topk parameters)")
    bench.add_argument("--drills", type=flag(PositiveNodeCount), default=10, help="drills to run (default 10)")
    bench.add_argument("--ratio", type=flag(PositiveFraction), default=0.5, help="replicated share of the tasks (default 0.5)")
    bench.add_argument("--new-capacity-after", type=flag(Seconds), default=30.0, metavar="S")
    bench.add_argument("--out", type=Path, default=Path("docs/benchmarks/partitions.md"))
    _common(bench)
    bench.add_argument("--json", action="store_true", help='print {"out": PATH, "report": MARKDOWN}')
    bench.set_defaults(func=_bench_partitions)


def _bench_partitions(args: argparse.Namespace) -> int:
    from spark_jobs.cluster.netns import check_can_create
    from spark_jobs.drills.bench import DEFAULT_PARAMS
    from spark_jobs.drills.partitions_bench import PartitionsConfig, PartitionsResult, render, run_partitions
    from spark_jobs.pipeline.loading import load_workload

    check_can_create()
    ref = pipeline_ref(args) if (args.pipeline or args.workload) else "topk"
    params = args.param or DEFAULT_PARAMS.get(ref, [])
    load_workload(ref, params)  # an unknown pipeline or parameter is refused before anything starts
    config = _validated(PartitionsConfig, pipeline=ref, params=params, drills=args.drills, ratio=args.ratio,
                        new_capacity_after_s=args.new_capacity_after, work_dir=_work_dir(args, "ftops-bench-partitions-"),
                        port_base=args.port_base, timeout_s=args.timeout_s)
    progress = Progress("bench partitions")
    started, load = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]
    rows = run_partitions(config, progress)
    result = PartitionsResult(command=command_line(["bench", "partitions"]), config=config, rows=rows,
                              started=started, load_at_start=load)
    config.work_dir.mkdir(parents=True, exist_ok=True)
    (config.work_dir / "reports.json").write_text(result.model_dump_json(indent=2))
    emit_report(render(result, out=args.out), str(args.out), args.json)  # the plot goes beside the report
    progress.close(f"raw reports: {config.work_dir / 'reports.json'}")
    return 0
