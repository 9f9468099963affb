"""``ftops bench fleet-recovery``: the command line of :mod:`spark_jobs.fleet_recovery.bench` (the runs) and
:mod:`spark_jobs.fleet_recovery.bench_report` (the report); registered by :mod:`spark_jobs.cli.job`."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from ft_core.cli.output import command_line, emit_report
from ft_core.input.quantities import Port, PortBase, PositiveSeconds, TaskCount, flag


def register_bench(bench_group) -> None:
    b = bench_group.add_parser("fleet-recovery", help="fleet staged recovery against fifo and all-at-once restart on "
                               "Spark: jobs of different priorities, one domain lost under all (issue 33)")
    b.add_argument("--jobs", type=flag(TaskCount), default=3, help="jobs (priorities 1, 2, 4, ...; default 3)")
    b.add_argument("--runs", type=flag(TaskCount), default=3, help="runs per policy (default 3)")
    b.add_argument("--spacing-s", type=flag(PositiveSeconds), default=30.0,
                   help="seconds between returning workers (default 30)")
    b.add_argument("--trigger-s", type=flag(PositiveSeconds), default=3.0,
                   help="each job's micro-batch interval (default 3: the jobs share the machine with the cluster)")
    b.add_argument("--quick", action="store_true", help="one run per policy, no report file")
    b.add_argument("--port-base", type=flag(PortBase), default=25000, help="cluster ports above BASE (default 25000)")
    b.add_argument("--db-port", type=flag(Port), help="port of the benchmark's own embedded PostgreSQL (default: a free one)")
    b.add_argument("--out", type=Path, help="report (default docs/benchmarks/fleet-recovery.md; --quick: none)")
    b.add_argument("--json", action="store_true", help="print the report as JSON")
    b.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from ft_core.home import ftops_home
    from ft_core.store.embedded import scratch_server
    from spark_jobs.fleet_recovery.bench import FleetRecoveryBenchConfig, run_bench
    from spark_jobs.fleet_recovery.bench_report import render

    config = FleetRecoveryBenchConfig(jobs=args.jobs, runs=1 if args.quick else args.runs, spacing_s=args.spacing_s,
                                      trigger_s=args.trigger_s, port_base=args.port_base)
    out = args.out or (None if args.quick else Path("docs/benchmarks/fleet-recovery.md"))
    with scratch_server(ftops_home() / "bench-fleet-recovery-postgres", args.db_port) as server, \
            tempfile.TemporaryDirectory(prefix="ftops-bench-fleet-recovery-") as work:
        results, outputs = run_bench(config, Path(work), server.url(),
                                     say=lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True))
    emit_report(render(results, outputs, config, command_line(["bench", "fleet-recovery"]), out),
                str(out) if out else None, args.json)
    return 0
