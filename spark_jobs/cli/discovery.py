"""``ftops profile topology``: the measured topology document of any running Structured Streaming job.

``ftops profile topology --spark-ui URL [--app-id ID] [--query Q] [--last-batches N] [--json]`` reads the
application's monitoring REST API (its driver UI, or a History Server) and prints the topology
(:mod:`spark_jobs.discovery.measured_topology`): with ``--json`` exactly the document ``ftops topology
check``, ``ftops plan replication`` and ``ftops simulate`` read. ``--hosts FILE`` writes where each
task ran (``{task: host}``, a placement document for ``ftops simulate --domains``); ``--save-responses
FILE`` writes every REST answer read, replayable by the tests. ``ftops job register --spark-ui URL``
uses the same options (:func:`discovered_registration`) to register such a job as plan-only.

An unreachable URL, an application that is not streaming or a query with no completed micro-batch
is one line on stderr and exit status 2, within the request timeout (``--timeout-s``, 5 s).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ft_core.cli.output import print_json, print_table
from ft_core.errors import InputError
from ft_core.input.quantities import PositiveSeconds, TaskCount, flag
from spark_jobs.cluster.web_ui import DEFAULT_TIMEOUT_S

DISCOVERED_WORKLOAD = "discovered"


def register_topology_command(psub) -> None:
    """Add ``topology`` to the ``ftops profile`` subcommands."""
    cmd = psub.add_parser("topology", help="the measured topology of any running Structured Streaming job, from its Spark UI",
                          description="Reads a running Structured Streaming application's monitoring REST API (its "
                          "driver UI or a History Server): operators are the query's stages deduplicated across "
                          "micro-batches, links its shuffles (full) and narrow join inputs (one_to_one), rates the "
                          "records each task read per second over the last N micro-batches. --json prints the "
                          "topology document `ftops topology check`, `ftops plan replication` and `ftops simulate` read.")
    add_spark_ui_arguments(cmd, required=True)
    cmd.add_argument("--name", help="the document's name (default '<application>: <query>')")
    cmd.add_argument("--hosts", type=Path, metavar="FILE", help="write {task: host it ran on}: a placement document "
                     "for `ftops simulate --domains` (a host as failure domain)")
    cmd.add_argument("--save-responses", type=Path, metavar="FILE", help="write every REST answer read (a replayable recording)")
    cmd.add_argument("--json", action="store_true", help="print the topology document only")
    cmd.set_defaults(func=_profile_topology)


def add_spark_ui_arguments(parser, required: bool) -> None:
    parser.add_argument("--spark-ui", required=required, metavar="URL",
                        help="Spark UI of a running Structured Streaming application (its driver, e.g. http://HOST:4040, "
                        "or a History Server)" + ("" if required else ": a plan-only job whose topology is discovered"))
    parser.add_argument("--app-id", help="with --spark-ui: the application (default: the only one the UI shows)")
    parser.add_argument("--query", help="with --spark-ui: the streaming query, by name or id (default: the only one)")
    parser.add_argument("--last-batches", type=flag(TaskCount), default=10, metavar="N",
                        help="with --spark-ui: rates over the last N completed micro-batches (default 10)")
    parser.add_argument("--timeout-s", type=flag(PositiveSeconds), default=DEFAULT_TIMEOUT_S,
                        help=f"with --spark-ui: timeout of each HTTP request in seconds (default {DEFAULT_TIMEOUT_S:g})")


def discover_from_args(args: argparse.Namespace, name: str | None = None):
    """The discovery the options describe (the recording saved even when it fails midway)."""
    from spark_jobs.discovery.measured_topology import discover
    from spark_jobs.discovery.rest_client import SparkRestApi

    api = SparkRestApi(args.spark_ui, timeout_s=args.timeout_s)
    try:
        return discover(api, args.app_id, args.query, args.last_batches, name=name)
    finally:
        if getattr(args, "save_responses", None):
            api.save(args.save_responses)


def discovered_registration(args: argparse.Namespace):
    """``ftops job register --spark-ui``: the plan-only job, its discovered topology and its rates profile."""
    from ft_core.store.history import JobSpec

    found = discover_from_args(args, name=args.name)
    tasks = len(found.topology["tasks"])
    if not 0 <= args.budget <= tasks:
        raise InputError(f"--budget: must be between 0 and the {tasks} tasks of the discovered job, got {args.budget}")
    spec = JobSpec(name=args.name, workload=DISCOVERED_WORKLOAD, replication_budget=args.budget,
                   max_recovery_s=args.max_recovery_s, apply_mode="recommend")  # plan-only: nothing to act on
    return spec, found.topology, found.profile(args.app_id, args.query)


def _profile_topology(args: argparse.Namespace) -> int:
    import json

    if args.hosts is not None and not args.hosts.parent.is_dir():
        raise InputError(f"--hosts: folder {str(args.hosts.parent)!r} does not exist")
    found = discover_from_args(args, name=args.name)
    if args.hosts is not None:
        args.hosts.write_text(json.dumps(found.hosts, indent=2) + "\n")
    if args.json:
        print_json(found.topology)
        return 0
    tasks = found.topology["tasks"]
    print(f"{found.topology['name']}: {len(found.operators)} operators, {len(tasks)} tasks; rates over {found.source()}")
    print_table(["operator", "tasks", "input model", "inputs", "records/s", "stages (last)", "plan nodes"],
                [(op.name, op.parallelism, op.input_model, ", ".join(f"{u} ({p})" for u, p in op.inputs) or "-",
                  f"{sum(tasks[f'{op.name}[{k}]']['rate'] for k in range(op.parallelism)):.1f}",
                  op.stage_ids[-1] if op.stage_ids else "-", " ".join(op.plan_nodes)) for op in found.operators])
    by_host: dict[str, int] = {}
    for host in found.hosts.values():
        by_host[host] = by_host.get(host, 0) + 1
    print("hosts: " + (", ".join(f"{h} ({n} tasks)" for h, n in sorted(by_host.items())) or "none reported"))
    return 0
