"""``ftops job register``: register a streaming job and its topology in the history store."""

from __future__ import annotations

import argparse
from pathlib import Path

from ft_core.cli.output import print_json
from ft_core.input.quantities import PositiveSeconds, TaskBudget, flag
from ft_core.input.validation import validate
from ft_core.store.connection import connect
from ft_core.store.url import DEFAULT_EMBEDDED_DIR, database_url
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from ft_core.topology.document import load_topology


def register(sub, groups) -> None:
    job = sub.add_parser("job", help="streaming jobs known to the history store")
    jsub = job.add_subparsers(dest="job_command", required=True, parser_class=type(job))
    reg = jsub.add_parser("register", help="register (or update) a job and store its topology version")
    reg.add_argument("--name", required=True)
    reg.add_argument("--workload", required=True)
    reg.add_argument("--topology", required=True, help="topology document (.json, .yaml)")
    reg.add_argument("--budget", type=flag(TaskBudget), required=True, help="replication budget R")
    reg.add_argument("--primary-master", default=None)
    reg.add_argument("--standby-master", default=None)
    reg.add_argument("--max-recovery-s", type=flag(PositiveSeconds), default=None)
    reg.add_argument("--state-dir", type=Path, default=DEFAULT_EMBEDDED_DIR, help="embedded server folder")
    reg.add_argument("--json", action="store_true", help="print the ids as JSON")
    reg.set_defaults(func=_register)


def _register(args: argparse.Namespace) -> int:
    topology = load_topology(args.topology)
    spec = validate(JobSpec, dict(name=args.name, workload=args.workload, replication_budget=args.budget,
                                  primary_master=args.primary_master, standby_master=args.standby_master,
                                  max_recovery_s=args.max_recovery_s), "job")
    conn = connect(database_url(args.state_dir))
    try:
        upgrade(conn)
        store = HistoryStore(conn)
        job_id = store.register_job(spec)
        topology_id = store.save_topology(spec.name, topology.to_document())
    finally:
        conn.close()
    if args.json:
        print_json({"job": spec.name, "job_id": job_id, "topology_id": topology_id})
    else:
        print(f"job {spec.name} registered (id {job_id}), topology version id {topology_id}")
    return 0
