"""``ftops workload topology|generate|run|retune|stop``: pipelines (a sample's name, or yours with
``--pipeline module:attribute`` or ``--pipeline path/to/file.py``) from the command line.

Registered through the ``ftops.commands`` entry point (``workload = "spark_jobs.cli.workload"``);
``python -m spark_jobs.cli.workload ...`` runs the same commands without it.

- ``topology [WORKLOAD | --pipeline REF] [--param k=v ...] [--rates-from METRICS.jsonl] [--json]``: the
  pipeline's topology document, derived from the same definition as its Spark job (expected rates by
  default, or rates measured from a run's metrics file).
- ``generate ... --input DIR (--seconds N | --realtime [--duration-s S])``: the pipeline's seeded sample input.
- ``run ... --role primary|replica|reference --input DIR --output DIR ...``: spark-submit of
  ``spark_jobs.runtime.run_pipeline`` against ``--master`` (default ``local[2]``), in its own session (process
  group), so that the whole tree (JVM and Python driver) can be stopped; ``--detach`` returns at once.
- ``stop --output DIR``: SIGTERM to a detached run's Python driver (a graceful stop between
  micro-batches), then to its process group.
- ``run ... --redundancy-level L``: computation redundancy against slowdowns as Spark speculative
  execution, the ``spark.speculation*`` settings of :func:`ft_core.redundancy.allocation.speculation_settings`.
- ``retune --state-file FILE [--bound-ms B ... -- RUN ARGS]``: one period of the redundancy controller
  (:mod:`spark_jobs.redundancy.runtime`); the first call (no state yet) submits ``RUN ARGS`` under
  the controller, later calls step it and resubmit the run from its checkpoint when the level changes,
  or, with ``--live`` on the first call, change the running job's level (:mod:`spark_jobs.redundancy.live`).
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ft_core.cli.output import print_json, print_table
from ft_core.cli.registry import add_renamed_flag
from ft_core.errors import InputError
from ft_core.input.documents import read_json_lines
from ft_core.input.quantities import Milliseconds, Positive, PositiveSeconds, TaskBudget, TaskCount, field_kind, flag
from ft_core.input.validation import validate
from ft_core.redundancy.controller import ControllerParams
from ft_core.topology.document import split_task_id
from spark_jobs.pipeline.loading import add_pipeline_arguments, load_workload, pipeline_ref
from spark_jobs.runtime.launch import add_run_arguments, launch_run, stop_run


def register(sub, groups) -> None:
    wl = sub.add_parser("workload", help="pipelines: topology documents, sample input, Spark runs")
    wsub = wl.add_subparsers(dest="workload_command", required=True, parser_class=type(wl))

    topo = wsub.add_parser("topology", help="print the pipeline's topology document")
    add_pipeline_arguments(topo, positional=True)
    _params(topo)
    topo.add_argument("--rates-from", type=Path, help="a run's metrics.jsonl: measured task rates instead of expected ones")
    topo.add_argument("--name", help="document name (default: the pipeline's name)")
    topo.add_argument("--json", action="store_true")
    topo.set_defaults(func=_topology)

    gen = wsub.add_parser("generate", help="write the seeded sample input: N seconds at once, or appended in real time")
    add_pipeline_arguments(gen, positional=True)
    gen.add_argument("--input", type=Path, required=True)
    _params(gen)
    mode = gen.add_mutually_exclusive_group(required=True)
    mode.add_argument("--seconds", type=flag(PositiveSeconds), help="event-time seconds to write at once")
    mode.add_argument("--realtime", action="store_true", help="append one file per source every file_s seconds")
    gen.add_argument("--duration-s", type=flag(PositiveSeconds), help="realtime: stop after this many seconds")
    gen.add_argument("--speedup", type=flag(Positive), default=1.0, help="realtime: event seconds per wall second")
    gen.add_argument("--json", action="store_true", help="print the files written as JSON; with --realtime, what was started "
                     "(folder, sources, pid) once it runs, and the final count on stderr")
    gen.set_defaults(func=_generate)

    run = wsub.add_parser("run", help="spark-submit a primary, replica or reference job")
    add_run_arguments(run)
    run.add_argument("--json", action="store_true", help="print the run (output, log, exit code; --detach: its process "
                     "group) as JSON")
    run.set_defaults(func=_run)

    retune = wsub.add_parser("retune", help="one period of the redundancy controller: resubmit the run when the level changes")
    add_renamed_flag(retune, "--state-file", "--state", type=Path, required=True,
                     help="the controller's state file (created by the first call)")
    retune.add_argument("--bound-ms", type=flag(field_kind(ControllerParams, "latency_bound_ms")), help="first call: the per-batch latency bound (p90 of a period's batches)")
    retune.add_argument("--step-pct", type=flag(field_kind(ControllerParams, "step_min_pct")), default=25.0, help="first call: minimum step in percentage points (default 25)")
    retune.add_argument("--perf-margin", type=flag(field_kind(ControllerParams, "perf_margin")), default=0.1, help="first call: safety band as a fraction of the bound")
    retune.add_argument("--min-batches", type=flag(TaskCount), default=5, help="batches a period needs (default 5)")
    retune.add_argument("--warmup-batches", type=flag(TaskBudget), default=2, help="first batches of each (re)submission left out (default 2)")
    retune.add_argument("--live", action="store_true",
                        help="first call: apply level changes to the running job, without resubmitting it")
    retune.add_argument("--json", action="store_true", help="the output is JSON either way; errors become JSON documents too")
    retune.add_argument("run_argv", nargs=argparse.REMAINDER, help="first call: -- then the `workload run` arguments")
    retune.set_defaults(func=_retune)

    stop = wsub.add_parser("stop", help="stop a detached run gracefully (by its output folder)")
    stop.add_argument("--output", type=Path, required=True)
    stop.add_argument("--timeout-s", type=flag(PositiveSeconds), default=30.0)
    stop.add_argument("--json", action="store_true", help='print {"output": DIR, "stopped": true|false}')
    stop.set_defaults(func=_stop)


def _params(parser) -> None:
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pipeline parameter (repeatable)")


def _topology(args: argparse.Namespace) -> int:
    workload = load_workload(pipeline_ref(args), args.param)
    if args.rates_from is not None:
        from spark_jobs.pipeline.rates import measured_topology

        topo = measured_topology(_metrics_lines(args.rates_from), workload, name=args.name)
    else:
        topo = workload.topology(name=args.name)
    if args.json:
        print_json(topo.to_document())
        return 0
    print(f"{topo.name}: " + ", ".join(f"{op.name}x{op.parallelism}" for op in topo.operators) + "; streams "
          + ", ".join(f"{s.source}->{s.target} {s.partitioning}" for s in topo.streams))
    print_table(*_task_table(workload, topo))
    return 0


def _task_table(workload, topo) -> tuple[list[str], list[list]]:
    """Headers and rows of ``workload topology``'s table: each task's operator (its name; the operator's
    description in a column of its own when the pipeline gives any) and rate."""
    ops = [workload.operator(split_task_id(t)[0]) for t in topo.task_ids()]
    rows = [[t, op.name, topo.task_rate(t)] for t, op in zip(topo.task_ids(), ops)]
    if not any(op.description for op in ops):
        return ["task", "operator", "rate"], rows
    return ["task", "operator", "rate", "description"], [row + [op.description] for row, op in zip(rows, ops)]


def _generate(args: argparse.Namespace) -> int:
    from spark_jobs.pipeline import sample_input

    workload = load_workload(pipeline_ref(args), args.param)
    workload.require_sample("ftops workload generate")
    sources = list(sample_input.source_names(workload))
    if args.seconds is not None:
        n = sample_input.write_seconds(workload, args.input, args.seconds)
        if args.json:
            print_json({"input": str(args.input), "sources": sources, "files_per_source": n})
        else:
            print(f"wrote {n} files per source ({', '.join(sources)}) to {args.input}")
        return 0
    if args.json:  # a generator runs until stopped: say what runs now, the final count goes to stderr
        print_json({"input": str(args.input), "sources": sources, "realtime": True, "pid": os.getpid(),
                    "duration_s": args.duration_s, "speedup": args.speedup})
    else:  # it writes silently from here: say what and how it ends
        until = f"for {args.duration_s:g} s" if args.duration_s else "until stopped (Ctrl-C, or `kill " f"{os.getpid()}`)"
        print(f"writing {', '.join(sources)} to {args.input} in real time (x{args.speedup:g}) {until}", flush=True)
    try:
        end = sample_input.run_generator(workload, args.input, args.duration_s, args.speedup)
    except KeyboardInterrupt:
        end = sample_input.existing_files(workload, args.input)
    print(f"{end} files per source in {args.input}", file=sys.stderr if args.json else sys.stdout)
    return 0


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
    elif not args.json:
        print(f"{args.role} run done: its output in {args.output} (log: {log})")
    if args.json:  # the run's own exit status, also in the document (spark-submit's, not one of ftops's errors)
        print_json({"output": str(args.output), "log": str(log), "exit_code": code})
    return code


def _retune(args: argparse.Namespace) -> int:
    from spark_jobs.redundancy import runtime as redundancy_runtime

    run_argv = args.run_argv[1:] if args.run_argv[:1] == ["--"] else args.run_argv
    if args.state_file.exists():
        if run_argv or args.bound_ms is not None or args.live:
            raise InputError("--state-file: the run is already under the controller; give only --state-file (and period "
                             "options)")
        record, _proc = redundancy_runtime.step(args.state_file, min_batches=args.min_batches, warmup_batches=args.warmup_batches)
        print_json(record)
        return 0
    if not run_argv or args.bound_ms is None:
        raise InputError(f"--state-file: {str(args.state_file)!r} does not exist; the first call needs --bound-ms and -- RUN ARGS")
    params = _controller_params(args)
    _proc, state = redundancy_runtime.start(run_argv, params, args.state_file, live=args.live)
    print_json(state.history[-1])
    return 0


def _controller_params(args: argparse.Namespace) -> ControllerParams:
    return ControllerParams(latency_bound_ms=args.bound_ms, step_min_pct=args.step_pct, perf_margin=args.perf_margin)


def _iso_time(text: str) -> str:
    datetime.fromisoformat(text.replace("Z", "+00:00"))  # a ValueError names the problem
    return text


class _MetricsLine(BaseModel):
    """What :func:`spark_jobs.pipeline.rates.measured_topology` reads of a metrics line (others pass)."""

    model_config = ConfigDict(allow_inf_nan=False)
    timestamp: Annotated[str, Field(strict=True), AfterValidator(_iso_time)]
    batch_duration_ms: Milliseconds
    tasks: dict[str, dict[Literal["in", "out"], Annotated[int, Field(ge=0)]]]


def _metrics_lines(path: Path) -> list[dict]:
    """A run's metrics file (``workload run --metrics``), every line checked before rates are computed."""
    lines = read_json_lines(path, "--rates-from")
    for number, line in enumerate(lines, start=1):
        validate(_MetricsLine, line, f"--rates-from line {number}")
    return lines


def _stop(args: argparse.Namespace) -> int:
    was = stop_run(args.output, args.timeout_s)
    if args.json:
        print_json({"output": str(args.output), "stopped": bool(was)})
    else:
        print("stopped" if was else "not running")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m spark_jobs.cli.workload ...`` is ``ftops workload ...`` (same errors and exit codes)."""
    from ft_core.cli.main import main as ftops_main

    return ftops_main(["workload", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
