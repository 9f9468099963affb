"""``ftops checkpoint audit PATH``: did every micro-batch of a Structured Streaming query commit exactly once and in
order? Read from the query's checkpoint folder (the ``checkpointLocation`` it was started with), so any job can
be judged, ftops's or not (issue 34); the logic lives in :mod:`spark_jobs.attach.checkpoint_audit`. Registered
through the ``ftops.commands`` entry point ``checkpoint = "spark_jobs.cli.checkpoint"``.

    ftops checkpoint audit /data/jobs/orders/checkpoint
    ftops checkpoint audit /data/jobs/orders/checkpoint --since-batch 41 --restarted-at 1795872262.5 --json

Exit 0 when every check holds, 1 when one does not (the table names the offending batches), 2 when PATH is not
a checkpoint or an entry cannot be read. ``--json`` prints the :class:`CheckpointAudit` document.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ft_core.cli.output import print_json, print_table
from ft_core.input.quantities import NonNegative, comma_list, flag
from spark_jobs.attach.checkpoint_audit import BatchId

if TYPE_CHECKING:
    from spark_jobs.attach.checkpoint_audit import CheckpointAudit


def register(sub, groups) -> None:
    group = sub.add_parser("checkpoint", help="read a streaming query's checkpoint folder",
                           description="Read a Structured Streaming query's checkpoint folder.")
    commands = group.add_subparsers(dest="checkpoint_command", required=True, parser_class=type(group))
    audit = commands.add_parser(
        "audit", help="whether every micro-batch committed exactly once and in order (exit 1 when not)",
        description="Whether every micro-batch of the query committed exactly once and in order: the offsets and "
                    "commits logs without gaps, no batch written twice, each source's offsets contiguous and never "
                    "back, nothing skipped where the checkpoint can show it; with figures for a drill report.")
    audit.add_argument("path", help="the checkpoint folder (the query's checkpointLocation)")
    audit.add_argument("--since-batch", type=flag(BatchId), help="audit only the batches after this id (a drill: the "
                       "last batch committed before its fault); default: from the oldest batch Spark retains")
    audit.add_argument("--restarted-at", type=comma_list(NonNegative), default=[], metavar="EPOCH_S[,...]",
                       help="when the query was started again from this checkpoint (epoch s): batches planned before "
                            "and committed after are counted as re-run (not visible otherwise)")
    audit.add_argument("--json", action="store_true", help="print the audit as JSON")
    audit.set_defaults(func=_audit)


def _audit(args: argparse.Namespace) -> int:
    from spark_jobs.attach.checkpoint_audit import audit_checkpoint

    audit = audit_checkpoint(args.path, since_batch=args.since_batch, restarted_at=args.restarted_at)
    if args.json:
        print_json(audit)
    else:
        _print_human(audit)
    return 0 if audit.held else 1


def _print_human(audit: CheckpointAudit) -> None:
    span = ("no batch" if audit.first_batch is None else f"batches {audit.first_batch}-{audit.last_batch}: "
            f"{audit.batches_audited} audited, {audit.committed_batches} committed"
            + (f", batch {audit.in_flight_batch} in flight" if audit.in_flight_batch is not None else ""))
    verdict = ("held: every micro-batch committed exactly once and in order" if audit.held else
               f"NOT held: {len(audit.failed())} of {len(audit.checks)} checks failed")
    print(f"{audit.checkpoint}: {verdict} ({span})")
    print_table(["check", "held", "offending batches", "observed"],
                [[c.name, "yes" if c.held else "NO", c.offending_batches or "", c.observed] for c in audit.checks])
    figures = [f"records {_figure(audit.records)}", *([f"files {audit.files}"] if audit.files is not None else []),
               f"batches without new input {audit.batches_without_new_input}"]
    print("committed batches read: " + ", ".join(figures))
    if audit.rerun_batches is None:
        print(f"re-run batches: {audit.rerun_evidence}")
    else:
        print(f"re-run batches: {', '.join(map(str, audit.rerun_batches)) or 'none'} (records reprocessed "
              f"{_figure(audit.records_reprocessed)}; {audit.rerun_evidence})")


def _figure(value: int | None) -> str:
    return "not in the offsets" if value is None else str(value)
