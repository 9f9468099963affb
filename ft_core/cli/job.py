"""``ftops job register``: register a streaming job and its topology in the history store."""

from __future__ import annotations

import argparse
from pathlib import Path

from ft_core.store.connection import connect
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from ft_core.store.url import DEFAULT_EMBEDDED_DIR, database_url
from ft_core.topology.document import load_topology


def register(sub, groups) -> None:
    job = sub.add_parser("job", help="streaming jobs known to the history store")
    jsub = job.add_subparsers(dest="job_command", required=True, parser_class=type(job))
    reg = jsub.add_parser("register", help="register (or update) a job and store its topology version")
    reg.add_argument("--name", required=True)
    reg.add_argument("--workload", required=True)
    reg.add_argument("--topology", required=True, help="topology document (.json, .yaml)")
    reg.add_argument("--budget", type=int, required=True, help="replication budget R")
    reg.add_argument("--primary-master", default=None)
    reg.add_argument("--standby-master", default=None)
    reg.add_argument("--max-recovery-s", type=float, default=None)
    reg.add_argument("--state-dir", type=Path, default=DEFAULT_EMBEDDED_DIR, help="embedded server folder")
    reg.set_defaults(func=_register)


def _register(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ft_core.errors import InputError

    topology = load_topology(args.topology)
    try:
        spec = JobSpec(name=args.name, workload=args.workload, replication_budget=args.budget,
                       primary_master=args.primary_master, standby_master=args.standby_master,
                       max_recovery_s=args.max_recovery_s)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"job field {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    conn = connect(database_url(args.state_dir))
    try:
        upgrade(conn)
        store = HistoryStore(conn)
        job_id = store.register_job(spec)
        topology_id = store.save_topology(spec.name, topology.to_document())
    finally:
        conn.close()
    print(f"job {spec.name} registered (id {job_id}), topology version id {topology_id}")
    return 0
