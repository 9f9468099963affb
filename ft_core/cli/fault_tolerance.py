"""``ftops transparency check``, ``ftops plan placement``, ``ftops plan redundancy``, ``ftops faults``
(paper 001: replication transparency and replica placement; thesis 002: adaptive redundancy and faults).

- ``ftops transparency check STREAMS.json [--json]``: merge replica streams with the first-arrival
  duplicate filter (:mod:`ft_core.transparency.duplicate_filter`) and check that the result equals the
  unreplicated stream. Exit 0 when transparent, 3 when not, 2 on bad input. The document (JSON,
  or YAML with the same structure; quote times in YAML, which reads 09:00:00 as a number)::

      {
        "name": "fig1-load",                       # optional
        "identity": {                              # optional: what makes two rows the same tuple
          "window": ["window_start", "window_end"],  #   window fields (default none)
          "key": ["sensor"],                         #   key fields (default none)
          "timestamp": "window_end"                  #   compared with punctuations (default: last window field)
        },                                         # no window/key fields: the whole row is the identity
        "reference": [{...}, ...],                 # the unreplicated, failure-free output rows
        "replicas": {                              # per replica: what reached the consumer, when
          "primary": [{"at": 0.5, "row": {...}}, {"at": 0.9, "punctuation": 10}, ...]
        }
      }

  ``at`` is the arrival time (s) at the consumer; each replica's events are in its sending order
  (in-order transport), a replica that crashed simply stops. A punctuation promises that the
  replica's later rows have a larger timestamp. Timestamps and punctuations must all be numbers or
  all strings (ISO-8601 strings of one format compare correctly).
- ``ftops plan placement NODES.yaml --k-min K [--k-max K] [--cost-target X] [--json]``:
  :mod:`ft_core.transparency.placement` (Algorithms 5 and 6 over failure domains). Exit 3 when k_min
  replicas cannot be placed; a cost target that cannot be met at k_min is reported, exit 0.
- ``ftops plan redundancy`` with exactly one of ``--model MODEL.yaml [--mode M]`` (Algorithm 1 and
  Eq. 3.1, :mod:`ft_core.redundancy.allocation`), ``--trace TRACE.yaml [--state-file STATE.json]`` (Algorithm 2
  over a latency trace, :mod:`ft_core.redundancy.controller`; ``--state-file`` resumes from and saves
  the controller's state, e.g. between Airflow runs) or ``--level X``; prints the level and the
  Spark speculation settings it maps to (:func:`ft_core.redundancy.allocation.speculation_settings`).
- ``ftops faults validate PROFILE.yaml [--json]`` and ``ftops faults schedule PROFILE.yaml
  --duration S --seed N [--json]``: :mod:`ft_core.redundancy.fault_profile`.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ft_core.cli.output import print_json, print_table
from ft_core.cli.registry import add_renamed_flag
from ft_core.input.documents import read_document
from ft_core.input.quantities import Fraction, NodeCount, NonNegative, Seconds, Seed, flag
from ft_core.input.validation import validate
from ft_core.errors import InputError
from ft_core.redundancy.allocation import load_redundancy_model, plan_allocation, speculation_settings
from ft_core.redundancy.controller import ControllerState, RedundancyController, load_trace, run_trace
from ft_core.redundancy.fault_profile import FaultProfile, fault_schedule, load_fault_profile
from ft_core.transparency.duplicate_filter import Item, Punctuation, RowIdentity, TransparencyReport, check_transparency
from ft_core.transparency.placement import PlacementPlan, load_placement_problem, place_replicas

EXIT_NOT_TRANSPARENT = 3


def register(sub, groups) -> None:
    _register_transparency(sub)
    _register_placement(groups["plan"])
    _register_redundancy(groups["plan"])
    _register_faults(sub)


def _register_transparency(sub) -> None:
    group = sub.add_parser("transparency", help="replication transparency: merge replica streams first-arrival (paper 001)")
    tsub = group.add_subparsers(dest="transparency_command", required=True, parser_class=type(group))
    check = tsub.add_parser(
        "check", help="merge replica streams with the duplicate filter; exit 0 iff they equal the unreplicated stream",
        description="Merge the replica streams of a document with paper 001's first-arrival duplicate filter "
                    "(Algorithm 1) and compare the result with the unreplicated reference. Exit 0 when equal, 3 when not.")
    check.add_argument("streams", help="replica streams document (.json, .yaml); format in ft_core/cli/fault_tolerance.py")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.set_defaults(func=_transparency_check)


def _register_placement(plan) -> None:
    pl = plan.add_parser(
        "placement", help="place replicas on the cheapest nodes outside their primary's failure domain (paper 001, Alg. 5-6)",
        description="Deploy up to --k-max replicas per task (Algorithm 5: cheapest node with capacity in a failure domain "
                    "no copy of the task uses), then prune the least useful per unit of cost while the total exceeds "
                    "--cost-target (Algorithm 6), keeping --k-min replicas. Exit 3 when k_min cannot be placed.")
    pl.add_argument("nodes", help="placement document (.yaml, .json): nodes, cost, tasks")
    pl.add_argument("--k-min", type=flag(NodeCount), required=True, help="replicas (besides the primary) every task must keep")
    pl.add_argument("--k-max", type=flag(NodeCount), default=None, help="replicas to deploy before pruning (default: k-min)")
    pl.add_argument("--cost-target", type=flag(NonNegative), default=None, help="prune while the total stream cost exceeds this")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    pl.set_defaults(func=_plan_placement)


def _register_redundancy(plan) -> None:
    rd = plan.add_parser(
        "redundancy", help="redundancy level against slowdowns and its Spark speculation settings (thesis 002)",
        description="Give exactly one of --model (Algorithm 1 + Eq. 3.1 from a profiled pipeline), --trace "
                    "(Algorithm 2, the feedback controller, over a latency trace) or --level; prints the redundancy "
                    "level and the spark.speculation settings it maps to.")
    source = rd.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="redundancy model document (.yaml, .json)")
    source.add_argument("--trace", help="latency trace document (.yaml, .json)")
    source.add_argument("--level", type=flag(Fraction), help="a replication fraction in [0, 1]")
    rd.add_argument("--mode", default=None, help="with --model: the application mode (default: the first)")
    add_renamed_flag(rd, "--state-file", "--state", default=None,
                     help="with --trace: controller state file to resume from and save to")
    rd.add_argument("--json", action="store_true", help="print the result as JSON")
    rd.set_defaults(func=_plan_redundancy)


def _register_faults(sub) -> None:
    group = sub.add_parser("faults", help="fault profiles and seeded fault schedules (thesis 002's fault model)")
    fsub = group.add_subparsers(dest="faults_command", required=True, parser_class=type(group))
    val = fsub.add_parser("validate", help="validate a fault profile and summarise its fault processes")
    val.add_argument("profile", help="fault profile (.yaml, .json)")
    val.add_argument("--json", action="store_true", help="print the validated profile as JSON")
    val.set_defaults(func=_faults_validate)
    sch = fsub.add_parser("schedule", help="the faults of a profile over a duration, deterministic in the seed")
    sch.add_argument("profile", help="fault profile (.yaml, .json)")
    sch.add_argument("--duration", type=flag(Seconds), required=True, help="seconds of schedule from t = 0")
    sch.add_argument("--seed", type=flag(Seed), required=True, help="random seed (same seed, same schedule)")
    sch.add_argument("--json", action="store_true", help="print the events as JSON")
    sch.set_defaults(func=_faults_schedule)


# --- transparency -------------------------------------------------------------------------------

class _Identity(BaseModel):
    model_config = ConfigDict(extra="forbid")
    window: list[str] = Field(default_factory=list)
    key: list[str] = Field(default_factory=list)
    timestamp: str | None = None


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    at: Seconds
    row: dict[str, Any] | None = None
    punctuation: float | str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> _Event:
        if (self.row is None) == (self.punctuation is None):
            raise ValueError("give exactly one of row, punctuation")
        return self


class _StreamsDoc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "replica-streams"
    description: str | None = None
    identity: _Identity = Field(default_factory=_Identity)
    reference: list[dict[str, Any]]
    replicas: dict[str, list[_Event]] = Field(min_length=1)


def _transparency_check(args: argparse.Namespace) -> int:
    doc = validate(_StreamsDoc, read_document(args.streams, "replica streams"), "replica streams")
    identity = RowIdentity(tuple(doc.identity.window), tuple(doc.identity.key), doc.identity.timestamp)
    streams = {name: [_stream_event(identity, name, i, e) for i, e in enumerate(events)] for name, events in doc.replicas.items()}
    _check_in_order(doc)
    for i, row in enumerate(doc.reference):
        _check_fields(identity, row, f"reference.{i}")
    _check_comparable(doc, identity)
    report = check_transparency(doc.reference, streams)
    if args.json:
        print_json({"name": doc.name, **report.model_dump(mode="json")})
    else:
        _print_transparency(doc.name, report)
    return 0 if report.transparent else EXIT_NOT_TRANSPARENT


def _stream_event(identity: RowIdentity, replica: str, i: int, event: _Event) -> tuple[float, Item | Punctuation]:
    if event.punctuation is not None:
        if identity.time_field is None:
            raise InputError(f"replica streams field replicas.{replica}.{i}.punctuation: needs identity.timestamp "
                             "(or identity.window) to know which field punctuations bound")
        return event.at, Punctuation(event.punctuation)
    _check_fields(identity, event.row, f"replicas.{replica}.{i}.row")
    return event.at, identity.item(event.row)


def _check_in_order(doc: _StreamsDoc) -> None:
    for name, events in doc.replicas.items():
        for i in range(1, len(events)):
            if events[i].at < events[i - 1].at:
                raise InputError(f"replica streams field replicas.{name}.{i}.at: {events[i].at:g} is before the previous "
                                 f"event's {events[i - 1].at:g}; list each replica's events in the order it sent them")


def _check_fields(identity: RowIdentity, row: dict[str, Any], where: str) -> None:
    needed = [*identity.window_fields, *identity.key_fields] + ([identity.time_field] if identity.time_field else [])
    missing = [f for f in needed if f not in row]
    if missing:
        raise InputError(f"replica streams field {where}: missing field {missing[0]!r} (named in identity)")


def _check_comparable(doc: _StreamsDoc, identity: RowIdentity) -> None:
    """Punctuations are compared with timestamps: a number and a string cannot be ordered."""
    if identity.time_field is None:
        return
    kinds = {}
    for name, events in doc.replicas.items():
        for i, e in enumerate(events):
            value = e.punctuation if e.punctuation is not None else e.row[identity.time_field]
            kind = "string" if isinstance(value, str) else "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else None
            where = f"replicas.{name}.{i}.{'punctuation' if e.punctuation is not None else 'row.' + identity.time_field}"
            if kind is None:
                raise InputError(f"replica streams field {where}: a timestamp must be a number or a string, got {value!r}")
            kinds.setdefault(kind, where)
    if len(kinds) > 1:
        raise InputError(f"replica streams field {kinds['string']}: a string timestamp cannot be compared with the "
                         f"number at {kinds['number']}; use one type for all timestamps and punctuations")


def _print_transparency(name: str, report: TransparencyReport) -> None:
    if report.transparent:
        print(f"{name}: transparent: the merged output equals the unreplicated stream ({report.output_rows} rows"
              f"{', same order' if report.same_order else ', in a different order'})")
    else:
        print(f"{name}: NOT transparent: {len(report.missing)} reference rows missing, {len(report.unexpected)} "
              f"unexpected rows ({report.output_rows} merged rows vs {report.reference_rows} in the reference)")
    print(f"duplicates dropped: {report.duplicates_dropped} by the counters, {report.late_dropped} behind a punctuation")
    print_table(["replica", "rows delivered", "first arrivals"],
                [[r, report.delivered_rows[r], report.first_arrivals[r]] for r in report.delivered_rows])
    for label, rows in (("missing", report.missing), ("unexpected", report.unexpected)):
        for row in rows:
            print(f"{label}: {json.dumps(row, sort_keys=True)}")


# --- placement ----------------------------------------------------------------------------------

def _plan_placement(args: argparse.Namespace) -> int:
    if args.k_max is not None and args.k_max < args.k_min:
        raise InputError(f"--k-max: must be >= --k-min ({args.k_min}), got {args.k_max}")
    problem = load_placement_problem(args.nodes)
    plan = place_replicas(problem, args.k_min, k_max=args.k_max, cost_target=args.cost_target)
    if args.json:
        print_json(plan)
    else:
        _print_placement(problem.name, plan)
    return 0


def _print_placement(name: str, plan: PlacementPlan) -> None:
    ratio = f"{plan.total_cost / plan.baseline_cost:.2f}x" if plan.baseline_cost > 0 else "n/a"
    print(f"{name}: {len(plan.placements)} replicas (k_min {plan.k_min}, k_max {plan.k_max}); stream cost "
          f"{plan.total_cost:g} vs {plan.baseline_cost:g} unreplicated ({ratio}), {plan.streams} streams vs "
          f"{plan.baseline_streams}, bandwidth {plan.bandwidth:g} vs {plan.baseline_bandwidth:g}")
    print_table(["task", "node", "domain", "phase", "stream cost"],
                [[p.task, p.node, p.domain, p.phase, p.cost] for p in plan.placements])
    for p in plan.pruned:
        print(f"pruned: {p.task} on {p.node} (stream cost {p.cost:g}); total now {p.total_cost_after:g}")
    for task, missing in plan.shortfall.items():
        print(f"warning: {task}: {missing} of the k_max replicas found no node outside its used failure domains")
    if plan.target_met is False:
        print(f"warning: cost target {plan.cost_target:g} not met: {plan.total_cost:g} is the cost with k_min "
              f"replicas kept (lower --k-min or raise the target)")


# --- redundancy ---------------------------------------------------------------------------------

def _plan_redundancy(args: argparse.Namespace) -> int:
    if args.mode is not None and args.model is None:
        raise InputError("--mode: only applies with --model")
    if args.state_file is not None and args.trace is None:
        raise InputError("--state-file: only applies with --trace")
    if args.model is not None:
        return _redundancy_from_model(args)
    if args.trace is not None:
        return _redundancy_from_trace(args)
    _emit_redundancy(args, {"source": "level"}, args.level, speculation_settings(args.level))
    return 0


def _redundancy_from_model(args: argparse.Namespace) -> int:
    plan = plan_allocation(load_redundancy_model(args.model), args.mode)
    doc = {"source": "model", **plan.model_dump(mode="json")}
    if not args.json:
        print(f"mode {plan.mode}: active/passive instances (Algorithm 1), duplicated fraction per edge (Eq. 3.1)")
        print_table(["operator", "active", "passive"], [[op, plan.active[op], plan.passive[op]] for op in plan.active])
        print_table(["edge", "fraction"], [[f"{e.sender} -> {e.receiver}", e.fraction] for e in plan.fractions])
        for warning in plan.warnings:
            print(f"warning: {warning}")
    _emit_redundancy(args, doc, plan.level, speculation_settings(plan.level))
    return 0


def _redundancy_from_trace(args: argparse.Namespace) -> int:
    trace = load_trace(args.trace)
    state = _load_state(args.state_file) if args.state_file else None
    states = run_trace(trace.controller, trace.metric_ms, state)
    controller = RedundancyController(trace.controller, states[-1])
    if args.state_file:
        Path(args.state_file).write_text(json.dumps(controller.to_dict(), indent=2) + "\n")
    doc = {"source": "trace", "name": trace.name, "redundancy_pct": states[-1].redundancy_pct,
           "states": [s.model_dump(mode="json") for s in states]}
    if not args.json:
        bound = trace.controller.latency_bound_ms
        print(f"{trace.name}: {len(states)} periods against a {bound:g} ms bound (Algorithm 2, rule {trace.controller.rule})")
        print_table(["period", "metric ms", "dl ms", "movement", "redundancy %"],
                    [[s.periods, m, s.last_difference_ms, s.movement, s.redundancy_pct] for s, m in zip(states, trace.metric_ms)])
    _emit_redundancy(args, doc, controller.level, speculation_settings(controller.level))
    return 0


def _load_state(path: str) -> ControllerState | None:
    if not Path(path).exists():
        return None  # the first run creates it
    return RedundancyController.from_dict(read_document(path, "controller state")).state


def _emit_redundancy(args: argparse.Namespace, doc: dict, level: float, settings: dict[str, str]) -> None:
    if args.json:
        print_json({**doc, "level": level, "spark_conf": settings})
        return
    print(f"redundancy level {level:.4g} -> Spark speculation (first copy wins):")
    for key, value in settings.items():
        print(f"  --conf {key}={value}")


# --- faults -------------------------------------------------------------------------------------

def _faults_validate(args: argparse.Namespace) -> int:
    profile = load_fault_profile(args.profile)
    rows = list(_fault_processes(profile))
    if args.json:
        print_json({"valid": True, "processes": len(rows), "profile": profile.model_dump(mode="json", exclude_none=True)})
        return 0
    print(f"fault profile {profile.name!r} is valid: {len(rows)} fault processes")
    print_table(["target", "kind", "arrivals", "size"], rows)
    return 0


def _fault_processes(profile: FaultProfile):
    for name, spec in profile.operators.items():
        targets = [name] if spec.instances is None else [f"{name}[{i}]" for i in spec.instances]
        for kind, size_field in (("slowdown", "magnitude_ms"), ("link_outage", "duration_ms"), ("crash", "down_s")):
            fault = getattr(spec, kind)
            if fault is not None:
                for target in targets:
                    yield [target, kind, _arrivals(fault), _size(getattr(fault, size_field), size_field)]
    for domain, fault in profile.domains.items():
        yield [domain, "domain", _arrivals(fault), _size(fault.down_s, "down_s")]


def _arrivals(fault) -> str:
    if fault.at_s is not None:
        return "at " + ", ".join(f"{t:g}" for t in fault.at_s) + " s"
    if fault.rate_per_hour is not None:
        return f"{fault.rate_per_hour:g} per hour"
    return f"every {fault.every_s.mean:g} s (exp.)"


def _size(dist, field: str) -> str:
    if dist is None:
        return "-"
    unit = field.rsplit("_", 1)[1]
    return f"{dist.mean:g} +- {dist.stddev:g} {unit}"


def _faults_schedule(args: argparse.Namespace) -> int:
    profile = load_fault_profile(args.profile)
    events = fault_schedule(profile, args.duration, args.seed, field="--duration")
    if args.json:
        print_json({"profile": profile.name, "duration_s": args.duration, "seed": args.seed,
                    "events": [e.model_dump(mode="json") for e in events]})
        return 0
    counts = Counter(e.kind for e in events)
    print(f"{profile.name}: {len(events)} faults in {args.duration:g} s (seed {args.seed}): "
          + (", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "none"))
    print_table(["time s", "kind", "target", "magnitude ms", "duration s"],
                [[e.time_s, e.kind, e.target, "-" if e.magnitude_ms is None else e.magnitude_ms,
                  "-" if e.duration_s is None else e.duration_s] for e in events])
    return 0

