"""``ftops bench recovery-runtime``: the command line of :mod:`spark_jobs.recovery_units.bench` (the runs) and
:mod:`spark_jobs.recovery_units.bench_report` (the report); registered by :mod:`spark_jobs.cli.units`."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ft_core.cli.output import command_line, print_json
from ft_core.cli.progress import Progress
from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.quantities import PortBase, TaskCount, flag
from ft_core.input.validation import validate
from spark_jobs.pipeline.loading import add_pipeline_arguments, pipeline_ref
from spark_jobs.recovery_units.bench import (
    SMART_CITY,
    STRATEGIES,
    PlacementFile,
    RecoveryBenchConfig,
    Scenario,
    bench_config,
    run_bench,
)
from spark_jobs.recovery_units.bench_report import render


def register_bench(bench_group) -> None:
    b = bench_group.add_parser("recovery-runtime", help="incremental vs blocking vs operator-centric vs catch-up recovery on Spark (paper 003)")
    b.add_argument("--quick", action="store_true", help="one run per strategy, nodes 20 s apart (about 10 minutes per strategy)")
    b.add_argument("--repetitions", type=flag(TaskCount), default=None, help="runs per strategy (default 3; --quick: 1)")
    b.add_argument("--strategies", default=",".join(STRATEGIES), help=f"comma-separated (default {','.join(STRATEGIES)})")
    add_pipeline_arguments(b)
    b.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pipeline parameter (repeatable)")
    b.add_argument("--placement", type=Path, help='{"apps": {"A": ["O1[0]", ...]}, "domains": {"A": "rack-a"}, "fail": '
                   '"rack-a"}; default: the smart-city scenario (needed with --pipeline)')
    b.add_argument("--work-dir", type=Path, help="an empty folder (default: a new temp folder)")
    b.add_argument("--resume", action="store_true", help="continue the interrupted benchmark in --work-dir (same flags): "
                   "its finished runs are kept, the others run")
    b.add_argument("--port-base", type=flag(PortBase), default=24000, help="ports: masters and UIs above BASE, workers "
                   "BASE+100.., their UIs BASE+200.., the units' UIs BASE+300.. (default 24000)")
    b.add_argument("--no-rehearsal", action="store_true", help="skip the restart rehearsal before the failure (the "
                   "failing domain's applications killed together and restarted once, about 3 minutes a run): the "
                   "catch-up model then has each unit's first start as its restart delay")
    b.add_argument("--out", type=Path, help="report (default docs/benchmarks/recovery-runtime.md; --quick: none)")
    b.add_argument("--json", action="store_true", help="print the summary as JSON")
    b.set_defaults(func=_bench)


def scenario_of(args) -> Scenario:
    """The default (smart-city) scenario, or the pipeline given with its --placement; --param overrides."""
    if not (args.workload or args.pipeline):
        doc = SMART_CITY.model_dump()
    elif args.placement is None:
        raise InputError("--placement: a scenario for --pipeline needs its applications, their failure domains and "
                         'the domain that fails ({"apps": ..., "domains": ..., "fail": ...})')
    else:
        doc = {"pipeline": pipeline_ref(args), "params": []}
    if args.placement is not None:
        placed = validate(PlacementFile, read_document(args.placement, "--placement"), "--placement")
        doc.update(placed.model_dump())
    if args.param:
        doc["params"] = list(args.param)
    try:
        return Scenario.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"--placement: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def _bench(args) -> int:
    import tempfile

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    bad = [s for s in strategies if s not in STRATEGIES]
    if bad or not strategies:
        raise InputError(f"--strategies: expected a list of {', '.join(STRATEGIES)}, got {args.strategies!r}")
    reps = args.repetitions if args.repetitions is not None else (1 if args.quick else 3)
    scenario = scenario_of(args)
    scenario.check()
    if args.resume and args.work_dir is None:
        raise InputError("--resume: give the --work-dir of the benchmark to continue")
    work = (args.work_dir or Path(tempfile.mkdtemp(prefix="ftops-bench-recovery-"))).resolve()
    wanted = RecoveryBenchConfig(work_dir=work, scenario=scenario, strategies=strategies, repetitions=reps,
                                 port_base=args.port_base, arrival_interval_s=20.0 if args.quick else 30.0,
                                 rehearse_restart=not args.no_rehearsal)
    config = bench_config(work, wanted, args.resume)

    progress = Progress("bench recovery-runtime")
    try:
        result = run_bench(config, progress)
    except KeyboardInterrupt:
        progress(f"interrupted; the finished runs are kept: add --resume --work-dir {work} to the same command to continue")
        raise
    result.command = command_line(["bench", "recovery-runtime"])
    (config.work_dir / "result.json").write_text(result.model_dump_json(indent=2))
    out = args.out or (None if args.quick else Path("docs/benchmarks/recovery-runtime.md"))
    report = render(result, out)  # with out: the plot beside it; --quick without --out: stdout only, no plot
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report)
        progress(f"wrote {out}")
    if args.json:
        print_json(result.summary())
    else:
        print(report)
    return 0
