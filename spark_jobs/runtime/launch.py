"""Launching a workload run as its own process group, and stopping it: what ``ftops workload run``
does, for every Python caller (drills, profiling, the redundancy controller, Airflow operators).

A run is ``spark-submit`` of :mod:`spark_jobs.runtime.run_pipeline` in a session of its own, so the
whole tree (the JVM and the Python driver) can be signalled at once; ``<output>/_submit.json``
records its process group, and :func:`stop_run` stops it gracefully between micro-batches.
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

from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.quantities import (EpochMs, Fraction, MemorySize, PositiveNodeCount, PositiveSeconds, RestartCount,
                                      TaskCount, flag)
from spark_jobs.pipeline.loading import add_pipeline_arguments, pipeline_file, pipeline_label, pipeline_ref
from spark_jobs.runtime.processes import group_alive, own_group_alive, same_process, signal_group, start_time
from spark_jobs.runtime.waiting import wait_while


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """The options of ``ftops workload run`` (and of every Python caller that submits a run as the CLI does)."""
    add_pipeline_arguments(run, positional=True)
    run.add_argument("--role", required=True, choices=("primary", "replica", "reference"))
    run.add_argument("--input", type=Path, required=True)
    run.add_argument("--output", type=Path, required=True)
    run.add_argument("--checkpoint", type=Path)
    run.add_argument("--plan", type=Path)
    run.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pipeline parameter (repeatable)")
    run.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    run.add_argument("--trigger-s", type=flag(PositiveSeconds), default=2.0)
    run.add_argument("--available-now", action="store_true")
    run.add_argument("--duration-s", type=flag(PositiveSeconds))
    run.add_argument("--shuffle-partitions", type=flag(TaskCount), default=2)
    run.add_argument("--min-deltas-for-snapshot", type=flag(TaskCount))
    run.add_argument("--max-files-per-trigger", type=flag(TaskCount))
    run.add_argument("--metrics", type=Path)
    run.add_argument("--query-name")
    run.add_argument("--driver-memory", type=flag(MemorySize), default="512m")
    run.add_argument("--executor-memory", type=flag(MemorySize), default="512m")
    run.add_argument("--executor-cores", type=flag(PositiveNodeCount), default=1)
    run.add_argument("--total-executor-cores", type=flag(PositiveNodeCount), help="standalone: cap on the application's cores")
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark conf (repeatable)")
    run.add_argument("--detach", action="store_true", help="start in the background, print pid and log, return")
    run.add_argument("--state-dir", type=Path, help="record the driver in this cluster state (ftops cluster down stops it)")
    run.add_argument("--pool", choices=("primary", "standby"), default="primary")
    run.add_argument("--redundancy-level", type=flag(Fraction), metavar="L",
                     help="speculative execution for a redundancy level in [0, 1] (thesis 002; ftops plan redundancy)")
    run.add_argument("--live-redundancy", action="store_true",
                     help="with --redundancy-level: the level can change while the run runs, without a restart "
                          "(ftops workload retune --live)")
    run.add_argument("--max-restarts", type=flag(RestartCount), default=3,
                     help="a failed query starts again from its checkpoint at most this often per window "
                          "(default 3; 0: a failure ends the run)")
    run.add_argument("--restart-window-s", type=flag(PositiveSeconds), default=600.0,
                     help="the window of --max-restarts (default 600)")
    run.add_argument("--since-ms", type=flag(EpochMs), metavar="EPOCH_MS",
                     help="reference role: only the windows starting at or after this event time, read from the files "
                          "--event-index says hold them (a window-local pipeline)")
    run.add_argument("--event-index", type=Path, help="reference role: the per-file event-time index (read and updated)")


def submit_command(args: argparse.Namespace) -> list[str]:
    """The spark-submit command line of a run (the entry point is run_pipeline.py's file path; a pipeline
    given as a file is shipped to the executors with ``--py-files``, for its Python UDFs)."""
    from spark_jobs.cluster.standalone import spark_home
    from spark_jobs.runtime import run_pipeline

    ref = pipeline_ref(args)
    cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", args.master, "--name", args.query_name or
           f"ftops-{pipeline_label(ref)}-{args.role}", "--driver-memory", args.driver_memory,
           "--conf", f"spark.sql.shuffle.partitions={args.shuffle_partitions}"]
    if pipeline_file(ref) is not None:
        cmd += ["--py-files", str(pipeline_file(ref))]
    if not args.master.startswith("local"):
        cmd += ["--executor-memory", args.executor_memory, "--executor-cores", str(args.executor_cores)]
        if args.total_executor_cores:
            cmd += ["--total-executor-cores", str(args.total_executor_cores)]
    for item in [*redundancy_confs(args), *args.conf]:
        cmd += ["--conf", item]
    cmd.append(run_pipeline.__file__)
    job = ["--pipeline", str(pipeline_file(ref) or ref), "--role", args.role, "--input", args.input.resolve(),
           "--output", args.output.resolve(), "--trigger-s", args.trigger_s,
           "--shuffle-partitions", args.shuffle_partitions, "--max-restarts", args.max_restarts,
           "--restart-window-s", args.restart_window_s]
    for flag, value in (("--checkpoint", args.checkpoint), ("--plan", args.plan), ("--metrics", args.metrics),
                        ("--event-index", args.event_index)):
        if value is not None:
            job += [flag, Path(value).resolve()]
    for flag, value in (("--duration-s", args.duration_s), ("--min-deltas-for-snapshot", args.min_deltas_for_snapshot),
                        ("--max-files-per-trigger", args.max_files_per_trigger), ("--query-name", args.query_name),
                        ("--since-ms", args.since_ms)):
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
    from ft_core.redundancy.allocation import speculation_settings

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

    parser = _Parser(prog="ftops workload run")
    add_run_arguments(parser)
    return parser.parse_args([str(a) for a in argv])


def launch_run(args: argparse.Namespace, extra_env: dict[str, str] | None = None) -> tuple[subprocess.Popen, Path]:
    """Validate (bad parameters and plans raise InputError before a JVM starts), then spark-submit
    the run in its own session, with ``extra_env`` added to its environment (e.g. the history store's
    ``FTOPS_DATABASE_URL``: never on the command line); returns the process (leader of its process group) and its log."""
    from spark_jobs.cluster.standalone import spark_env
    from spark_jobs.runtime.driver_address import driver_env
    from spark_jobs.runtime.run_pipeline import config_from_args, prepare

    job_args = argparse.Namespace(**{**vars(args), "param": args.param, "pipeline": pipeline_ref(args)})
    prepare(config_from_args(job_args))
    redundancy_confs(args)  # a bad level is refused before anything is written
    args.output.mkdir(parents=True, exist_ok=True)
    if args.live_redundancy:
        from spark_jobs.redundancy.live import write_level

        write_level(args.output, args.redundancy_level)  # the driver applies it at start, then follows the file
    log_dir = args.output / "_logs"
    log_dir.mkdir(exist_ok=True)
    log = log_dir / f"driver-{time.time():.3f}.log"
    env = driver_env(spark_env({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, **(extra_env or {})}))
    env.pop("SPARK_NO_DAEMONIZE", None)
    cmd = submit_command(args)
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    (args.output / "_submit.json").write_text(json.dumps({"pgid": proc.pid, "started": start_time(proc.pid), "log": str(log),
                                                          "command": cmd}, indent=2))
    if args.state_dir is not None:
        from spark_jobs.cluster.standalone import register_driver

        register_driver(args.state_dir, f"driver-{pipeline_label(pipeline_ref(args))}-{args.role}", proc.pid, args.pool,
                        str(log))
    return proc, log


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a launched run's process group (spark-submit leads it: JVM and Python driver) and reap it."""
    with contextlib.suppress(ProcessLookupError):  # the whole group already exited: only the reaping is left
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _recorded_pid(path: Path, key: str, required: bool = True) -> int | None:
    """A process id a run recorded (``_submit.json``, ``_run.json``), read through the input gate: the
    folder is the one the user named, and a signal must never go to a pid made of garbage."""
    doc = read_document(path, f"--output {path.name}")
    pid = doc.get(key) if isinstance(doc, dict) else None
    if pid is None and not required:
        return None
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        raise InputError(f"--output: {str(path)!r} is not a run record of `ftops workload run` (no {key})", field="--output")
    return pid


def submitted_group(output: Path) -> tuple[int, float | None] | None:
    """The process group a run recorded in ``<output>/_submit.json`` and its leader's start time (None: no
    record). Check it with :func:`~spark_jobs.runtime.processes.owns_group` before signalling it."""
    submit = Path(output) / "_submit.json"
    if not submit.exists():
        return None
    doc = read_document(submit, "--output _submit.json")
    started = doc.get("started") if isinstance(doc, dict) else None
    return _recorded_pid(submit, "pgid"), started if isinstance(started, (int, float)) else None


def driver_running(output: Path) -> bool:
    """Whether the run recorded in ``output`` still has its driver (not a later process given its pid)."""
    group = submitted_group(output)
    return group is not None and same_process(*group)


def stop_run(output: Path, timeout_s: float = 30.0) -> bool:
    """Stop a run started by ``workload run``: SIGTERM to its Python driver (it stops the query
    between micro-batches and exits), then SIGTERM and finally SIGKILL to the process group.
    Returns whether anything was running."""
    group = submitted_group(output)
    if group is None:
        raise InputError(f"--output: {str(output)!r} has no _submit.json (not started by `ftops workload run`)")
    pgid = group[0]
    if not own_group_alive(*group):  # gone, or its pid went to another process since
        return False
    run_doc = Path(output) / "_run.json"
    if run_doc.exists():
        driver = _recorded_pid(run_doc, "pid", required=False)
        with contextlib.suppress(ProcessLookupError):
            if driver and os.getpgid(driver) == pgid:  # still the run's own driver, not a reused pid
                os.kill(driver, signal.SIGTERM)
    for sig, wait in ((None, timeout_s), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        if sig is not None:
            signal_group(pgid, sig)
        if wait_while(lambda: group_alive(pgid), timeout_s=wait):
            return True
    return True

