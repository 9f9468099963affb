"""``ftops halt``, ``ftops resume`` and ``ftops doctor [--repair]``: a person's hands on the safety net (issue 35).

- ``ftops halt --reason TEXT``: no new experiment starts anywhere (drills are refused, and no fault is journaled,
  hence none injected); the running ones abort at their next poll (their own finish undoes their faults); and
  every fault still open in the fleet is undone now. The command waits (``--wait-s``) until no drill holds a job,
  then says what it undid and what still runs. In force until ``ftops resume``.
- ``ftops doctor``: what needs a person: faults whose holder died (orphaned), open faults past their undo-by
  time, a halt in force, job names stored before the name rule; ``--repair`` undoes the orphaned faults (the
  safety net's repair) and exits 0 when nothing is left to repair. Exit 1 when something needs attention.

    ftops halt --reason "storage incident: no experiments today"
    ftops doctor --repair --json
"""

from __future__ import annotations

import argparse
import os
import socket
import time

from ft_core.cli.db import add_db_dir_argument
from ft_core.cli.output import print_json, print_table
from ft_core.input.quantities import Seconds, flag


HALT = ("No new experiment starts anywhere (new drills are refused and no fault is journaled, hence none injected); "
        "running drills abort at their next wait (their finish undoes their faults); every fault still open in the "
        "fleet is undone now. Waits --wait-s for running drills to stop. In force until `ftops resume`. Exit 0 when "
        "everything was undone and no drill runs any more, 1 otherwise.")
DOCTOR = ("What needs a person: faults whose holder died (orphaned), open faults past their undo-by time, a halt in "
          "force, job names stored before the name rule. --repair undoes the orphaned faults first (what the safety "
          "net does). Exit 0 when nothing needs attention, 1 otherwise.")


def register(sub, groups) -> None:
    halt = sub.add_parser("halt", help="stop every experiment in the fleet, undo their faults, refuse new ones until "
                          "`ftops resume`", description=HALT)
    halt.add_argument("--reason", required=True, help="why (shown to whoever is refused, and by `ftops doctor`)")
    halt.add_argument("--wait-s", type=flag(Seconds), default=120.0,
                      help="wait this long for running drills to stop (default 120; 0: do not wait)")
    add_db_dir_argument(halt)
    halt.add_argument("--json", action="store_true")
    halt.set_defaults(func=_halt)

    resume = sub.add_parser("resume", help="end a halt: experiments may start again")
    add_db_dir_argument(resume)
    resume.add_argument("--json", action="store_true")
    resume.set_defaults(func=_resume)

    doctor = sub.add_parser("doctor", help="what needs a person: orphaned faults, overdue faults, a halt, bad names; "
                            "--repair undoes the orphaned faults", description=DOCTOR)
    doctor.add_argument("--repair", action="store_true", help="undo the faults whose holder died (as the safety net does)")
    add_db_dir_argument(doctor)
    doctor.add_argument("--json", action="store_true")
    doctor.set_defaults(func=_doctor)


def _who() -> str:
    return f"{os.environ.get('USER') or 'someone'} (ftops on {socket.gethostname()}, pid {os.getpid()})"


def _store(args):
    from ft_core.store.history import open_history_store

    return open_history_store(args.db_dir)


def _halt(args: argparse.Namespace) -> int:
    from spark_jobs.drills.reconcile import driver_env, reconcile

    store = _store(args)
    try:
        halt = store.halt(args.reason, _who())
        repairs = reconcile(store, by=f"halt by {_who()}", driver_env=driver_env(args.db_dir), force=True)
        deadline = time.time() + args.wait_s
        while _drilling(store) and time.time() < deadline:
            time.sleep(2.0)
        still = _drilling(store)
    finally:
        store.conn.close()
    doc = {"halted_at": str(halt["halted_at"]), "reason": halt["reason"], "halted_by": halt["halted_by"],
           "undone": [r.model_dump() for r in repairs], "still_drilling": still}
    if args.json:
        print_json(doc)
    else:
        print(f"halted ({halt['reason']}); {len(repairs)} repairs, {len(still)} drills still running"
              + (f": {', '.join(still)}" if still else ""))
        _print_repairs(repairs)
    return 0 if not still and all(r.ok for r in repairs) else 1


def _drilling(store) -> list[str]:
    """Jobs whose lease a drill holds now."""
    return [job["name"] for job in store.jobs() if (lease := store.lease(job["name"])) and lease["kind"] == "drill"]


def _resume(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        ended = store.resume(_who())
    finally:
        store.conn.close()
    if args.json:
        print_json({"resumed": ended is not None, "halt": None if ended is None else {**ended, "halted_at": str(ended["halted_at"])}})
    else:
        print("no halt was in force" if ended is None else f"resumed: the halt of {ended['halted_by']} ({ended['reason']}) ended")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from spark_jobs.drills.reconcile import driver_env, make_whole, orphaned_primaries, reconcile

    store = _store(args)
    try:
        repairs = []
        if args.repair:
            by, env = f"ftops doctor --repair by {_who()}", driver_env(args.db_dir)
            repairs = reconcile(store, by=by, driver_env=env)
            for job in orphaned_primaries(store):  # no fault of the job is open: its master forgot its primary
                repairs += make_whole(store, job, by, env)
        findings = diagnose(store)
    finally:
        store.conn.close()
    if args.json:
        print_json({"findings": findings, "repairs": [r.model_dump() for r in repairs]})
    else:
        _print_repairs(repairs)
        if findings:
            print_table(["what", "job", "detail"], [[f["what"], f.get("job") or "-", f["detail"]] for f in findings])
        else:
            print("nothing needs attention")
    return 1 if findings or not all(r.ok for r in repairs) else 0


def diagnose(store) -> list[dict]:
    """What needs a person, as rows ``{"what", "job", "detail"}``."""
    from datetime import datetime, timezone

    from ft_core.input.names import RULE, is_name

    now = datetime.now(timezone.utc)
    out = [{"what": "orphaned fault", "job": f["job"], "detail": f"#{f['fault_id']} {f['kind']} {f['target']}, left by "
            f"{f['holder']} (`ftops doctor --repair` undoes it)"} for f in store.orphaned_faults()]
    out += [{"what": "overdue fault", "job": f["job"], "detail": f"#{f['fault_id']} {f['kind']} {f['target']} should have "
             f"been undone by {f['undo_by']:%Y-%m-%d %H:%M:%S %Z} ({f['holder']} still holds the job)"}
            for f in store.open_faults() if f["undo_by"] < now and f["fault_id"] not in {o["fault_id"] for o in store.orphaned_faults()}]
    halt = store.halted()
    if halt is not None:
        out.append({"what": "halted", "job": None, "detail": f"since {halt['halted_at']:%Y-%m-%d %H:%M:%S %Z} by "
                    f"{halt['halted_by']}: {halt['reason']} (`ftops resume` ends it)"})
    from spark_jobs.drills.reconcile import orphaned_primaries
    from spark_jobs.fleet_recovery.runs import dead_runs

    out += [{"what": "dead fleet recovery", "job": ", ".join(r["jobs"]), "detail": f"#{r['run_id']} (DAG run "
             f"{r['dag_run_id']}) is recorded running but holds none of its jobs: its run died (`ftops doctor --repair` "
             "records it failed, after undoing what it held down)"} for r in dead_runs(store)]

    out += [{"what": "orphaned primary", "job": job, "detail": "its driver runs but its master no longer lists it (a "
             "master restarted without recovery): `ftops doctor --repair` submits it again from its checkpoint"}
            for job in orphaned_primaries(store)]
    out += [{"what": "bad name", "job": None, "detail": f"job {j['name'][:80]!r} is not an identifier ({RULE}); register "
             "it again under a valid name"} for j in store.jobs() if not is_name(j["name"])]
    return out


def _print_repairs(repairs) -> None:
    if repairs:
        print_table(["job", "undone", "left by", "outcome"],
                    [[r.job, f"{r.kind} {r.target}", r.holder or "-", r.outcome if r.ok else f"FAILED: {r.outcome}"]
                     for r in repairs])
