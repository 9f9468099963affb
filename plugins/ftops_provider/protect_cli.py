"""``ftops job protect``: from a pipeline to a protected job in one command (issue 37, item 2).

A new user's job used to need five commands and a person at hand: ``job register``, ``job start``, a triggered
``ftops_profile_and_plan`` to plan it and start its replica (paused DAGs, an approval waiting in Airflow), then a
drill. ``job protect`` takes ``job register``'s flags and:

1. registers the job (a runnable job: a pipeline with ``--input`` and ``--master``);
2. on the local stack (its Airflow runs, on the stack's history store), before anything slow: when the standby has
   no free core for the job's replica (after ``make demo`` the sample's replica holds the stack's only one), adds
   a standby worker to the stack's cluster, or with ``--no-add-worker`` stops there naming who holds the cores;
3. submits its primary unless it runs, and waits for its first committed micro-batch (the rates the plan needs);
4. on the local stack: unless ``--apply`` or ``--test-job`` says otherwise, sets the job's apply mode to ``auto``
   (a sandbox applies at once), runs ``ftops_profile_and_plan`` for the job (profile, plan, replica) and reports the
   plan and whether its replica runs, or why not (the run's error); with ``--drill``, runs a first
   ``ftops_chaos_drill`` of the job and reports its verdict, or why no drill ran;
5. anywhere else, it says what waits for whom: ``ftops_profile_and_plan``'s next run plans the job and, per its
   apply mode, starts its replica (``auto``), asks a person in Airflow's Required actions (``approve``, the
   default) or only stores the plan (``recommend``).

The planning and the replica go through the same DAG as every other job (one way to apply a plan); this
command only registers, starts and triggers.
"""

from __future__ import annotations

import argparse
import os
import time

from ft_core.cli.output import print_json
from ft_core.errors import ExternalError, InputError
from ft_core.input.quantities import PositiveSeconds, Port, flag

NEXT_ELSEWHERE = {
    "auto": "ftops_profile_and_plan's next run (hourly) profiles it, plans its replica and starts it",
    "approve": "ftops_profile_and_plan's next run (hourly) profiles it and plans its replica; the replica starts once a "
               "person approves it in Airflow (Browse -> Required actions)",
    "recommend": "ftops_profile_and_plan's next run (hourly) profiles it and stores its plans; nothing is applied "
                 "(apply mode recommend: `ftops job set NAME --apply approve` or `auto` to change it)",
}


STEADY_BEFORE_DRILL_S = 900.0  # a replica just started reads its backlog first (minutes on a loaded machine)
NO_CHANGE = ("the run applied no replica change for the job: its replica_changes task's log says why (the job busy "
             "with another experiment, apply mode recommend, or its primary not running)")


def add_protect_command(sub) -> None:
    """``ftops job protect`` beside the other ``job`` commands (spark_jobs.cli.job creates the group)."""
    from ft_core.cli.registry import group_commands
    from spark_jobs.cli.job import add_registration_arguments

    protect = group_commands(sub, "job").add_parser(
        "protect", help="register a runnable job, start its primary, plan it and start its replica (on the local "
                        "stack; elsewhere say what waits for whom); --drill: then a first drill",
        description="\n\n".join(__doc__.split("\n\n")[1:3]))
    add_registration_arguments(protect)
    protect.add_argument("--drill", action="store_true", help="then run a first drill of the job (ftops_chaos_drill, "
                                                              "local stack only)")
    protect.add_argument("--no-add-worker", action="store_true",
                         help="on the local stack, when the standby has no free core for the job's replica, stop and say "
                              "who holds them instead of adding a standby worker (the default adds one)")
    protect.add_argument("--first-batch-timeout-s", type=flag(PositiveSeconds), default=300.0,
                         help="how long to wait for the primary's first micro-batch (default 300)")
    protect.add_argument("--steady-timeout-s", type=flag(PositiveSeconds), default=STEADY_BEFORE_DRILL_S,
                         help="with --drill, how long to wait for the job (and its replica, which reads its backlog "
                              f"first) to keep up before the drill (default {STEADY_BEFORE_DRILL_S:.0f})")
    protect.add_argument("--airflow-port", type=flag(Port), default=8080,
                         help="the local stack's Airflow api-server port (default 8080)")
    protect.set_defaults(func=_protect)


def _protect(args: argparse.Namespace) -> int:
    from ftops_provider.local_stack import LocalStack

    if args.topology is not None or (args.pipeline is None and args.workload is None):
        raise InputError("--pipeline: job protect needs a runnable job (a pipeline with --input and --master); "
                         "`ftops job register --topology` registers a plan-only job")
    stack = LocalStack(airflow_port=args.airflow_port)
    airflow = stack.airflow if _on_local_stack(stack) else None
    if args.drill and airflow is None:
        raise InputError("--drill: a first drill runs through the local stack's Airflow (`ftops stack up`); elsewhere "
                         "trigger ftops_chaos_drill with the job, or run `ftops drill job NAME`")
    doc = protect(args, airflow, _say(args.json))
    if args.json:
        print_json(doc)
    return 0 if _protected(doc, args.drill) else 1


def protect(args: argparse.Namespace, airflow, say) -> dict:
    """Register, start, wait for the first micro-batch; then, with ``airflow`` (the Airflow running ftops's DAGs on
    this history store: :class:`~ftops_provider.local_airflow.LocalAirflow`), plan and start the replica through
    ``ftops_profile_and_plan`` (and drill with ``args.drill``); without, say what waits for whom."""
    from spark_jobs.cli.job import register_job, start_job

    if airflow is not None and args.apply is None and not args.test_job:
        args.apply = "auto"  # a sandbox: plans and drills apply at once
        say("the local stack: apply mode auto (plans and drills apply at once; --apply approve asks a person first)")
    registered = register_job(args)
    say(f"1/4 registered {registered['job']} (id {registered['job_id']}, {registered['tasks']} tasks"
        + (f"; budget auto: {registered['budget']}, the smallest whose plan keeps OF >= "
           f"{registered['budget_choice']['target_accuracy']:g}" if registered.get("budget_choice") else "") + ")")
    dep = _deployment(args.name, args.db_dir)
    added = None
    no_room = _standby_room(dep, args.name) if airflow is not None and args.budget != 0 else None
    if no_room is not None and dep.cluster_state and not args.no_add_worker:  # the stack's own cluster: a sandbox
        added = _add_standby_worker(dep)
        say(f"{no_room.split(';')[0]}: added standby worker {added} ({dep.replica_cores} core"
            f"{'s' * (dep.replica_cores != 1)}) for its replica; `ftops cluster status` lists it")
    elif no_room is not None:  # before any slow work: the replica would wait for cores nobody frees
        say(f"not started: {no_room}")
        return {"job": args.name, "registered": registered, "local_stack": True, "standby": no_room}
    started = start_job(args.name, args.db_dir)
    say(f"2/4 primary {'submitted' if started['submitted'] else 'already running'}"
        + (f" ({started['app_id']})" if started.get("app_id") else ""))
    first_batch_s = _first_batch(args.name, dep, args.first_batch_timeout_s)
    say(f"3/4 first micro-batch committed after {first_batch_s:.0f} s")
    doc = {"job": args.name, "registered": registered, "primary": started, "first_batch_s": round(first_batch_s, 1),
           "local_stack": airflow is not None, "apply_mode": _apply_mode(args.name, args.db_dir),
           **({"standby_worker_added": added} if added else {})}
    if airflow is None:
        doc["next"] = NEXT_ELSEWHERE[doc["apply_mode"]]
        say(f"4/4 no local stack: {doc['next']}")
        return doc
    doc.update(_plan_and_replica(airflow, dep.standby_ui, args.name, args.db_dir, say))
    _budget_hint(doc.get("plan"), args.budget, say)
    if args.drill:
        doc["drill"] = _first_drill(airflow, args.name, args.db_dir, say, dep, args.steady_timeout_s)
    return doc


def _protected(doc: dict, drilled: bool) -> bool:
    if not doc["local_stack"]:
        return True  # what follows is the DAG's, and said
    if "standby" in doc:
        return False  # refused before starting: no standby cores for the replica
    replica_runs = (doc.get("replica") or {}).get("state") == "RUNNING" or (doc.get("plan") or {}).get("tasks") == []
    return doc["plan_run"] == "success" and replica_runs and (not drilled or doc["drill"]["status"] == "passed")


def _say(quiet: bool):
    """Progress lines, each with the time since the command started (protect takes 10-25 minutes with a drill)."""
    import sys

    started = time.monotonic()

    def say(message: str) -> None:
        minutes, seconds = divmod(int(time.monotonic() - started), 60)
        print(f"[{minutes:2d}:{seconds:02d}] {message}", file=sys.stdout, flush=True)

    return (lambda _m: None) if quiet else say


def _on_local_stack(stack) -> bool:
    """The local stack's Airflow runs and this command uses the stack's history store."""
    alive = stack.airflow.alive()
    if not alive or not all(alive.values()):
        return False
    url = os.environ.get("FTOPS_DATABASE_URL")
    return url is None or url == stack.postgres.url()


def _apply_mode(job: str, db_dir) -> str:
    from spark_jobs.cli.job import open_store

    store = open_store(db_dir)
    try:
        return store.policy(job)["apply"]
    finally:
        store.conn.close()


def _deployment(job: str, db_dir):
    from spark_jobs.cli.job import open_store, registered_deployment

    store = open_store(db_dir)
    try:
        return registered_deployment(store, job)
    finally:
        store.conn.close()


def _first_batch(job: str, dep, timeout_s: float) -> float:
    """Seconds until the primary's first micro-batch is committed (its metrics file has a batch)."""
    from spark_jobs.pipeline.metrics import read_metrics
    from spark_jobs.runtime.waiting import wait_for

    metrics, t0 = dep.primary_output / "_metrics" / "metrics.jsonl", time.time()
    try:
        wait_for(lambda: bool(read_metrics(metrics)) or None, timeout_s=timeout_s, interval_s=2,
                 what=f"the primary of {job} to commit its first micro-batch")
    except ExternalError as exc:
        raise ExternalError(f"{exc}: see `ftops job status {job}` and its driver log in "
                            f"{dep.primary_output / '_logs'}; the job stays registered and its primary running: a "
                            "first batch reading a long backlog of input takes longer (give more with "
                            "--first-batch-timeout-s), and `ftops job protect` again goes on from here") from None
    return time.time() - t0


def _budget_hint(plan: dict | None, budget, say) -> None:
    """A plan below the default target accuracy, from a budget the user chose: say how to choose one."""
    from ft_core.replication.budget_advice import DEFAULT_TARGET

    if plan and budget != "auto" and plan["output_fidelity"] < DEFAULT_TARGET:
        say(f"budget {budget} keeps OF {plan['output_fidelity']:.3f} under a worst-case correlated failure: "
            "`--budget auto --target-accuracy A` picks the smallest budget reaching A (`ftops plan budget` lists what "
            "each budget buys)")


def _standby_room(dep, job: str) -> str | None:
    """Why the job's replica could not get cores on its standby now, and what to do (None: it fits). The job's own
    replicas count as free (a new plan replaces them)."""
    from spark_jobs.cluster.master_room import room
    from spark_jobs.cluster.web_ui import master_state
    from spark_jobs.runtime.job_streams import app_job

    state = master_state(dep.standby_ui, timeout_s=10)
    free = room(state, also_free=tuple(a["name"] for a in state.get("activeapps", []) if app_job(a["name"]) == job))
    if free.fits(dep.replica_cores):
        return None
    return (free.why_not(dep.replica_cores, f"the replica of {job}", f"the standby ({dep.standby_ui})") +
            f"; {_free_them(free)}, then run `ftops job protect` again")


def _free_them(free) -> str:
    """What frees standby cores (a :class:`~spark_jobs.cluster.master_room.Room` that lacks them): stopping the jobs
    whose applications hold them, or another standby worker."""
    from spark_jobs.runtime.job_streams import app_job

    jobs = sorted({j for name, _ in free.holders if (j := app_job(name))})
    stop = " or ".join(f"`ftops job stop {j}`" for j in jobs) or "stop the application holding them"
    return f"free them ({stop}) or add a standby worker (`ftops cluster add-worker --pool standby --domain standby`)"


def _add_standby_worker(dep) -> str:
    """One more worker in the job's local standby pool (as `ftops cluster add-worker --pool standby --domain
    standby`), with the replica's cores; its name."""
    from pathlib import Path

    from spark_jobs.cluster.standalone import add_worker

    return add_worker(Path(dep.cluster_state), "standby", "standby", cores=dep.replica_cores).name


def _plan_and_replica(airflow, standby_ui: str, job: str, db_dir, say) -> dict:
    from spark_jobs.cli.job import open_store

    run = airflow.run_dag("ftops_profile_and_plan", {"job": job}, timeout_s=1200, progress=say)
    store = open_store(db_dir)
    try:
        plan = store.current_plan(job, "replication")
        replica = store.running_replica_plan(job)
    finally:
        store.conn.close()
    tasks = sorted(plan["payload"].get("tasks", [])) if plan else None
    out = {"plan_run": run["state"], "plan_run_id": run["dag_run_id"], "plan": None if plan is None else
           {"plan_id": plan["plan_id"], "output_fidelity": plan["objective"], "tasks": tasks}}
    if plan is None:
        say(f"4/4 ftops_profile_and_plan {run['state']}, but no replication plan was stored for {job}")
        return out
    out["replica"] = _replica_state(standby_ui, job, replica)
    if tasks and (out["replica"] or {}).get("state") != "RUNNING" and not (out["replica"] or {}).get("why"):
        out["replica"] = {**(out["replica"] or {"state": "not running"}), "why": _failure(airflow, "ftops_profile_and_plan", run)
                          if run["state"] == "failed" else NO_CHANGE}
    say(f"4/4 plan #{plan['plan_id']}: OF {plan['objective']:.4f}, replicating {len(tasks)} tasks; replica "
        + (out["replica"]["state"] if out["replica"] else "none (the plan replicates nothing)")
        + (f": {out['replica']['why']}" if out["replica"] and out["replica"].get("why") else ""))
    return out


def _failure(airflow, dag_id: str, run: dict) -> str:
    """What failed the run, in a line: its failed tasks' errors (their logs' last error), or where to look."""
    errors = {task: error for task, error in airflow.task_errors(dag_id, run["dag_run_id"]).items()
              if task != "watcher"}  # the leaf that only repeats which tasks failed
    if errors:
        return "; ".join(f"{task}: {error}" for task, error in errors.items())
    return f"{dag_id} run {run['dag_run_id']} {run['state']}: see its task logs in Airflow"


def _replica_state(standby_ui: str, job: str, replica: dict | None) -> dict | None:
    """The replica application's state on the job's standby master, and why it waits when it does."""
    from spark_jobs.cluster.master_room import room
    from spark_jobs.cluster.web_ui import master_state
    from spark_jobs.runtime.job_streams import replica_app_name

    if replica is None:
        return None
    doc = master_state(standby_ui, timeout_s=10)
    name = replica_app_name(job, replica["plan_id"])
    app = next((a for a in doc.get("activeapps", []) if a["name"] == name), None)
    state = {"app": name, "state": app["state"] if app else "not running"}
    if app and app["state"] == "WAITING":
        free = room(doc, but=name)
        state["why"] = f"{free.why_not(1, name, 'the standby')}; {_free_them(free)}"
    return state


def _first_drill(airflow, job: str, db_dir, say, dep, steady_timeout_s: float = STEADY_BEFORE_DRILL_S) -> dict:
    from spark_jobs.cli.job import open_store

    store = open_store(db_dir)
    try:
        replica = store.running_replica_plan(job)
        not_steady = _wait_steady(dep, dep.replica_output(replica["plan_id"]) if replica else None, say,
                                 steady_timeout_s)
        if not_steady is not None:  # a drill would refuse it too, after its own wait: say it now, with what to do
            why = (f"{not_steady}; once it keeps up, `ftops drill job {job}` drills it (or wait longer: "
                   "--steady-timeout-s)")
            say(f"no drill ran: {why}")
            return {"run": None, "drill_id": None, "status": "not run", "why": why}
        before = {d["drill_id"] for d in store.drills(job)}
        delay, why_delay = drill_outage(dep)
        say(f"the drill's outage: {why_delay}")
        run = airflow.run_dag("ftops_chaos_drill", {"job": job, "replacement_delay_s": delay}, timeout_s=1800,
                              progress=say)
        drills = [d for d in store.drills(job) if d["drill_id"] not in before]
        experiment = store.experiment("drill", drills[-1]["drill_id"]) if drills else None
    finally:
        store.conn.close()
    if not drills:  # refused before it started (busy, halted, not steady): the skip or the failure says why
        skipped = airflow.skip_reasons("ftops_chaos_drill", run["dag_run_id"])
        why = "; ".join(dict.fromkeys(skipped.values())) or _failure(airflow, "ftops_chaos_drill", run)
        say(f"no drill ran (ftops_chaos_drill {run['state']}): {why}")
        return {"run": run["state"], "drill_id": None, "status": "not run", "why": why}
    last = drills[-1]
    report = dep.path / "drills" / f"drill-{last['drill_id']}" / "experiment.json"
    out = {"run": run["state"], "drill_id": last["drill_id"], "status": last["status"],
           **({"why": last["error"]} if last.get("error") else {})}
    say(f"drill #{out['drill_id']}: {out['status']}" + (f": {last['error']}" if last.get("error") else "")
        + f" (ftops_chaos_drill {run['state']}); its report: {report}")
    measured = _measurements(experiment)
    if measured:
        out["measurements"] = measured
        say(measurements_text(measured))
    return out


def drill_outage(dep) -> tuple[float, str]:
    """The first drill's replacement delay: the drill's default, or longer when the job's windows need it for
    :data:`~spark_jobs.drills.design.SURE_ENOUGH` of them to end while the primary is down (the check of
    :mod:`spark_jobs.drills.design`, with the input in real time); and why, in a line. A job whose windows are
    as long as the default outage otherwise measures its accuracy on one window or none."""
    import math

    from spark_jobs.drills.design import span_needed_s, sure_windows
    from spark_jobs.drills.engine import DrillSettings
    from spark_jobs.pipeline.loading import load_workload

    default = float(DrillSettings.model_fields["replacement_delay_s"].default)
    workload = load_workload(dep.pipeline, dep.params)
    windowing = workload.windowing()
    if windowing is None:
        return default, (f"{default:g} s (the pipeline declares no window length, so the outage is not checked "
                         "against its windows)")
    _window, slide = windowing
    file_s = workload.file_s if workload.sample is not None else 1.0  # your own producer: its files' span unknown
    delay = max(default, float(math.ceil(span_needed_s(slide, file_s))))  # real-time input: event s = wall s
    held = sure_windows(delay, file_s, slide)
    return delay, (f"{delay:g} s before its capacity comes back, so that {held} of {workload.name}'s windows (one "
                   f"every {slide:g} s) end while the primary is down" + ("" if delay == default else
                   f" (longer than the default {default:g} s)"))


def _measurements(experiment) -> dict:
    """The drill's measurements from its stored experiment report (predicted beside measured; the report file may
    be on another host); empty when it wrote none."""
    return experiment.measurements if experiment is not None else {}


def measurements_text(measurements: dict) -> str:
    """The measurements as ``ftops drill job`` prints them: a table of measurement, predicted, measured."""
    from ft_core.cli.output import format_table
    from spark_jobs.cli.drill import job_measurements

    return format_table(["measurement", "predicted", "measured"], job_measurements(measurements))


def _wait_steady(dep, replica_output, say, timeout_s: float = STEADY_BEFORE_DRILL_S) -> str | None:
    """Wait until the job keeps up as a drill's steady state asks (the primary, and the replica that has just started
    and reads the input from its beginning, within the drill's bound); None once it does, else why not. Progress
    every 30 s."""
    from spark_jobs.drills.probes import STEADY_LAG_S, NotSteady, check_steady
    from spark_jobs.runtime.waiting import wait_for

    started = time.time()
    last = {"why": None, "said": started}

    def steady() -> bool | None:
        try:
            check_steady(dep.pipeline, dep.params, dep.input, dep.primary_output, STEADY_LAG_S, replica_output)
            return True
        except NotSteady as exc:
            last["why"] = exc.situation  # without the drill's refusal: here we wait on
            if time.time() - last["said"] >= 30:
                say(f"before the drill, waiting for the job to keep up ({time.time() - started:.0f} of "
                    f"{timeout_s:.0f} s, --steady-timeout-s): {last['why']}")
                last["said"] = time.time()
            return None

    try:
        wait_for(steady, timeout_s=timeout_s, interval_s=5, what="the job to keep up with its input")
    except ExternalError:
        return f"after {timeout_s:.0f} s, {last['why']}"
    return None
