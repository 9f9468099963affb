"""``ftops job submit NAME [options] -- APP [APP_ARGS]``: protect a streaming application written without ftops
(issue 34, item 1). Registered through the ``ftops.commands`` entry point (``attach``), beside ``ftops job``.

The command registers the job as *attached* (if it is not registered; an attached job registered before is
updated) and submits the user's unchanged application through ftops's launcher (:mod:`spark_jobs.attach`), which
attaches ftops to every SparkSession and streaming query it starts: progress rows in the history store, a record
of its queries and their checkpoints, the watcher for a drill's domain faults. The submit line is kept, secrets
as the names of environment variables only, so ftops can start the job again from its checkpoint.

    ftops job submit clicks --master spark://10.0.0.2:7077 --conf spark.executor.cores=1 -- apps/clicks.py --out /data/x
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ft_core.cli.db import add_db_dir_argument
from ft_core.cli.output import print_json
from ft_core.cli.registry import group_commands
from ft_core.errors import ExternalError, InputError
from ft_core.input.names import name_flag
from ft_core.input.quantities import PositiveSeconds, Seconds, flag


def register(sub, groups) -> None:
    """Nothing of its own: ``job submit`` joins the ``job`` group in :func:`extend`."""


def extend(sub, groups) -> None:
    jsub = group_commands(sub, "job")
    cmd = jsub.add_parser("submit", help="register and submit a streaming application written without ftops (attached: "
                          "progress, drills, restarts)", description=__doc__.split("\n\n")[1])
    cmd.add_argument("name", type=name_flag("job name"), help="the job's name in the history store")
    cmd.add_argument("--master", help="spark-submit's --master (default: spark-submit's own, spark-defaults.conf)")
    cmd.add_argument("--master-ui", help="the standalone master's web UI, to see the application run there")
    cmd.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark conf (repeatable); "
                     "a conf that names a secret is refused here: use --conf-env")
    cmd.add_argument("--conf-env", action="append", default=[], metavar="KEY=ENV_VAR",
                     help="a Spark conf whose value is read from ENV_VAR at every submission (secrets; repeatable)")
    cmd.add_argument("--domains", type=Path, help="failure domains: a JSON/YAML mapping of worker host to domain "
                     "(drills fail a domain through the job's own driver)")
    cmd.add_argument("--state-dir", type=Path, help="the state folder of a local cluster `ftops cluster up` started "
                     "(drills fail its domains' workers)")
    cmd.add_argument("--root", type=Path, help="ftops's folder for the job (default $FTOPS_HOME/jobs/NAME)")
    cmd.add_argument("--max-recovery-s", type=flag(PositiveSeconds), help="the job's recovery-time bound (drills check it)")
    cmd.add_argument("--apply", choices=("auto", "approve", "recommend"), help="how drills are applied: at once, after a "
                     "person approves them, or never (default approve, auto for --test-job)")
    cmd.add_argument("--test-job", action="store_true", help="a job for trying ftops out: drills run at once")
    cmd.add_argument("--wait-s", type=flag(Seconds), default=300.0, help="wait this long for the application's first "
                     "micro-batch, then read its topology from its Spark UI (default 300; 0: return once submitted)")
    add_db_dir_argument(cmd)
    cmd.add_argument("--json", action="store_true")
    cmd.add_argument("app", type=Path, help="the application (.py), as given to spark-submit today")
    cmd.add_argument("app_args", nargs=argparse.REMAINDER, help="its arguments (after --)")
    cmd.set_defaults(func=_submit)


def deployment_of(args: argparse.Namespace, stored_root: str | None = None):
    """The attached deployment the flags describe (ftops's folder: ``--root``, else the one the job has, else
    ``$FTOPS_HOME/jobs/NAME``); InputError before anything is stored or started."""
    from pydantic import ValidationError

    from ft_core.home import state_path
    from spark_jobs.attach.deployment import AttachedDeployment
    from spark_jobs.pipeline.definition import parse_params
    from spark_jobs.runtime.executor_faults import load_domain_map

    app = args.app.resolve()
    if app.suffix != ".py" or not app.is_file():
        raise InputError(f"app: {str(args.app)!r} is not a Python application file (.py) ftops can read", field="app")
    root = (args.root or (Path(stored_root) if stored_root else None) or state_path("jobs", args.name)).resolve()
    try:
        return AttachedDeployment(
            app=str(app), app_args=args.app_args[1:] if args.app_args[:1] == ["--"] else args.app_args,
            root=str(root), master=args.master,
            primary_ui=args.master_ui.rstrip("/") if args.master_ui else None, conf=parse_params(args.conf, "--conf"),
            conf_env=parse_params(args.conf_env, "--conf-env"),
            domains=None if args.domains is None else load_domain_map(args.domains),
            cluster_state=str(args.state_dir.resolve()) if args.state_dir else None)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = {"conf_env": "conf-env"}.get(str(err["loc"][0]), str(err["loc"][0]))
        raise InputError(f"--{field}: {str(err['msg']).removeprefix('Value error, ')}") from None


def _first_profile(args: argparse.Namespace, dep) -> dict | None:
    """Wait for the application's first micro-batch, then store its topology from its driver's UI (what planning
    and drills start from); None when it did not come within ``--wait-s`` (``ftops_profile_and_plan`` reads it later)."""
    from ft_core.cli.progress import Progress
    from ft_core.store.history import open_history_store
    from spark_jobs.attach.drill_support import current_queries
    from spark_jobs.attach.ui_profile import profile_attached
    from spark_jobs.runtime.launch import driver_running
    from spark_jobs.runtime.waiting import wait_while

    store = open_history_store(args.db_dir)

    def first_batch() -> bool:
        streams = list(current_queries(dep))
        return bool(streams) and any(store.batches_since(streams, 0).values())

    try:
        with Progress("job submit") as say:
            say(f"waiting up to {args.wait_s:.0f} s for {args.name}'s first micro-batch")
            wait_while(lambda: driver_running(dep.control) and not first_batch(), timeout_s=args.wait_s, interval_s=1)
        if not driver_running(dep.control):
            raise ExternalError(f"the application exited; see its driver's log in {dep.path / 'logs'}")
        if not first_batch():
            return None
        found: dict = {}

        def profiled() -> bool:  # a driver busy with its first batches can leave its UI slow: a few tries
            found.update(profile_attached(store, args.name, dep, last_batches=20))
            return found["topology_id"] is None

        wait_while(profiled, timeout_s=min(args.wait_s, 60.0), interval_s=5)
        return found
    finally:
        store.conn.close()


def _submit(args: argparse.Namespace) -> int:
    from ft_core.store.history import JobSpec, open_history_store
    from spark_jobs.attach.deployment import AttachedDeployment, submit
    from spark_jobs.drills.reconcile import driver_env
    from spark_jobs.runtime.launch import driver_running

    deployment_of(args)  # bad flags are refused before the store is touched
    store = open_history_store(args.db_dir)
    try:
        known = {j["name"]: j for j in store.jobs()}
        if args.name in known and known[args.name]["workload"] != "attached":
            raise InputError(f"name: job {args.name!r} is registered as a {known[args.name]['workload']} job, not an "
                             "attached one; choose another name", field="name")
        stored = AttachedDeployment.model_validate(store.job(args.name)["deployment"]) if args.name in known else None
        running = stored is not None and driver_running(stored.control)
        dep = stored if running else deployment_of(args, stored.root if stored else None)
        if not running:  # a running job keeps the line it runs with: stop it first to change it
            store.register_job(JobSpec(name=args.name, workload="attached", replication_budget=0, apply_mode=args.apply,
                                       test_job=args.test_job, max_recovery_s=args.max_recovery_s,
                                       deployment=dep.model_dump(), primary_master=dep.master))
        env = driver_env(args.db_dir)
    finally:
        store.conn.close()
    pgid = None if running else submit(args.name, dep, env)
    topology = _first_profile(args, dep) if pgid is not None and args.wait_s > 0 else None
    doc = {"job": args.name, "kind": "attached", "submitted": not running, "pgid": pgid, "control": str(dep.control),
           "command": dep.shown_argv(args.name), "topology": topology}
    if args.json:
        print_json(doc)
    elif running:
        print(f"job {args.name} is running: not submitted again, and its stored submit line is kept (`ftops job stop "
              f"{args.name}` first to change it)")
    else:
        print(f"job {args.name} registered (attached) and submitted (process group {pgid}); its driver's log: "
              f"{dep.path / 'logs'}")
        if topology:
            print(f"its topology, read from its Spark UI: {topology['source']}")
        print(f"next: `ftops job status {args.name}`, then `ftops drill job {args.name}`")
    return 0
