"""``ftops job set NAME ...`` and ``ftops job fleet``: per-job policy and the fleet's (issue 33).

A job's policy says what the scheduled runs of the DAGs do to it: ``--drill-schedule`` (``ftops_chaos_drill`` drills
it when the schedule fired since its last drill), ``--tuning-schedule`` (``ftops_checkpoint_tuning`` tunes its
checkpoint interval likewise), ``--priority`` (its weight in fleet-wide staged recovery) and ``--apply`` (auto,
approve, recommend). A schedule is a 5-field cron expression read in UTC, one of @hourly @daily @weekly @monthly, or
none. ``ftops job register`` takes the same flags. No job has a schedule until it is given one. Every change is
kept in the history store with who made it (the user and the command) and when.

``ftops job fleet [--max-drills N]`` shows (and sets) the fleet's limit on drills at once, the failure domains
drills hold now, and the jobs due now.
"""

from __future__ import annotations

import argparse
from typing import Annotated

from pydantic import Field

from ft_core.cli.db import add_db_dir_argument
from ft_core.errors import InputError
from ft_core.input.names import name_flag
from ft_core.input.quantities import Priority, flag

MaxDrills = Annotated[int, Field(ge=1, le=1000)]  # drills holding failure domains at once, fleet-wide


def _schedule(text: str) -> str:
    """argparse ``type=`` of a schedule flag: the schedule as stored, ``none`` kept as the word."""
    from ft_core.fleet.schedules import schedule_flag

    return schedule_flag(text) or "none"


def add_policy_arguments(parser: argparse.ArgumentParser, apply: bool = True) -> None:
    """The policy flags (``apply``: also ``--apply``, which ``ftops job register`` declares itself)."""
    parser.add_argument("--drill-schedule", type=_schedule, metavar="CRON|@PRESET|none",
                        help="when scheduled runs of ftops_chaos_drill drill the job: a 5-field cron expression in UTC, "
                             "@hourly, @daily, @weekly, @monthly, or none (the default: drilled only by hand)")
    parser.add_argument("--tuning-schedule", type=_schedule, metavar="CRON|@PRESET|none",
                        help="when scheduled runs of ftops_checkpoint_tuning tune its checkpoint interval (same forms; "
                             "default none)")
    parser.add_argument("--priority", type=flag(Priority), metavar="P",
                        help="the job's weight when fleet-wide staged recovery orders jobs (> 0, default 1)")
    if apply:
        parser.add_argument("--apply", choices=("auto", "approve", "recommend"),
                            help="how new plans and drills are applied: at once, after a person approves them in "
                                 "Airflow, or never (plans are only stored)")


def policy_changes(args: argparse.Namespace, with_apply: bool = True) -> dict:
    """The policy fields the command line gives (store field names)."""
    changes = {}
    if args.drill_schedule is not None:
        changes["drill_schedule"] = args.drill_schedule
    if args.tuning_schedule is not None:
        changes["tuning_schedule"] = args.tuning_schedule
    if args.priority is not None:
        changes["priority"] = args.priority
    if with_apply and getattr(args, "apply", None) is not None:
        changes["apply_mode"] = args.apply
    return changes


def who(command: str) -> str:
    """Who changes a policy from the command line: the user, the command, its pid and host."""
    import getpass

    from spark_jobs.cli.job_lease import command_holder

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        user = "unknown user"
    return f"{user} via {command_holder(command)}"


def register_commands(jsub) -> None:
    """``ftops job set`` and ``ftops job fleet`` under ``ftops job``."""
    set_ = jsub.add_parser("set", help="change a job's policy: drill and tuning schedules, priority, apply mode",
                           description=__doc__.split("\n\n")[1])
    set_.add_argument("name", type=name_flag("job name"), help="a registered job")
    add_policy_arguments(set_)
    add_db_dir_argument(set_)
    set_.add_argument("--json", action="store_true")
    set_.set_defaults(func=_set)

    fleet = jsub.add_parser("fleet", help="the fleet: the limit on drills at once, the domains drills hold, the jobs due now")
    fleet.add_argument("--max-drills", type=flag(MaxDrills), metavar="N",
                       help="set how many drills may hold failure domains at once, fleet-wide (1-1000; default 2)")
    add_db_dir_argument(fleet)
    fleet.add_argument("--json", action="store_true")
    fleet.set_defaults(func=_fleet)


def _store(args):
    from ft_core.store.history import open_history_store

    return open_history_store(args.db_dir)


def _set(args: argparse.Namespace) -> int:
    from ft_core.cli.output import print_json, print_table

    changes = policy_changes(args)
    if not changes:
        raise InputError("--drill-schedule: nothing to set: give --drill-schedule, --tuning-schedule, --priority or --apply",
                         field="--drill-schedule")
    store = _store(args)
    try:
        store.set_policy(args.name, changes, who("ftops job set"))
        policy = store.policy(args.name)
        change = store.policy_changes(args.name, limit=1)
    finally:
        store.conn.close()
    doc = {"job": args.name, "policy": policy,
           "last_change": {**change[0], "changed_at": change[0]["changed_at"].isoformat()} if change else None}
    if args.json:
        print_json(doc)
        return 0
    print_table(["job", "drill schedule", "tuning schedule", "priority", "apply"],
                [[args.name, policy["drill_schedule"], policy["tuning_schedule"], policy["priority"], policy["apply"]]])
    return 0


def jobs_by_state(rows: list[dict], now) -> dict[str, list[str]]:
    """The jobs in each state (ft_core.fleet.job_state), as the console's jobs page counts them."""
    from ft_core.fleet.job_state import STATES, states_of

    found: dict[str, list[str]] = {s: [] for s in STATES}
    for job, state in states_of(rows, now).items():
        found[state].append(job)
    return found


def _states_line(states: dict[str, list[str]], named: int = 10) -> str:
    """``N jobs: 2 running, 1 down (gauges), ...``: the jobs that need a look named, up to ``named`` per state."""
    parts = []
    for state, jobs in states.items():
        if not jobs:
            continue
        names = "" if state in ("running", "no progress") else (
            f" ({', '.join(jobs[:named])}{f', +{len(jobs) - named} more' if len(jobs) > named else ''})")
        parts.append(f"{len(jobs)} {state}{names}")
    return f"{sum(len(j) for j in states.values())} jobs: {', '.join(parts) or 'none registered'}"


def _fleet(args: argparse.Namespace) -> int:
    from datetime import datetime, timezone

    from ft_core.cli.output import print_json, print_table
    from ft_core.fleet.schedules import Scheduled, due

    store = _store(args)
    try:
        if args.max_drills is not None:
            store.set_fleet_policy(args.max_drills, who("ftops job fleet"))
        policy = store.fleet_policy()
        locks = store.domain_locks()
        now = datetime.now(timezone.utc)
        due_now = {op: [r.job for r in due([Scheduled(**row) for row in store.scheduled(op)], now)]
                   for op in ("drill", "tuning")}
        refused = store.refusals()
        states = jobs_by_state(store.fleet_states(), now)
    finally:
        store.conn.close()
    drills: dict[str, dict] = {}
    for lock in locks:
        entry = drills.setdefault(lock["job"], {"job": lock["job"], "holder": lock["holder"], "domains": [],
                                                "since": lock["acquired_at"].isoformat()})
        entry["domains"].append(lock["domain"])
    doc = {"max_drills": policy["max_drills"], "drills": list(drills.values()), "due": due_now, "refused": refused,
           "states": states}
    if args.json:
        print_json(doc)
        return 0
    print(_states_line(states))
    print(f"at most {doc['max_drills']} drill(s) at once; {len(doc['drills'])} running")
    if doc["drills"]:
        print_table(["job", "holder", "failure domains", "since"],
                    [[d["job"], d["holder"], ", ".join(d["domains"]), d["since"][:19]] for d in doc["drills"]])
    for op, jobs in due_now.items():
        print(f"due for a {op}: {', '.join(jobs) or 'none'}")
    skipped = [[job, op, r["at"][:19], r["reason"]] for job, ops in refused.items() for op, r in ops.items()]
    if skipped:
        print("skipped by a scheduled run since they last ran (they stay due):")
        print_table(["job", "operation", "at", "why"], skipped)
    return 0
