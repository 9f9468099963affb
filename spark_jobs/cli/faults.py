"""``ftops faults inject``, ``ftops transparency serve`` and ``ftops bench redundancy``: issue 7's Spark side.

Registered through the ``ftops.commands`` entry point (``faults-spark = "spark_jobs.cli.faults"``);
``python -m spark_jobs.cli.faults ...`` is ``ftops ...``. ``inject`` joins the ``faults`` group that
:mod:`ft_core.cli.fault_tolerance` creates (``validate``, ``schedule``), ``serve`` the ``transparency`` group. The logic lives in :mod:`spark_jobs.fault_injection`,
:mod:`spark_jobs.serving_view` and :mod:`spark_jobs.redundancy.bench`, so Airflow can call it.

- ``faults inject PROFILE (--output DIR | --app-id ID) --duration S --seed N [--state-dir DIR] [--json]``:
  apply a fault profile to a running application (executor pauses, executor crashes, domain
  failures); exit 2 when the application has no executor on this host.
- ``faults domain-down --output DIR --domain D (--domains MAP | --hosts H,...)`` and ``faults domain-up
  --output DIR``: a failure domain lost on any cluster, injected by the job's own driver
  (:mod:`spark_jobs.runtime.executor_faults`).
- ``transparency serve --primary DIR [--replica DIR] --out DIR [--predicted-of X] [--once]``: the serving view
  (``ftops serve``, its old name, still works for one release).
- ``bench redundancy [...]``: the benchmark; writes ``docs/benchmarks/redundancy.md``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from ft_core.cli.output import command_line, emit_report, print_json, print_table
from ft_core.cli.progress import Progress
from ft_core.cli.registry import add_old_name, group_commands
from ft_core.errors import ExternalError, InputError
from ft_core.home import path_flag
from ft_core.input.names import name_flag
from ft_core.input.quantities import (PortBase, PositiveFraction, PositiveMilliseconds, PositiveNodeCount, PositiveSeconds,
                                      Seed, TaskBudget, TaskCount, comma_list, field_kind, flag)
from ft_core.redundancy.controller import ControllerParams
from spark_jobs.cli.job_lease import add_lease_arguments, held_lease


def register(sub, groups) -> None:
    faults = group_commands(sub, "faults")
    _register_inject(faults)
    _register_domain(faults)
    _register_serve(sub)
    if "bench" in groups:
        _register_bench(groups["bench"])


def _register_inject(fsub) -> None:
    inj = fsub.add_parser(
        "inject", help="apply a fault profile to a running Spark application (executor pauses, crashes, domain failures)",
        description="Apply the faults of a profile (ftops faults schedule) to a running application on this host: "
                    "slowdowns pause an executor's JVM (SIGSTOP/SIGCONT), crashes SIGKILL it, domain faults kill a "
                    "failure domain's workers. Targets NAME[i] hit the i-th executor.")
    inj.add_argument("profile", help="fault profile (.yaml, .json)")
    app = inj.add_mutually_exclusive_group(required=True)
    app.add_argument("--output", type=Path, help="a run's output folder (follows the run across resubmissions)")
    app.add_argument("--app-id", help="a Spark application id")
    inj.add_argument("--duration", type=flag(PositiveSeconds), required=True, help="seconds of faults from now")
    inj.add_argument("--seed", type=flag(Seed), required=True, help="random seed (same seed, same schedule)")
    inj.add_argument("--state-dir", type=path_flag, default="$FTOPS_HOME/spark",
                     help="the cluster's state folder, read by domain faults (default %(default)s, as `ftops cluster`)")
    add_lease_arguments(inj)
    inj.add_argument("--json", action="store_true", help="print the injection report as JSON")
    inj.set_defaults(func=_inject)


def _register_serve(sub) -> None:
    from spark_jobs import serving_view

    srv = group_commands(sub, "transparency").add_parser(
        "serve", help="the serving view: one table of a job's accurate and tentative outputs (paper 001)",
        description=serving_view.__doc__.split("\n\n")[1])
    serving_view.add_arguments(srv)
    srv.set_defaults(func=serving_view.run_from_args)
    add_old_name(sub, "serve", "transparency serve", serving_view.add_arguments, serving_view.run_from_args)


def _register_bench(bench) -> None:
    b = bench.add_parser("redundancy", help="speculative execution vs slowdowns on Spark: missed deadlines, p90/p99, CPU (thesis 002)")
    b.add_argument("--batches", type=flag(TaskCount), default=40, help="measured micro-batches per scenario (default 40)")
    b.add_argument("--warmup-batches", type=flag(TaskBudget), default=5)
    b.add_argument("--levels", type=comma_list(PositiveFraction, allow_empty=False), default="0.25,0.5,1", help="static redundancy levels (default 0.25,0.5,1)")
    b.add_argument("--executors", type=flag(PositiveNodeCount), default=3, help="one-core workers (default 3)")
    b.add_argument("--magnitude-ms", type=flag(PositiveMilliseconds), help="mean pause (default: the fault-free run's median batch; sd 1/4, "
                                                   "truncated to [1/2, 2]x)")
    b.add_argument("--mean-gap-s", type=flag(PositiveSeconds), help="mean time between pauses per executor (default: executors paused 13 %% "
                                                 "of the time, as in the thesis)")
    b.add_argument("--deadline-ms", type=flag(PositiveMilliseconds), help="per-batch deadline (default: mu + 2 sigma of the fault-free run)")
    b.add_argument("--period-batches", type=flag(TaskCount), default=8, help="controller period in batches (default 8)")
    b.add_argument("--step-pct", type=flag(field_kind(ControllerParams, "step_min_pct")), default=25.0, help="controller minimum step in points (default 25)")
    b.add_argument("--controller-modes", default="resubmit,live",
                   help="how the controller applies a level change, one scenario each: resubmit (restart from the "
                        "checkpoint), live (the running job; spark_jobs.redundancy.live). Default both")
    b.add_argument("--no-controller", action="store_true")
    b.add_argument("--no-drill", action="store_true", help="skip the serving-view drill")
    b.add_argument("--seed", type=flag(Seed), default=1)
    b.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="override a topk parameter")
    b.add_argument("--conf", action="append", metavar="KEY=VALUE",
                   help="Spark conf for every scenario (default: spark.sql.files.openCostInBytes=0 spark.locality.wait=0s)")
    b.add_argument("--shuffle-service", action="store_true",
                   help="shuffle files served by Spark's external shuffle service (run by the first worker; on one "
                        "machine it serves every worker's executors), so a paused executor does not hold up the "
                        "reads of what it wrote")
    b.add_argument("--work-dir", type=Path, help="an empty folder (default: a new temp folder)")
    b.add_argument("--port-base", type=flag(PortBase), default=7600, help="ports: masters and UIs above BASE, workers "
                   "BASE+100.., their UIs BASE+200.., the shuffle service BASE+37 (default 7600)")
    b.add_argument("--out", type=Path, default=Path("docs/benchmarks/redundancy.md"))
    b.add_argument("--json", action="store_true", help='print {"out": PATH, "report": MARKDOWN}')
    b.set_defaults(func=_bench)


def _register_domain(fsub) -> None:
    down = fsub.add_parser(
        "domain-down", help="a failure domain lost, as a running job sees it, on any cluster: the job kills its own "
                            "executors on the domain's hosts and keeps them off until `domain-up`",
        description="Engine-native domain fault (no local pids, any cluster manager): the driver of the run writing "
                    "to --output kills its executors on the domain's hosts (SparkContext.killExecutors) and keeps "
                    "them off those hosts. The hosts come from --domains (the failure-domain map of `ftops job register "
                    '--domains`: {"10.0.0.5": "rack-a", ...}, host -> domain) or --hosts.')
    down.add_argument("--output", type=Path, required=True, help="the run's output folder (a stream ftops started)")
    down.add_argument("--domain", required=True, type=name_flag("failure domain"), help="the failure domain to lose")
    hosts = down.add_mutually_exclusive_group(required=True)
    hosts.add_argument("--domains", type=Path, help="failure-domain map (.json, .yaml): worker host -> domain")
    hosts.add_argument("--hosts", type=comma_list(str, allow_empty=False), help="the domain's hosts, comma-separated "
                       "(as the executors report them)")
    up = fsub.add_parser("domain-up", help="end `domain-down`: the job asks for the executors it killed back",
                         description="End the run's domain fault: its driver requests as many executors as it "
                                     "killed back (SparkContext.requestTotalExecutors); the cluster manager places them.")
    up.add_argument("--output", type=Path, required=True, help="the run's output folder")
    for p in (down, up):
        p.add_argument("--timeout-s", type=flag(PositiveSeconds), default=60.0,
                       help="seconds to wait for the driver to apply it (default 60)")
        p.add_argument("--json", action="store_true", help="print what the driver did as JSON")
    down.set_defaults(func=_domain_down)
    up.set_defaults(func=_domain_up)


def _domain_down(args: argparse.Namespace) -> int:
    from spark_jobs.runtime.executor_faults import hosts_of, load_domain_map, request_domain_down

    if args.domains is not None:
        hosts = hosts_of(load_domain_map(args.domains), args.domain)
    else:
        hosts = args.hosts
    _require_run(args.output)
    return _applied(args, request_domain_down(args.output, args.domain, hosts))


def _domain_up(args: argparse.Namespace) -> int:
    from spark_jobs.runtime.executor_faults import request_domain_up

    _require_run(args.output)
    return _applied(args, request_domain_up(args.output))


def _require_run(output: Path) -> str:
    """The application id the run writing to ``output`` recorded; InputError when it is no such run."""
    from spark_jobs.fault_injection import app_of_run

    app = app_of_run(output)
    if app is None:
        raise InputError(f"--output: {str(output)!r} has no _run.json with an application id (a running `ftops workload run`)")
    return app


def _applied(args: argparse.Namespace, request_id: str) -> int:
    from spark_jobs.runtime.executor_faults import wait_applied

    record = wait_applied(args.output, request_id, args.timeout_s)
    if args.json:
        print_json(record)
    else:
        what = "killed" if record["action"] == "down" else "asked back for"
        print(f"{record['domain']}: the driver {what} {len(record['executors'])} executor(s) "
              f"{', '.join(record['executors']) or '-'}")
    return 0


def _inject(args: argparse.Namespace) -> int:
    from ft_core.redundancy.fault_profile import fault_schedule, load_fault_profile
    from spark_jobs.fault_injection import find_executors, inject

    profile = load_fault_profile(args.profile)
    fault_schedule(profile, args.duration, args.seed, field="--duration")  # too many faults: refused before any
    app = args.app_id or _require_run(args.output)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())  # every paused executor is resumed before exiting
    log = (lambda m: print(f"[inject {time.strftime('%H:%M:%S')}] {m}", file=sys.stderr, flush=True))
    with held_lease(args, "drill") as lease:
        if not find_executors(app):
            raise ExternalError(f"application {app} has no executor on this host (is it running, and not in local mode?)")
        if lease is None:  # no job named: nothing to journal it under (and no lease guards it)
            report = inject(profile, duration_s=args.duration, seed=args.seed, app_id=args.app_id, output=args.output,
                            state_dir=args.state_dir, stop=stop, log=log)
        else:
            report = _journaled(args, lease, profile, stop, log)
    if args.json:
        print_json(report)
        return 0
    print(f"{report.profile}: {sum(report.applied.values())} faults applied, {report.skipped} skipped in "
          f"{report.elapsed_s:.1f} s (seed {report.seed})")
    print_table(["executor", "paused s"], sorted(report.paused_s.items()))
    return 0


def _journaled(args: argparse.Namespace, lease, profile, stop, log):
    """The injection written to the fault journal under the job's lease (spark_jobs.drills.fault_profile_step)."""
    from ft_core.store.history import open_history_store
    from spark_jobs.drills.fault_profile_step import journaled_injection

    store = open_history_store(args.db_dir)
    try:
        return journaled_injection(store, args.job, lease.holder, None, profile, args.duration, args.seed,
                                   output=args.output, app_id=args.app_id, state_dir=args.state_dir, stop=stop,
                                   store_factory=lambda: open_history_store(args.db_dir), log=log)
    finally:
        store.conn.close()


def _bench(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from spark_jobs.redundancy import bench as rb
    from spark_jobs.redundancy.report import render

    levels = args.levels
    work = args.work_dir or Path(tempfile.gettempdir()) / f"ftops-bench-redundancy-{time.strftime('%Y%m%d-%H%M%S')}"
    if work.exists() and any(work.iterdir()):
        raise InputError(f"--work-dir: {work} is not empty")
    try:
        config = rb.BenchRedundancyConfig(
            work_dir=work, params=[*rb.DEFAULT_PARAMS, *args.param], executors=args.executors, batches=args.batches,
            warmup_batches=args.warmup_batches, levels=levels, deadline_ms=args.deadline_ms, seed=args.seed,
            faults=_faults(args),
            controller=None if args.no_controller else rb.ControllerSetup(
                period_batches=args.period_batches, step_pct=args.step_pct,
                modes=_controller_modes(args.controller_modes)),
            extra_conf=args.conf if args.conf is not None else list(rb.EXTRA_CONF),
            shuffle_service=args.shuffle_service, port_base=args.port_base, drill=not args.no_drill)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"--{'-'.join(str(p) for p in err['loc']).replace('_', '-')}: {err['msg']}") from None
    from spark_jobs.pipeline.loading import load_workload

    load_workload(config.pipeline, config.params)  # a bad --param is refused before anything starts
    work.mkdir(parents=True, exist_ok=True)
    progress = Progress("bench redundancy")
    result = rb.run_bench(config, progress, command_line(["bench", "redundancy"]))
    rb.save(result, work / "result.json")
    emit_report(render(result, args.out), str(args.out), args.json)  # the plots go beside the report
    progress.close(f"raw result: {work / 'result.json'}")
    return 0


def _faults(args: argparse.Namespace):
    """The fault model from --magnitude-ms / --mean-gap-s (None: scaled after the fault-free run)."""
    from spark_jobs.redundancy.bench import FaultModel

    if args.magnitude_ms is None:
        if args.mean_gap_s is not None:
            raise InputError("--mean-gap-s: give --magnitude-ms too (without it both are scaled to the machine)")
        return None
    model = FaultModel.scaled(args.magnitude_ms)
    return model if args.mean_gap_s is None else model.model_copy(update={"mean_gap_s": args.mean_gap_s})


def _controller_modes(text: str) -> list[str]:
    from typing import get_args

    from spark_jobs.redundancy.bench import ControllerMode

    known = get_args(ControllerMode)
    modes = [m.strip() for m in text.split(",") if m.strip()]
    if not modes or any(m not in known for m in modes):
        raise InputError(f"--controller-modes: expected a comma-separated list of {', '.join(known)}; got {text!r}")
    return modes




def main(argv: list[str] | None = None) -> int:
    """``python -m spark_jobs.cli.faults ...`` is ``ftops ...`` (this module is registered as an entry point)."""
    from ft_core.cli.main import main as ftops_main

    return ftops_main(argv)


if __name__ == "__main__":
    sys.exit(main())
