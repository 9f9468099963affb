"""``ftops bench drill-forecast``: the command line of :mod:`spark_jobs.drills.forecast_bench`; registered by
:mod:`spark_jobs.cli.drill`."""

from __future__ import annotations

import argparse
from pathlib import Path

from ft_core.cli.db import add_db_dir_argument
from ft_core.cli.output import command_line, emit_report
from ft_core.input.names import name_flag


def register_bench(bench_group) -> None:
    b = bench_group.add_parser("drill-forecast", help="each recorded drill of a job forecast again from the store as it "
                               "was before its fault: forecast vs measured time caught up (issue 38)")
    b.add_argument("--job", type=name_flag("job name"), required=True, help="the registered job whose drills to replay")
    b.add_argument("--out", type=Path, help="write the report there too (e.g. docs/benchmarks/drill-forecast.md)")
    add_db_dir_argument(b)
    b.add_argument("--json", action="store_true", help="print the report as JSON")
    b.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from ft_core.store.history import open_history_store
    from spark_jobs.drills.forecast_bench import render, replay

    store = open_history_store(args.db_dir)
    try:
        store.job(args.job)  # InputError when it is not registered
        rows = replay(store, args.job)
    finally:
        store.conn.close()
    emit_report(render(rows, args.job, command_line(["bench", "drill-forecast", "--job", args.job])),
                str(args.out) if args.out else None, args.json)
    return 0
