"""``ftops bench fleet``: the planner, the store and the scheduled runs at fleet scale (see ft_core.bench.fleet);
writes docs/benchmarks/fleet.md. The store part runs on a private PostgreSQL started for the benchmark (its own
folder under ``$FTOPS_HOME``, removed afterwards), never on the history store ftops operates with."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from ft_core.cli.output import command_line, emit_report
from ft_core.input.quantities import Port, TaskCount, flag


def register(sub, groups) -> None:
    bench = groups["bench"].add_parser("fleet", help="5,000 jobs by simulation: the fleet-recovery planner's time, the "
                                                     "store's queries (index-backed, page times), max_map_length "
                                                     "(issue 33); writes docs/benchmarks/fleet.md")
    bench.add_argument("--quick", action="store_true", help="a small run for the tests (seconds, not minutes)")
    bench.add_argument("--jobs", type=flag(TaskCount), default=None, help="jobs in the synthetic store (default 5000)")
    bench.add_argument("--days", type=flag(TaskCount), default=None, help="days of history per job (default 365)")
    bench.add_argument("--out", default=None, help="report path (default docs/benchmarks/fleet.md; --quick: stdout only)")
    bench.add_argument("--db-port", type=flag(Port), default=None,
                       help="port of the benchmark's own embedded PostgreSQL (default: a free one)")
    bench.add_argument("--json", action="store_true", help='print {"out": PATH, "report": MARKDOWN}')
    bench.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from ft_core.bench.fleet import QUICK, FleetBenchConfig, run_benchmark
    from ft_core.home import ftops_home
    from ft_core.store.embedded import scratch_store

    config = QUICK if args.quick else FleetBenchConfig()
    if args.jobs is not None:
        config = replace(config, store_jobs=args.jobs)
    if args.days is not None:
        config = replace(config, store_days=args.days)
    out = args.out or (None if args.quick else "docs/benchmarks/fleet.md")
    with scratch_store(ftops_home() / "bench-fleet-postgres", args.db_port) as conn:
        report = run_benchmark(config, conn, command_line(["bench", "fleet"]), table=Path(out) if out else None,
                               progress=lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True))
    emit_report(report, out, args.json)
    return 0
