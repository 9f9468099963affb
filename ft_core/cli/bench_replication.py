"""``ftops bench replication``: writes docs/benchmarks/replication.md (see ft_core.bench.replication)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ft_core.cli.output import command_line, emit_report
from ft_core.input.quantities import TaskCount, flag


def register(sub, groups) -> None:
    bench = groups["bench"].add_parser("replication", help="paper 000's planner comparisons (Fig. 13, Fig. 14, optimality, scale)")
    bench.add_argument("--quick", action="store_true", help="a small run for CI smoke tests (seconds, not minutes)")
    bench.add_argument("--out", default=None, help="report path (default docs/benchmarks/replication.md; --quick: stdout only)")
    bench.add_argument("--json", action="store_true", help='print {"out": PATH, "report": MARKDOWN}')
    bench.add_argument("--topologies", type=flag(TaskCount), default=None, help="random topologies per setting (default 100)")
    bench.add_argument("--spark-topologies", type=flag(TaskCount), default=None,
                       help="random topologies per Spark-like setting of section 5 (default 10)")
    bench.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from ft_core.bench.replication import QUICK, BenchConfig, run_benchmark  # matplotlib, HiGHS: only when benchmarking

    config = QUICK if args.quick else BenchConfig()
    if args.topologies is not None:
        config = BenchConfig(**{**config.__dict__, "topologies_per_setting": args.topologies})
    if args.spark_topologies is not None:
        config = BenchConfig(**{**config.__dict__, "spark_topologies": args.spark_topologies})
    command = command_line(["bench", "replication"])
    out = args.out or (None if args.quick else "docs/benchmarks/replication.md")
    report = run_benchmark(config, command, progress=lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True),
                           table=Path(out) if out else None)
    emit_report(report, out, args.json)
    return 0
