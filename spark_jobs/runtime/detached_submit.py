"""Submit a long-running streaming application so that it outlives the process that submitted it.

Problem: a Structured Streaming job runs for weeks; the Airflow task that (re)submits it must end in
seconds, must not submit it twice when retried, and must not take it down when the task is killed
(ecosystem notes, section 2.5: "don't run the stream as a long task"). PySpark applications on a
standalone master run in client mode only (cluster deploy mode is not supported for Python there), so
``spark-submit`` of the job itself would keep its driver inside the task for the job's lifetime.

Method (fire-and-forget submission, then probing): ``SparkSubmitOperator`` submits *this* script, a
short launcher. It

1. asks the master whether an application with the submission's unique name is already RUNNING or
   WAITING (a retry of a task whose first try had submitted): if so it does nothing;
2. otherwise starts the real job's ``spark-submit`` in a session of its own (``setsid``: an Airflow kill
   of the launcher does not reach it), recorded with its process group in the job's output folder (and
   the local cluster state, so ``ftops cluster down`` stops it);
3. polls the master until the application runs with at least one core granted (or its driver exits,
   which fails the launcher with the driver's last log lines), and exits 0; with ``--no-wait`` it exits
   once the driver is started and the caller waits (the Airflow DAGs do, in a deferred sensor).

Two kinds of submissions: ``stream`` (a workload's primary or replica, the arguments of ``ftops workload
run``) and ``units-stage`` (the applications of one stage of a staged recovery, :mod:`.recovery_units`).
The operator-side idempotency and the stop of a replaced application are in
``ftops_provider.operators.streams``.

    spark-submit --master spark://127.0.0.1:7077 spark_jobs/runtime/detached_submit.py stream --name ftops-topk-replica-p7 \\
        --master-ui http://127.0.0.1:8090 -- topk --role replica --plan plan.json --input ... --output ...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# Run as a script by spark-submit with the submitting environment's Python (PYSPARK_PYTHON), in which
# ftops is installed: its imports resolve there, never through a checkout.
from ft_core.errors import ExternalError, FtopsError, InputError

# Variables the launcher's own spark-submit sets for it; a child spark-submit must not inherit them.
_SUBMIT_ENV = ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_SUBMIT_OPTS", "PYSPARK_SUBMIT_ARGS",
               "SPARK_CONF_DIR", "SPARK_ENV_LOADED", "SPARK_SCALA_VERSION")


def clean_environment() -> None:
    for name in _SUBMIT_ENV:
        os.environ.pop(name, None)


def active_apps(master_ui: str, name: str) -> list[dict]:
    """Applications named ``name`` that the master lists as active (any state but finished)."""
    from spark_jobs.cluster.web_ui import master_state

    return [a for a in master_state(master_ui).get("activeapps", []) if a.get("name") == name]


def wait_running(master_ui: str, name: str, pgid: int, log: Path, timeout_s: float) -> dict:
    """Poll the master until the application runs with a core; fail early if its driver exits."""
    from spark_jobs.runtime.processes import pid_alive
    from spark_jobs.runtime.waiting import wait_for

    last = "not registered yet"

    def running() -> dict | None:
        nonlocal last
        seen = active_apps(master_ui, name)
        apps = [a for a in seen if a.get("state") == "RUNNING" and a.get("cores", 0) > 0]
        if apps:
            return apps[0]
        if not pid_alive(pgid):
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-8:]) if log.exists() else "(no log)"
            raise ExternalError(f"the driver of {name} exited before it ran; last lines of {log}:\n{tail}")
        last = f"{seen[0]['state']} with {seen[0].get('cores', 0)} cores" if seen else "not registered yet"
        return None

    return wait_for(running, timeout_s=timeout_s, interval_s=1.0,
                    what=lambda: f"{name} to run ({last}); it is left running, see {log}")


def submit_stream(name: str, master_ui: str, run_argv: list[str], timeout_s: float = 300.0, wait: bool = True,
                  extra_env: dict[str, str] | None = None) -> dict:
    """Start a workload run (``ftops workload run`` arguments) detached, unless it already runs, with ``extra_env``
    in its environment; with ``wait`` off, return once started (an Airflow DAG waits in a deferred sensor instead)."""
    from spark_jobs.runtime.launch import launch_run, run_args

    existing = active_apps(master_ui, name)
    if existing:
        return {"submitted": False, "app_id": existing[0]["id"], "name": name, "state": existing[0]["state"]}
    args = run_args([*run_argv, "--query-name", name])
    if args.master.startswith("local"):
        raise InputError("--master: a detached stream needs a standalone master (spark://...), got " + args.master)
    proc, log = launch_run(args, extra_env)
    app = wait_running(master_ui, name, proc.pid, log, timeout_s) if wait else {"id": None}
    return {"submitted": True, "app_id": app["id"], "name": name, "pgid": proc.pid, "log": str(log),
            "output": str(args.output)}


def submit_units_stage(root: Path, schedule_path: Path, stage: int, prefix: str, timeout_s: float = 300.0) -> dict:
    """Start the applications of one recovery stage (already-started ones are left alone)."""
    from spark_jobs.recovery_units.recovery import load_schedule, start_stage

    schedule = load_schedule(schedule_path, root)
    if not 0 <= stage < len(schedule.stages):
        raise InputError(f"--stage: the schedule has stages 0..{len(schedule.stages) - 1}, got {stage}")
    run = start_stage(root, schedule, stage, prefix=prefix, timeout_s=timeout_s, wait_capacity=False)
    return run.model_dump()


def main(argv: list[str] | None = None) -> int:
    clean_environment()
    parser = argparse.ArgumentParser(prog="detached_submit", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    stream = sub.add_parser("stream", help="a workload run (arguments of `ftops workload run` after --)")
    stream.add_argument("--name", required=True, help="unique application name (the idempotency key)")
    stream.add_argument("--master-ui", required=True, help="the master's web UI, e.g. http://127.0.0.1:8090")
    stream.add_argument("--timeout-s", type=float, default=300.0)
    stream.add_argument("--no-wait", action="store_true", help="return once the driver is started")
    stream.add_argument("run", nargs=argparse.REMAINDER)
    stage = sub.add_parser("units-stage", help="the applications of one stage of a staged recovery")
    stage.add_argument("--dir", type=Path, required=True)
    stage.add_argument("--schedule", type=Path, required=True)
    stage.add_argument("--stage", type=int, required=True)
    stage.add_argument("--prefix", default="recovery")
    stage.add_argument("--timeout-s", type=float, default=300.0)
    args = parser.parse_args(argv)
    try:
        if args.kind == "stream":
            run = args.run[1:] if args.run[:1] == ["--"] else args.run
            result = submit_stream(args.name, args.master_ui, run, args.timeout_s, wait=not args.no_wait)
        else:
            result = submit_units_stage(args.dir, args.schedule, args.stage, args.prefix, args.timeout_s)
    except FtopsError as exc:
        print(f"detached_submit: {exc.label}: {exc}", file=sys.stderr)
        return exc.exit_code
    print(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
