"""``ftops workload topology|generate|run|stop``: the streaming workloads from the command line.

Registered through the ``ftops.commands`` entry point (``workload = "spark_jobs.workload_cli"``);
``python -m spark_jobs.workload_cli ...`` runs the same commands without it.

- ``topology WORKLOAD [--param k=v ...] [--rates-from METRICS.jsonl] [--json]``: the workload's
  topology document, built from the same spec as its Spark plan (expected rates by default, or
  rates measured from a run's metrics file).
- ``generate WORKLOAD --input DIR (--seconds N | --realtime [--duration-s S])``: the seeded input.
- ``run WORKLOAD --role primary|replica|reference --input DIR --output DIR ...``: spark-submit of
  ``spark_jobs.run_workload`` against ``--master`` (default ``local[2]``), in its own session (process
  group), so that the whole tree (JVM and Python driver) can be stopped; ``--detach`` returns at once.
- ``stop --output DIR``: SIGTERM to a detached run's Python driver (a graceful stop between
  micro-batches), then to its process group.
- ``run ... --redundancy-level L``: computation redundancy against slowdowns as Spark speculative
  execution, the ``spark.speculation*`` settings of :func:`ft_core.redundancy.speculation_settings`.
- ``retune --state FILE [--bound-ms B ... -- RUN ARGS]``: one period of the redundancy controller
  (:mod:`spark_jobs.redundancy_runtime`); the first call (no state yet) submits ``RUN ARGS`` under
  the controller, later calls step it and resubmit the run from its checkpoint when the level changes,
  or, with ``--live`` on the first call, change the running job's level (:mod:`spark_jobs.live_redundancy`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ft_core.cli.output import print_json, print_table
from ft_core.errors import InputError

WORKLOADS = ("topk", "incidents")


def register(sub, groups) -> None:
    wl = sub.add_parser("workload", help="the streaming workloads: topology documents, input, Spark runs")
    wsub = wl.add_subparsers(dest="workload_command", required=True, parser_class=type(wl))

    topo = wsub.add_parser("topology", help="print the workload's topology document")
    topo.add_argument("workload", choices=WORKLOADS)
    _params(topo)
    topo.add_argument("--rates-from", type=Path, help="a run's metrics.jsonl: measured task rates instead of expected ones")
    topo.add_argument("--name", help="document name (default <workload>-p<p1>)")
    topo.add_argument("--json", action="store_true")
    topo.set_defaults(func=_topology)

    gen = wsub.add_parser("generate", help="write the seeded input: N seconds at once, or appended in real time")
    gen.add_argument("workload", choices=WORKLOADS)
    gen.add_argument("--input", type=Path, required=True)
    _params(gen)
    mode = gen.add_mutually_exclusive_group(required=True)
    mode.add_argument("--seconds", type=float, help="event-time seconds to write at once")
    mode.add_argument("--realtime", action="store_true", help="append one file per source every file_s seconds")
    gen.add_argument("--duration-s", type=float, help="realtime: stop after this many seconds")
    gen.add_argument("--speedup", type=float, default=1.0, help="realtime: event seconds per wall second")
    gen.set_defaults(func=_generate)

    run = wsub.add_parser("run", help="spark-submit a primary, replica or reference job")
    run.add_argument("workload", choices=WORKLOADS)
    run.add_argument("--role", required=True, choices=("primary", "replica", "reference"))
    run.add_argument("--input", type=Path, required=True)
    run.add_argument("--output", type=Path, required=True)
    run.add_argument("--checkpoint", type=Path)
    run.add_argument("--plan", type=Path)
    _params(run)
    run.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    run.add_argument("--trigger-s", type=float, default=2.0)
    run.add_argument("--available-now", action="store_true")
    run.add_argument("--duration-s", type=float)
    run.add_argument("--shuffle-partitions", type=int, default=2)
    run.add_argument("--min-deltas-for-snapshot", type=int)
    run.add_argument("--max-files-per-trigger", type=int)
    run.add_argument("--metrics", type=Path)
    run.add_argument("--query-name")
    run.add_argument("--driver-memory", default="512m")
    run.add_argument("--executor-memory", default="512m")
    run.add_argument("--executor-cores", type=int, default=1)
    run.add_argument("--total-executor-cores", type=int, help="standalone: cap on the application's cores")
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark conf (repeatable)")
    run.add_argument("--detach", action="store_true", help="start in the background, print pid and log, return")
    run.add_argument("--state-dir", type=Path, help="record the driver in this cluster state (ftops cluster down stops it)")
    run.add_argument("--pool", choices=("primary", "standby"), default="primary")
    run.add_argument("--redundancy-level", type=float, metavar="L",
                     help="speculative execution for a redundancy level in [0, 1] (thesis 002; ftops plan redundancy)")
    run.add_argument("--live-redundancy", action="store_true",
                     help="with --redundancy-level: the level can change while the run runs, without a restart "
                          "(ftops workload retune --live)")
    run.set_defaults(func=_run)

    retune = wsub.add_parser("retune", help="one period of the redundancy controller: resubmit the run when the level changes")
    retune.add_argument("--state", type=Path, required=True, help="the controller's state file (created by the first call)")
    retune.add_argument("--bound-ms", type=float, help="first call: the per-batch latency bound (p90 of a period's batches)")
    retune.add_argument("--step-pct", type=float, default=25.0, help="first call: minimum step in percentage points (default 25)")
    retune.add_argument("--perf-margin", type=float, default=0.1, help="first call: safety band as a fraction of the bound")
    retune.add_argument("--min-batches", type=int, default=5, help="batches a period needs (default 5)")
    retune.add_argument("--warmup-batches", type=int, default=2, help="first batches of each (re)submission left out (default 2)")
    retune.add_argument("--live", action="store_true",
                        help="first call: apply level changes to the running job, without resubmitting it")
    retune.add_argument("run_argv", nargs=argparse.REMAINDER, help="first call: -- then the `workload run` arguments")
    retune.set_defaults(func=_retune)

    stop = wsub.add_parser("stop", help="stop a detached run gracefully (by its output folder)")
    stop.add_argument("--output", type=Path, required=True)
    stop.add_argument("--timeout-s", type=float, default=30.0)
    stop.set_defaults(func=_stop)


def _params(parser) -> None:
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="workload parameter (repeatable)")


def _topology(args: argparse.Namespace) -> int:
    from spark_jobs.workloads.spec import make_spec

    spec = make_spec(args.workload, args.param)
    rates = None
    if args.rates_from is not None:
        from spark_jobs.workloads.metrics import measured_rates, read_metrics

        if not args.rates_from.exists():
            raise InputError(f"--rates-from: file {str(args.rates_from)!r} does not exist")
        rates = measured_rates(read_metrics(args.rates_from), spec)
    topo = spec.topology(rates, name=args.name)
    if args.json:
        print_json(topo.to_document())
        return 0
    print(f"{topo.name}: " + ", ".join(f"{op.name}x{op.parallelism}" for op in topo.operators) + "; streams "
          + ", ".join(f"{s.source}->{s.target} {s.partitioning}" for s in topo.streams))
    print_table(["task", "operator role", "rate"],
                [[t, spec.operator(t.split("[")[0]).role, topo.task_rate(t)] for t in topo.task_ids()])
    return 0


def _generate(args: argparse.Namespace) -> int:
    from spark_jobs.workloads import generator
    from spark_jobs.workloads.spec import make_spec

    spec = make_spec(args.workload, args.param)
    if args.seconds is not None:
        if args.seconds <= 0:
            raise InputError("--seconds: must be positive")
        n = generator.write_seconds(spec, args.input, args.seconds)
        print(f"wrote {n} files per source ({', '.join(generator.source_names(spec))}) to {args.input}")
        return 0
    try:
        end = generator.run_generator(spec, args.input, args.duration_s, args.speedup)
    except KeyboardInterrupt:
        end = generator.existing_files(spec, args.input)
    print(f"{end} files per source in {args.input}")
    return 0


def submit_command(args: argparse.Namespace) -> list[str]:
    """The spark-submit command line of a run (the entry point is run_workload.py's file path)."""
    from spark_jobs import run_workload
    from spark_jobs.cluster import spark_home

    cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", args.master, "--name", args.query_name or
           f"ftops-{args.workload}-{args.role}", "--driver-memory", args.driver_memory,
           "--conf", f"spark.sql.shuffle.partitions={args.shuffle_partitions}"]
    if not args.master.startswith("local"):
        cmd += ["--executor-memory", args.executor_memory, "--executor-cores", str(args.executor_cores)]
        if args.total_executor_cores:
            cmd += ["--total-executor-cores", str(args.total_executor_cores)]
    for item in [*redundancy_confs(args), *args.conf]:
        cmd += ["--conf", item]
    cmd.append(run_workload.__file__)
    job = ["--workload", args.workload, "--role", args.role, "--input", args.input.resolve(),
           "--output", args.output.resolve(), "--trigger-s", args.trigger_s,
           "--shuffle-partitions", args.shuffle_partitions]
    for flag, value in (("--checkpoint", args.checkpoint), ("--plan", args.plan), ("--metrics", args.metrics)):
        if value is not None:
            job += [flag, Path(value).resolve()]
    for flag, value in (("--duration-s", args.duration_s), ("--min-deltas-for-snapshot", args.min_deltas_for_snapshot),
                        ("--max-files-per-trigger", args.max_files_per_trigger), ("--query-name", args.query_name)):
        if value is not None:
            job += [flag, value]
    if args.available_now:
        job.append("--available-now")
    if args.live_redundancy:
        job.append("--live-redundancy")
    for item in args.param:
        job += ["--param", item]
    return cmd + [str(x) for x in job]


def redundancy_confs(args: argparse.Namespace) -> list[str]:
    """``key=value`` Spark confs of the run's redundancy level (none without a level); a level next
    to an explicit ``--conf spark.speculation...`` would be ambiguous: InputError."""
    level, live = args.redundancy_level, args.live_redundancy
    if level is None:
        if live:
            raise InputError("--live-redundancy: give the starting level with --redundancy-level")
        return []
    if not 0 <= level <= 1:
        raise InputError(f"--redundancy-level: must be a replication fraction in [0, 1], got {level:g}")
    from ft_core.redundancy import speculation_settings

    settings = speculation_settings(level, live=live)
    clash = [item for item in args.conf if item.partition("=")[0].strip() in settings]
    if clash:
        raise InputError(f"--conf {clash[0]}: --redundancy-level sets the speculation settings; give one or the other")
    return [f"{key}={value}" for key, value in settings.items()]


def run_args(argv: list[str]) -> argparse.Namespace:
    """Parse ``ftops workload run ...`` arguments (without the leading ``run``) into the namespace
    :func:`launch_run` takes, so that Python callers (drills, operators) submit runs exactly as
    the CLI does."""
    from ft_core.cli.main import _Parser

    parser = _Parser(prog="ftops workload")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    register(sub, {})
    return parser.parse_args(["workload", "run", *map(str, argv)])


def launch_run(args: argparse.Namespace) -> tuple[subprocess.Popen, Path]:
    """Validate (bad parameters and plans raise InputError before a JVM starts), then spark-submit
    the run in its own session; returns the process (leader of its process group) and its log."""
    from spark_jobs.cluster import spark_env
    from spark_jobs.run_workload import config_from_args, prepare

    job_args = argparse.Namespace(**{**vars(args), "param": args.param})
    prepare(config_from_args(job_args))
    redundancy_confs(args)  # a bad level is refused before anything is written
    args.output.mkdir(parents=True, exist_ok=True)
    if args.live_redundancy:
        from spark_jobs.live_redundancy import write_level

        write_level(args.output, args.redundancy_level)  # the driver applies it at start, then follows the file
    log_dir = args.output / "_logs"
    log_dir.mkdir(exist_ok=True)
    log = log_dir / f"driver-{time.time():.3f}.log"
    env = spark_env({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
    env.pop("SPARK_NO_DAEMONIZE", None)
    cmd = submit_command(args)
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    (args.output / "_submit.json").write_text(json.dumps({"pgid": proc.pid, "log": str(log), "command": cmd}, indent=2))
    if args.state_dir is not None:
        from spark_jobs.cluster import register_driver

        register_driver(args.state_dir, f"driver-{args.workload}-{args.role}", proc.pid, args.pool, str(log))
    return proc, log


def _run(args: argparse.Namespace) -> int:
    proc, log = launch_run(args)
    if args.detach:
        print_json({"pgid": proc.pid, "log": str(log), "output": str(args.output)})
        return 0
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        stop_run(args.output)
        code = 130
    if code != 0:
        tail = log.read_text().strip().splitlines()[-5:]
        print("\n".join(tail), file=sys.stderr)
    return code


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a launched run's process group (spark-submit leads it: JVM and Python driver) and reap it."""
    with contextlib.suppress(ProcessLookupError):  # the whole group already exited: only the reaping is left
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def stop_run(output: Path, timeout_s: float = 30.0) -> bool:
    """Stop a run started by ``workload run``: SIGTERM to its Python driver (it stops the query
    between micro-batches and exits), then SIGTERM and finally SIGKILL to the process group.
    Returns whether anything was running."""
    submit = Path(output) / "_submit.json"
    if not submit.exists():
        raise InputError(f"--output: {str(output)!r} has no _submit.json (not started by `ftops workload run`)")
    pgid = json.loads(submit.read_text())["pgid"]
    if not _group_alive(pgid):
        return False
    run_doc = Path(output) / "_run.json"
    if run_doc.exists():
        driver = json.loads(run_doc.read_text()).get("pid")
        if driver:
            try:
                os.kill(driver, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for sig, wait in ((None, timeout_s), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        if sig is not None:
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                return True
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _group_alive(pgid):
            time.sleep(0.2)
        if not _group_alive(pgid):
            return True
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.waitpid(pgid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # Only zombies left?
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _retune(args: argparse.Namespace) -> int:
    from spark_jobs import redundancy_runtime

    run_argv = args.run_argv[1:] if args.run_argv[:1] == ["--"] else args.run_argv
    if args.state.exists():
        if run_argv or args.bound_ms is not None or args.live:
            raise InputError("--state: the run is already under the controller; give only --state (and period options)")
        if args.min_batches < 1 or args.warmup_batches < 0:
            raise InputError("--min-batches must be >= 1 and --warmup-batches >= 0")
        record, _proc = redundancy_runtime.step(args.state, min_batches=args.min_batches, warmup_batches=args.warmup_batches)
        print_json(record)
        return 0
    if not run_argv or args.bound_ms is None:
        raise InputError(f"--state: {str(args.state)!r} does not exist; the first call needs --bound-ms and -- RUN ARGS")
    params = _controller_params(args)
    _proc, state = redundancy_runtime.start(run_argv, params, args.state, live=args.live)
    print_json(state.history[-1])
    return 0


def _controller_params(args: argparse.Namespace):
    from pydantic import ValidationError

    from ft_core.redundancy_controller import ControllerParams

    try:
        return ControllerParams(latency_bound_ms=args.bound_ms, step_min_pct=args.step_pct, perf_margin=args.perf_margin)
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = {"latency_bound_ms": "--bound-ms", "step_min_pct": "--step-pct"}.get(str(err["loc"][0]), "--perf-margin")
        raise InputError(f"{flag}: {err['msg']}") from None


def _stop(args: argparse.Namespace) -> int:
    was = stop_run(args.output, args.timeout_s)
    print("stopped" if was else "not running")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m spark_jobs.workload_cli ...``: the ``ftops workload`` commands alone."""
    from ft_core.cli.main import _Parser
    from ft_core.errors import FtopsError

    parser = _Parser(prog="ftops")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    register(sub, {})
    args = parser.parse_args(["workload", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except FtopsError as exc:
        print(f"ftops: {exc.label}: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
