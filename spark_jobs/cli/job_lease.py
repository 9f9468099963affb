"""``--job NAME``: a command that acts on a registered job holds the job's lease while it acts (issue 16).

Why: one experiment per job at a time. The DAGs and ``ftops drill job`` take the job's lease in the history
store; a command run by hand beside them (a staged recovery, a fault injection) must take it too, or it
would inject a fault into a job a drill is measuring. With ``--job NAME`` the command takes the lease of
that kind before it starts (refused, naming the holder, when another experiment holds it), renews it while
it works, and releases it on every exit path; a killed command's lease expires after ``--lease-ttl-s``.
Without ``--job`` the command acts on what it was pointed at and takes no lease (a deployment or an
application ftops does not know as a job).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys

from ft_core.cli.db import add_db_dir_argument
from ft_core.input.names import name_flag
from ft_core.input.quantities import PositiveSeconds, flag


def add_lease_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", metavar="NAME", type=name_flag("job name"),
                        help="the registered job this acts on: its lease is held meanwhile, and the command is refused "
                             "while another experiment holds it")
    add_lease_ttl_argument(parser, "with --job: ")
    add_db_dir_argument(parser, "with --job: ")


def add_lease_ttl_argument(parser: argparse.ArgumentParser, when: str = "") -> None:
    """``--lease-ttl-s``: how long a lease outlives a command that died holding it."""
    parser.add_argument("--lease-ttl-s", type=flag(PositiveSeconds), default=120.0,
                        help=f"{when}the lease expires this long after this command dies without releasing it (default 120)")


def held_lease(args: argparse.Namespace, kind: str):
    """A context holding ``args.job``'s lease of ``kind`` (nothing without ``--job``); BusyError names the holder."""
    if not args.job:
        return contextlib.nullcontext()
    from ft_core.store.history import open_history_store
    from ft_core.store.leases import LeaseKeeper

    command = " ".join(["ftops", *sys.argv[1:3]]) if len(sys.argv) > 1 else "ftops"
    return LeaseKeeper(lambda: open_history_store(args.db_dir), args.job, kind, command_holder(command), ttl_s=args.lease_ttl_s)


def command_holder(command: str) -> str:
    """How a lease names a command holding it: the command, its pid and host (whoever is refused can find it)."""
    return f"command {command} (pid {os.getpid()} on {socket.gethostname()})"
