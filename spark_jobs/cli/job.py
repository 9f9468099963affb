"""``ftops job register|start|stop|status|checkpoint|list|set|fleet``: streaming jobs known to the history store.

A job is registered in one of two ways:

- **runnable**, from a pipeline (``--pipeline module:attribute`` or a ``.py`` file, or a sample's name):
  ``ftops job register --name N --pipeline REF --input DIR --master spark://HOST:PORT [--param k=v ...]
  [--budget R] [--domains FILE]`` stores the job, its topology (derived from the pipeline) and a
  *deployment* (``spark_jobs.runtime.job_streams``: where its input, outputs and checkpoints live, its
  masters), so the DAGs profile, plan, drill, resubmit and recover it like the samples;
  ``ftops job start N`` submits its primary (detached), ``ftops job stop N`` stops its streams;
- **plan-only**, from a topology document (``--topology FILE``) or discovered from a running Structured
  Streaming application's Spark UI (``--spark-ui URL [--app-id ID]``, any job, even one not written
  with the pipeline API: ``spark_jobs.cli.discovery``): planning, what-if and history, no streams to operate.

Each job has a policy (``ftops job set``, :mod:`spark_jobs.cli.job_policy`; ``register`` takes the same flags): its
drill and tuning schedules, priority and apply mode.

The database is ``FTOPS_DATABASE_URL``, else the embedded server (``ftops db start``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ft_core.cli.budget import AUTO, TARGET_HELP, auto_budget_plan, budget_or_auto, check_target_flag
from ft_core.cli.db import add_db_dir_argument
from ft_core.cli.output import print_json, print_table
from ft_core.cli.registry import add_renamed_flag
from ft_core.errors import ExternalError, InputError
from ft_core.input.names import name_flag
from ft_core.input.quantities import PositiveFraction, PositiveSeconds, Seconds, flag
from spark_jobs.cli.discovery import add_spark_ui_arguments
from spark_jobs.cli.fleet_recovery_bench import register_bench as register_fleet_recovery_bench
from spark_jobs.cli.job_policy import add_policy_arguments, policy_changes, register_commands, who
from spark_jobs.pipeline.loading import add_pipeline_arguments


def register(sub, groups) -> None:
    job = sub.add_parser("job", help="streaming jobs known to the history store: register, start, stop, status, list")
    jsub = job.add_subparsers(dest="job_command", required=True, parser_class=type(job))

    reg = jsub.add_parser("register", help="register (or update) a job: from a pipeline (runnable) or a topology "
                          "document (plan-only)", description="\n\n".join(__doc__.split("\n\n")[1:4]))
    add_registration_arguments(reg)
    reg.set_defaults(func=_register)

    for name, help_text, func in (("start", "submit the job's primary (detached) unless it runs", _start),
                                  ("stop", "stop the job's primary and replicas between micro-batches", _stop),
                                  ("status", "the job's deployment and which of its streams run", _status),
                                  ("checkpoint", "the job's checkpoint-interval recommendation and its validations "
                                   "(predicted against measured recovery; applied only when validated)", _checkpoint)):
        cmd = jsub.add_parser(name, help=help_text)
        cmd.add_argument("name", type=name_flag("job name"), help="a registered job")
        add_db_dir_argument(cmd)
        cmd.add_argument("--json", action="store_true")
        cmd.set_defaults(func=func)

    lst = jsub.add_parser("list", help="the registered jobs (runnable or plan-only)")
    add_db_dir_argument(lst)
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_list)
    register_commands(jsub)
    register_fleet_recovery_bench(groups["bench"])


def add_registration_arguments(reg: argparse.ArgumentParser) -> None:
    """The flags of ``job register`` (also ``job protect``'s, which registers first)."""
    reg.add_argument("--name", required=True, type=name_flag("job name"),
                     help="the job's name in the history store: 1-63 letters, digits, '-', '_' or '.', starting with a "
                          "letter or digit")
    add_pipeline_arguments(reg)
    reg.add_argument("--topology", type=Path, help="plan-only: a topology document (.json, .yaml) instead of a pipeline")
    add_spark_ui_arguments(reg, required=False)
    reg.add_argument("--input", type=Path, help="the job's input folder (one sub-folder per file source)")
    reg.add_argument("--root", type=Path, help="folder for its outputs and checkpoints (default <input>/../<name>)")
    reg.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pipeline parameter (repeatable)")
    reg.add_argument("--master", help="the primary's Spark master (spark://HOST:PORT)")
    reg.add_argument("--master-ui", help="its web UI (default http://HOST:8080 of --master)")
    reg.add_argument("--standby-master", help="the replica's master (default: --master)")
    reg.add_argument("--standby-ui", help="its web UI (default http://HOST:8080 of --standby-master)")
    reg.add_argument("--trigger-s", type=flag(PositiveSeconds), default=2.0, help="micro-batch and checkpoint interval (default 2)")
    reg.add_argument("--profile-master", help="where checkpoint profiling runs copies of the job: a Spark master URL "
                     "with spare cores (default: local[1] inside the Airflow worker)")
    reg.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                     help="a Spark conf of every stream of the job (repeatable), e.g. spark.driver.host=10.0.0.4 where the "
                          "executors call the driver back")
    reg.add_argument("--budget", type=budget_or_auto, default=0,
                     help="replication budget R: tasks with an active replica (default 0), or auto: the smallest budget "
                          "whose plan reaches --target-accuracy (`ftops plan budget` shows every budget)")
    reg.add_argument("--target-accuracy", type=flag(PositiveFraction), default=None, help="with --budget auto: " + TARGET_HELP)
    reg.add_argument("--domains", type=Path, help="failure domains: a JSON/YAML mapping of worker host to domain")
    add_renamed_flag(reg, "--state-dir", "--cluster-state", type=Path, help="the state folder of a local cluster started with `ftops cluster "
                     "up` (drills fail its domains' workers)")
    reg.add_argument("--max-recovery-s", type=flag(PositiveSeconds), help="the job's recovery-time bound (drills check it)")
    reg.add_argument("--apply", choices=("auto", "approve", "recommend"), help="how new plans and drills are applied: at "
                     "once, after a person approves them in Airflow, or never (plans are only stored); default: "
                     "approve, auto for a --test-job")
    reg.add_argument("--test-job", action="store_true", help="a job for trying ftops out: plans and drills apply at once")
    reg.add_argument("--replica-cooldown-s", type=flag(Seconds), default=3600.0,
                     help="least time between two replica changes of the job (default 3600)")
    add_policy_arguments(reg, apply=False)
    add_db_dir_argument(reg)
    reg.add_argument("--json", action="store_true")


def _store(args):
    return open_store(args.db_dir)


def open_store(db_dir):
    from ft_core.store.history import open_history_store

    return open_history_store(db_dir)


def _ui_of(master: str, given: str | None) -> str:
    if given:
        return given.rstrip("/")
    if not master.startswith("spark://"):
        raise InputError(f"--master-ui: give the web UI of {master!r} (only a spark:// master has a default)")
    host = master.removeprefix("spark://").split(",")[0].rsplit(":", 1)[0]
    return f"http://{host}:8080"


def _domains(path: Path | None) -> dict[str, str] | None:
    from spark_jobs.runtime.executor_faults import load_domain_map

    return None if path is None else load_domain_map(path)


def build_registration(args: argparse.Namespace):
    """The job, its topology document, (discovered jobs) its rates profile and (``--budget auto``) the budget choice;
    InputError before anything is stored. ``--budget auto``: the smallest budget whose plan of the job's topology
    reaches ``--target-accuracy``, as ``ftops plan replication --budget auto``."""
    from ft_core.topology.document import parse_topology
    from ft_core.topology.task_graph import build_task_graph

    check_target_flag(args.budget, args.target_accuracy, "registered")
    if args.budget != AUTO:
        return (*_registration(args), None)
    spec, topology, profile = _registration(argparse.Namespace(**{**vars(args), "budget": 0}))
    plan, choice = auto_budget_plan(build_task_graph(parse_topology(topology)), args.target_accuracy)
    return spec.model_copy(update={"replication_budget": plan.budget}), topology, profile, choice


def _registration(args: argparse.Namespace):
    from pydantic import ValidationError

    from ft_core.store.history import JobSpec
    from spark_jobs.pipeline.definition import parse_params
    from spark_jobs.pipeline.loading import load_workload, pipeline_ref

    runnable = bool(args.workload or args.pipeline)
    if runnable + (args.topology is not None) + (args.spark_ui is not None) != 1:
        raise InputError("--pipeline: give a pipeline (a runnable job), --topology or --spark-ui (a plan-only job), one of them")
    try:
        if args.spark_ui is not None:
            from spark_jobs.cli.discovery import discovered_registration

            return discovered_registration(args)
        if not runnable:
            from ft_core.topology.document import load_topology

            topology = load_topology(args.topology).to_document()
            return JobSpec(name=args.name, workload="plan-only", replication_budget=args.budget,
                           max_recovery_s=args.max_recovery_s, apply_mode="recommend"), topology, None
        if args.input is None or args.master is None:
            raise InputError("--input and --master: a runnable job needs its input folder and its Spark master")
        ref = pipeline_ref(args)
        workload = load_workload(ref, args.param)
        n = len(workload.task_ids())
        if not 0 <= args.budget <= n:
            raise InputError(f"--budget: must be between 0 and the {n} tasks of {workload.name}, got {args.budget}")
        from spark_jobs.runtime.job_streams import JobDeployment

        standby = args.standby_master or args.master
        root = (args.root or args.input.resolve().parent / args.name).resolve()
        deployment = JobDeployment(
            pipeline=workload.ref or ref, root=str(root), input_dir=str(args.input.resolve()), params=list(args.param),
            trigger_s=args.trigger_s, primary_master=args.master, standby_master=standby,
            primary_ui=_ui_of(args.master, args.master_ui), standby_ui=_ui_of(standby, args.standby_ui),
            domains=_domains(args.domains), spark_conf=parse_params(args.conf, "--conf"), profile_master=args.profile_master,
            cluster_state=str(args.state_dir.resolve()) if args.state_dir else None)
        spec = JobSpec(name=args.name, workload=workload.ref or ref, replication_budget=args.budget,
                       primary_master=args.master, standby_master=standby, max_recovery_s=args.max_recovery_s,
                       query_priorities=workload.queries(), deployment=deployment.model_dump(), apply_mode=args.apply,
                       test_job=args.test_job, replica_cooldown_s=args.replica_cooldown_s)
        return spec, workload.topology(name=args.name).to_document(), None
    except ValidationError as exc:
        err = exc.errors()[0]
        field = {"spark_conf": "conf"}.get(str(err["loc"][0]), str(err["loc"][0]))
        raise InputError(f"--{field.replace('_', '-')}: {err['msg']}") from None


def _register(args: argparse.Namespace) -> int:
    doc = register_job(args)
    if args.json:
        print_json(doc)
        return 0
    print(f"job {doc['job']} registered ({doc['kind']}, id {doc['job_id']}); topology version id {doc['topology_id']} "
          f"with {doc['tasks']} tasks")
    if doc["budget_choice"]:
        print(f"budget auto: {doc['budget']}, the smallest whose plan keeps OF >= {doc['budget_choice']['target_accuracy']:g} "
              "(--target-accuracy, judged on output fidelity)")
    master = (doc["deployment"] or {}).get("primary_master")
    if doc["primary_running"]:  # a registration changes what the next submission runs, not the running application
        print(f"its primary already runs on {master}: the new registration applies when it is submitted "
              f"again (`ftops job stop {doc['job']}`, then `ftops job start {doc['job']}`)")
    elif doc["deployment"]:
        print(f"next: `ftops job start {doc['job']}` submits its primary to {master}")
    return 0


def register_job(args: argparse.Namespace) -> dict:
    """Register (or update) the job ``args`` describe (``job register``'s flags); what was stored, and whether its
    primary runs already (None: plan-only, or its master does not answer)."""
    from ft_core.store.policies import checked_policy

    spec, topology, profile, choice = build_registration(args)
    policy = checked_policy(policy_changes(args, with_apply=False))  # bad flags refused before anything is stored
    store = open_store(args.db_dir)
    try:
        if policy:
            _check_registered_policy(store, spec, policy)
        job_id = store.register_job(spec, changed_by=who("ftops job register"))
        topology_id = store.save_topology(spec.name, topology)
        if profile is not None:  # discovered: the measured rates, where it runs and where to discover it again
            store.save_profile(spec.name, "rates", {**profile, "topology_id": topology_id})
        if policy:
            store.set_policy(spec.name, policy, who("ftops job register"))
    finally:
        store.conn.close()
    return {"job": spec.name, "job_id": job_id, "topology_id": topology_id, "budget": spec.replication_budget,
            "budget_choice": choice, "kind": "plan-only" if spec.deployment is None else "runnable",
            "tasks": sum(op["parallelism"] for op in topology["operators"]), "deployment": spec.deployment,
            "primary_running": None if spec.deployment is None else _primary_running(spec)}


def _primary_running(spec) -> bool | None:
    """Whether the job's primary application runs on its master (None when the master does not answer)."""
    from spark_jobs.cluster.web_ui import master_state
    from spark_jobs.runtime.job_streams import primary_app_name

    try:
        apps = master_state(spec.deployment["primary_ui"], timeout_s=5).get("activeapps", [])
    except ExternalError:
        return None
    return any(a["name"] == primary_app_name(spec.name) and a.get("state") == "RUNNING" for a in apps)


def _check_registered_policy(store, spec, policy: dict) -> None:
    """InputError naming the flag when the job, as it is being registered, cannot take ``policy``."""
    from ft_core.store.policies import job_kind, policy_problem

    try:
        current = store.policy(spec.name)
    except InputError:  # a new job: no schedules yet
        current = {"drill_schedule": "none", "tuning_schedule": "none"}
    merged = {f: None if current[f] == "none" else current[f] for f in ("drill_schedule", "tuning_schedule")}
    merged.update(policy, apply_mode=spec.apply_mode or ("auto" if spec.test_job else "approve"))
    error = policy_problem(spec.name, merged, set(policy), job_kind(spec.workload, spec.deployment is not None))
    if error is not None:
        raise error


def registered_deployment(store, name: str):
    from spark_jobs.runtime.job_streams import parse_deployment

    return parse_deployment(store.job(name)["deployment"], name)


def _start(args: argparse.Namespace) -> int:
    result = start_job(args.name, args.db_dir)
    if args.json:
        print_json(result)
    elif "control" in result:
        print(f"{args.name}: application {'submitted again from its stored line' if result['submitted'] else 'already running'}")
    else:
        print(f"{args.name}: primary {'submitted' if result['submitted'] else 'already running'} "
              f"({result['app_id'] or result['state']})")
    return 0


def start_job(name: str, db_dir) -> dict:
    """Submit the registered job's primary (detached) unless it runs: ``submitted``, ``app_id``; an attached job's
    stored submit line from its checkpoint (``control``: its control folder)."""
    store = open_store(db_dir)
    try:
        dep = registered_deployment(store, name)
    finally:
        store.conn.close()
    if dep.kind == "attached":  # its stored submit line, from its checkpoint
        from spark_jobs.drills.reconcile import driver_env, resubmit_primary

        return {"submitted": resubmit_primary(name, dep, driver_env(db_dir)), "job": name, "control": str(dep.control)}
    return _start_primary(name, dep, db_dir)


def _start_primary(name: str, dep, db_dir) -> dict:
    """Submit the primary unless its driver runs (:func:`spark_jobs.drills.reconcile.submit_primary`: an orphaned one
    is stopped and submitted again from its checkpoint), waiting until it runs. Its driver writes its progress to
    the store this command uses (a shell without ``FTOPS_DATABASE_URL``: the embedded one), so the console's charts,
    the fleet watch and the drills' forecasts see its micro-batches."""
    from spark_jobs.drills.reconcile import driver_env, submit_primary
    from spark_jobs.runtime.job_streams import primary_app_name

    dep.input.mkdir(parents=True, exist_ok=True)
    done = submit_primary(name, dep, driver_env(db_dir), wait=True)
    return done if done is not None else {"submitted": False, "app_id": None, "name": primary_app_name(name),
                                          "state": "its driver runs (registering with its master, or running)"}


def _stop(args: argparse.Namespace) -> int:
    from spark_jobs.runtime.launch import stop_run

    store = _store(args)
    try:
        dep = registered_deployment(store, args.name)
    finally:
        store.conn.close()
    outputs = [dep.primary_output, *sorted(p for p in (dep.path / "replica").glob("plan-*") if p.is_dir())]
    stopped = [str(o) for o in outputs if (o / "_submit.json").exists() and stop_run(o)]
    if args.json:
        print_json({"job": args.name, "stopped": stopped})
    else:
        print(f"{args.name}: stopped {len(stopped)} stream(s)" + (": " + ", ".join(stopped) if stopped else ""))
    return 0


def _status(args: argparse.Namespace) -> int:
    from spark_jobs.cluster.web_ui import master_state
    from spark_jobs.runtime.job_streams import parse_deployment

    store = _store(args)
    try:
        row = store.job(args.name)
        policy = store.policy(args.name)
    finally:
        store.conn.close()
    dep = parse_deployment(row["deployment"], args.name) if row["deployment"] else None
    if dep is None:
        doc = {"job": args.name, "kind": "plan-only", "streams": []}
    elif dep.kind == "attached":
        from spark_jobs.attach.drill_support import status

        doc = {"job": args.name, **status(dep)}
    else:
        apps, unreachable = {}, []
        for ui in sorted({dep.primary_ui, dep.standby_ui}):
            try:
                apps.update({a["name"]: a for a in master_state(ui).get("activeapps", [])})
            except ExternalError as exc:  # a master down is part of the status, not a reason to show none
                unreachable.append(str(exc))
        streams = [{"name": name, "state": app["state"], "app_id": app["id"]} for name, app in apps.items()
                   if name.startswith(f"ftops-{args.name}-")]
        doc = {"job": args.name, "kind": "runnable", "pipeline": dep.pipeline, "input": str(dep.input),
               "root": dep.root, "primary_master": dep.primary_master, "streams": streams, "unreachable": unreachable}
    doc["policy"] = policy
    if args.json:
        print_json(doc)
        return 0
    print(f"{args.name}: {doc['kind']}" + (f", pipeline {doc['pipeline']}, input {doc['input']}" if doc["kind"] == "runnable" else "")
          + (f", application {doc['app']} ({'running' if doc['running'] else 'not running'})" if doc["kind"] == "attached" else ""))
    print(f"policy: drills {policy['drill_schedule']}, tuning {policy['tuning_schedule']}, priority {policy['priority']:g}, "
          f"apply {policy['apply']}")
    for problem in doc.get("unreachable", []):
        print(f"streams unknown: {problem}")
    for operation, refusal in policy["refused"].items():
        print(f"the scheduled {operation} skipped it at {refusal['at'][:19]} (it stays due): {refusal['reason']}")
    if doc["streams"]:
        print_table(["stream", "state", "application"], [[s["name"], s["state"], s["app_id"]] for s in doc["streams"]])
    return 0



def _list(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        jobs = store.jobs()
        kinds = store.job_kinds()  # one query for the fleet, not one per job
        policies = store.policies()
    finally:
        store.conn.close()
    rows = [{"job": j["name"], "kind": kinds[j["name"]]["deployment"] or "plan-only", "pipeline": j["workload"],
             "budget": j["replication_budget"], "policy": policies[j["name"]]} for j in jobs]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print_table(["job", "kind", "pipeline", "budget", "drills", "tuning", "priority", "apply"],
                [[r["job"], r["kind"], r["pipeline"], r["budget"], r["policy"]["drill_schedule"],
                  r["policy"]["tuning_schedule"], f"{r['policy']['priority']:g}", r["policy"]["apply"]] for r in rows])
    return 0


def _checkpoint(args: argparse.Namespace) -> int:
    """The current checkpoint plan (ftops_checkpoint_tuning's recommendation) and its newest validations."""
    store = _store(args)
    try:
        store.job(args.name)
        plan = store.current_plan(args.name, "checkpoint")
        validations = store.checkpoint_validations(args.name, limit=10)
    finally:
        store.conn.close()
    doc = {"job": args.name, "recommendation": None if plan is None else {
        "plan_id": plan["plan_id"], "checkpoint_interval_ms": plan["objective"], "algorithm": plan["algorithm"],
        "predicted_recovery_s": plan["payload"].get("predicted_recovery_s"), "created_at": plan["created_at"].isoformat()},
        "validations": [{**v, "created_at": v["created_at"].isoformat()} for v in validations]}
    if args.json:
        print_json(doc)
        return 0
    rec = doc["recommendation"]
    print(f"{args.name}: " + ("no checkpoint recommendation yet" if rec is None else
          f"recommended interval {rec['checkpoint_interval_ms']:.0f} ms ({rec['algorithm']}, plan {rec['plan_id']}, "
          f"predicted recovery {rec['predicted_recovery_s']:.1f} s)"))
    if validations:
        print_table(["plan", "interval ms", "variant", "predicted s", "measured s", "error", "bound", "validated", "applied", "when"],
                    [[v["plan_id"], f"{v['interval_ms']:.0f}", v["variant"], f"{v['predicted_recovery_s']:.1f}",
                      f"{v['measured_recovery_s']:.1f}", "-" if v["recovery_error"] is None else f"{v['recovery_error']:.1%}",
                      f"{v['max_recovery_error']:.0%}", "yes" if v["validated"] else "no", "yes" if v["applied"] else "no",
                      v["created_at"][:19]] for v in doc["validations"]])
        print(f"latest: {validations[0]['reason']}")
    return 0
