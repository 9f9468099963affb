"""``ftops simulate``: the failure timeline of a topology under a replication plan."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ft_core.cli.output import emit_report, print_json, print_table
from ft_core.cli.topology import load_graph
from ft_core.errors import InputError
from ft_core.input.limits import current_limits, exceeds
from ft_core.input.quantities import field_kind, flag
from ft_core.input.validation import describe, validate
from ft_core.simulation.failure_timeline import Arrival, Timeline, TimelineParams, simulate
from ft_core.input.documents import read_document
from ft_core.topology.task_graph import TaskGraph

_FLAGS = {  # flag attribute -> TimelineParams field
    "detection_s": "detection_s", "restore_s": "restore_s", "checkpoint_interval_s": "checkpoint_interval_s",
    "case": "case", "utilisation": "utilisation", "capacity": "capacity", "node_cap": "node_cap",
    "task_cost": "task_cost", "policy": "policy",
}


def register(sub, groups) -> None:
    sim = sub.add_parser(
        "simulate", help="what happens if these tasks (a rack) fail now: tentative OF, staged recovery, catch-up",
        description="Simulate a correlated failure: tentative outputs through the plan's replicas (paper 000), the "
                    "staged restart as capacity arrives (paper 003), the backlog each restarted task catches up. "
                    "Times are seconds after the failure; capacities are fractions of a node (1.0 = one node).")
    sim.add_argument("topology", help="topology document (.json, .yaml) with task rates")
    sim.add_argument("--plan", help="replication plan (JSON from `ftops plan replication --json`); default: no replicas")
    sim.add_argument("--fail", action="append", default=[], metavar="TASKS",
                     help="failed tasks, comma-separated, e.g. 'O1[0],O2[1]' (repeatable)")
    sim.add_argument("--fail-domain", action="append", default=[], metavar="DOMAIN",
                     help="fail every task placed in this failure domain (needs --domains; repeatable)")
    sim.add_argument("--domains", help="placement document: {task or operator: domain} or {domain: [tasks or operators]}")
    sim.add_argument("--params", help="timeline parameters document (JSON/YAML; fields as in the JSON output's params); "
                                      "flags override it")
    sim.add_argument("--detection-s", type=_flag("detection_s"), help="failure detection time (default 10)")
    sim.add_argument("--restore-s", type=_flag("restore_s"), help="state restore time per restarted task (default 5)")
    sim.add_argument("--checkpoint-interval-s", type=_flag("checkpoint_interval_s"), help="checkpoint (trigger) interval (default 10)")
    sim.add_argument("--case", choices=("min", "avg", "max"), help="input since the last checkpoint: 0, half or a whole interval (default avg)")
    sim.add_argument("--utilisation", type=_flag("utilisation"), help="input rate / processing rate of a task, in (0, 1) (default 0.5)")
    sim.add_argument("--capacity", type=_flag("capacity"), help="free capacity of the survivors at detection, in nodes (default 0)")
    sim.add_argument("--arrivals", type=_arrivals_flag, default=None,
                     help="replacement nodes as SIZE@SECONDS, comma-separated, e.g. '1@60,1@120'")
    sim.add_argument("--node-cap", type=_flag("node_cap"), help="usable fraction of a node's CPU (default 0.8)")
    sim.add_argument("--task-cost", type=_flag("task_cost"),
                     help="CPU share of one task, in nodes, unless the params' cost map names it (default 0.1)")
    sim.add_argument("--policy", choices=("order-then-pack", "blocking"), help="restart order (default order-then-pack)")
    sim.add_argument("--json", action="store_true", help="print the timeline as JSON")
    sim.set_defaults(func=_simulate)

    bench = groups["bench"].add_parser("simulate", help="failure timeline simulation time at 1,000 and 10,000 tasks")
    bench.add_argument("--quick", action="store_true", help="1,000 tasks only, report on stdout")
    bench.add_argument("--out", default=None, help="report path (default docs/benchmarks/simulate.md; --quick: stdout only)")
    bench.add_argument("--json", action="store_true", help='print {"out": PATH, "report": MARKDOWN}')
    bench.set_defaults(func=_bench)


def _flag(field: str):
    """The flag of a :class:`TimelineParams` field: the same rules as in a ``--params`` document."""
    return flag(field_kind(TimelineParams, field))


def _simulate(args: argparse.Namespace) -> int:
    graph = load_graph(args.topology)
    params = _params(args)
    replicated = _plan_tasks(graph, args.plan) if args.plan else set()
    failed = _failed(graph, args)
    timeline = simulate(graph, replicated, failed, params)
    if args.json:
        print_json(timeline)
    else:
        _print(timeline)
    return 0


def _bench(args: argparse.Namespace) -> int:
    from ft_core.bench.simulation import QUICK_SIZES, SIZES, run_benchmark  # matplotlib: only when benchmarking

    command = "ftops bench simulate" + (" --quick" if args.quick else "")
    out = args.out or (None if args.quick else "docs/benchmarks/simulate.md")
    report = run_benchmark(QUICK_SIZES if args.quick else SIZES, command,
                           progress=lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True),
                           table=Path(out) if out else None)  # plots only beside a written report
    emit_report(report, out, args.json)
    return 0


def _params(args: argparse.Namespace) -> TimelineParams:
    doc: dict[str, Any] = dict(_document(args.params, "--params")) if args.params else {}
    for flag, field in _FLAGS.items():
        if getattr(args, flag) is not None:
            doc[field] = getattr(args, flag)
    if args.arrivals is not None:
        doc["arrivals"] = [a.model_dump() for a in args.arrivals]
    return validate(TimelineParams, doc, "--params")  # flags were checked as they were parsed


def parse_arrivals(text: str) -> list[Arrival]:
    """``'1@60,0.5@120'`` -> nodes of size 1 at 60 s and 0.5 at 120 s (at most ``FTOPS_MAX_NODES``).

    >>> parse_arrivals("1@60, 0.5@120")
    [Arrival(size=1.0, at_s=60.0), Arrival(size=0.5, at_s=120.0)]
    """
    items = [t.strip() for t in text.split(",") if t.strip()]
    limits = current_limits()
    if len(items) > limits.max_nodes:
        raise InputError(f"--arrivals: {len(items)} nodes {exceeds('max_nodes', len(items), limits)}")
    out = []
    for item in items:
        size, sep, at = item.partition("@")
        if not sep:
            raise InputError(f"--arrivals: {item!r} is not SIZE@SECONDS (e.g. '1@60')")
        try:
            out.append(Arrival(size=size, at_s=at))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(f"--arrivals: {item!r}: {err['loc'][0]} {describe(err)}") from None
    return out


def _arrivals_flag(text: str) -> list[Arrival]:
    try:
        return parse_arrivals(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--arrivals: ")) from None


def _document(path: str, flag: str) -> Any:
    if not Path(path).is_file():
        raise InputError(f"{flag}: no such file {path!r}")
    doc = read_document(path, flag)
    if not isinstance(doc, dict):
        raise InputError(f"{flag}: expected an object in {path}")
    return doc


def _plan_tasks(graph: TaskGraph, path: str) -> set[int]:
    plan = _document(path, "--plan")
    tasks = plan.get("tasks")
    if not isinstance(tasks, list):
        raise InputError(f"--plan: {path} has no 'tasks' list (expected the JSON of `ftops plan replication --json`)")
    made_for = plan.get("topology")
    if made_for is not None and made_for != graph.topology.name:
        raise InputError(f"--plan: the plan was made for topology {made_for!r}, not {graph.topology.name!r}")
    return graph.indices([str(t) for t in tasks], "--plan task")


def _failed(graph: TaskGraph, args: argparse.Namespace) -> set[int]:
    names = [t.strip() for text in args.fail for t in text.split(",") if t.strip()]
    failed = graph.indices(names, "--fail task")
    if args.fail_domain:
        if not args.domains:
            raise InputError("--fail-domain needs --domains (which tasks run in which failure domain)")
        placement = domain_placement(graph, _document(args.domains, "--domains"))
        for domain in args.fail_domain:
            tasks = {t for t, d in placement.items() if d == domain}
            if not tasks:
                known = ", ".join(sorted(set(placement.values()))) or "none"
                raise InputError(f"--fail-domain: no task is placed in {domain!r} (domains: {known})")
            failed |= tasks
    if not failed:
        raise InputError("nothing fails: give --fail TASKS or --fail-domain DOMAIN with --domains")
    return failed


def domain_placement(graph: TaskGraph, doc: dict) -> dict[int, str]:
    """Task index -> failure domain from ``{task|operator: domain}`` or ``{domain: [tasks|operators]}``."""
    out: dict[int, str] = {}
    for key, value in doc.items():
        pairs = [(str(v), str(key)) for v in value] if isinstance(value, list) else [(str(key), str(value))]
        for name, domain in pairs:
            if name in graph.index:
                out[graph.index[name]] = domain
            elif name in graph.tasks_of:
                out.update({t: domain for t in graph.tasks_of[name]})
            else:
                raise InputError(f"--domains: {name!r} is neither a task nor an operator of topology {graph.topology.name!r}")
    return out


def _print(t: Timeline) -> None:
    print(f"{t.topology}: {t.failed_tasks} of {t.tasks} tasks fail ({t.replicated_failed_tasks} replicated); "
          f"{t.queries_failed} of {t.queries_total} queries affected")
    if t.first_tentative_s is not None:
        print(f"tentative outputs from {t.first_tentative_s:g} s with OF {t.tentative_output_fidelity:.4f} "
              f"(plan's worst case {t.plan_output_fidelity:.4f})")
    else:
        print(f"no tentative output: OF {t.tentative_output_fidelity:.4f} until the first query recovers")
    recovered = f"{t.all_recovered_s:g} s" if t.all_recovered_s is not None else f"never ({len(t.unrecovered_queries)} queries unrecovered)"
    weighted = f", priority-weighted mean {t.priority_weighted_recovery_s:.1f} s" if t.priority_weighted_recovery_s is not None else ""
    print(f"all accurate again at {recovered}{weighted}; policy {t.policy}")
    print_table(["stage", "event", "at s", "tasks started", "caught up s", "queries recovered"],
                [[s.stage, s.event, s.time_s, len(s.tasks), "-" if s.caught_up_s is None else s.caught_up_s,
                  _short(s.recovered_queries)] for s in t.stages])
    print_table(["at s", "OF", "caught-up tasks"], [[p.time_s, p.output_fidelity, p.caught_up_tasks] for p in t.fidelity_curve])


def _short(names: list[str], limit: int = 6) -> str:
    if not names:
        return "-"
    return ",".join(names[:limit]) + (f" (+{len(names) - limit})" if len(names) > limit else "")
