"""``ftops stack up|down|status`` and ``ftops stack demo``: the local stack on the embedded defaults."""

from __future__ import annotations

import argparse

from ft_core.cli.output import print_table
from ft_core.cli.progress import Progress

DEMO_RUNS = (  # (DAG, conf): what the README's main command runs, in order
    ("ftops_profile_and_plan", {}),
    ("ftops_chaos_drill", {"job": "topk", "failure_domain": "auto", "replacement_delay_s": 20}),
)


def register(sub, groups) -> None:
    stack = sub.add_parser("stack", help="the local stack: PostgreSQL, Spark clusters, Airflow (the end-to-end demo)")
    ssub = stack.add_subparsers(dest="stack_command", required=True, parser_class=type(stack))
    for name, func, text in (("up", _up, "start PostgreSQL, the Spark clusters and Airflow; register the sample jobs"),
                             ("down", _down, "stop everything `up` started"),
                             ("status", _status, "what runs"),
                             ("demo", _demo, "up, then run ftops_profile_and_plan and one ftops_chaos_drill; print a summary")):
        p = ssub.add_parser(name, help=text, description=text)
        p.add_argument("--airflow-port", type=int, default=8080)
        p.set_defaults(func=func)


def _stack(args: argparse.Namespace):
    from ftops_provider.local_stack import LocalStack

    return LocalStack(airflow_port=args.airflow_port, progress=Progress("stack"))


def _up(args: argparse.Namespace) -> int:
    stack = _stack(args)
    stack.up()
    _where(stack)
    return 0


def _down(args: argparse.Namespace) -> int:
    stopped = _stack(args).down()
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def _status(args: argparse.Namespace) -> int:
    from spark_jobs.cluster.standalone import cluster_status

    stack = _stack(args)
    rows = [["postgres", "running" if stack.postgres.running() else "stopped", f"127.0.0.1:{stack.db_port}"]]
    rows += [[f"airflow {name}", "running" if ok else "exited", stack.airflow.url] for name, ok in stack.airflow.alive().items()]
    try:
        for pool, info in cluster_status(stack.spark_state)["pools"].items():
            rows.append([f"spark {pool}", f"{len(info['workers'])} workers", info["master"]])
    except Exception as exc:  # noqa: BLE001 - status must report, not fail, when Spark is down
        rows.append(["spark", "stopped", str(exc).splitlines()[0][:80]])
    print_table(["component", "state", "where"], rows)
    return 0


def _demo(args: argparse.Namespace) -> int:
    stack = _stack(args)
    stack.up()
    results = [(dag_id, stack.trigger(dag_id, conf)) for dag_id, conf in DEMO_RUNS]
    print_table(["DAG", "run", "state"], [[dag_id, run["dag_run_id"], run["state"]] for dag_id, run in results])
    _summary(stack)
    _where(stack)
    return 0 if all(run["state"] == "success" for _, run in results) else 1


def _summary(stack) -> None:
    """What the demo's runs stored: the sample job's current plan and its latest drill."""
    from ft_core.store.connection import connect
    from ft_core.store.history import HistoryStore

    conn = connect(stack.postgres.url())
    try:
        store = HistoryStore(conn)
        plan = store.current_plan("topk", "replication")
        drills = store.drills("topk")
    finally:
        conn.close()
    if plan:
        tasks = plan["payload"].get("tasks", [])
        print(f"\ntopk: replication plan #{plan['plan_id']} ({plan['algorithm']}): {' '.join(tasks)}, "
              f"predicted output fidelity {plan['objective']:.3f}")
    if drills:
        d = drills[-1]
        acc = "-" if d["tentative_accuracy"] is None else f"{d['tentative_accuracy']:.3f}"
        first = "-" if d["time_to_first_tentative_s"] is None else f"{d['time_to_first_tentative_s']:.1f} s"
        caught = "-" if d["time_to_caught_up_s"] is None else f"{d['time_to_caught_up_s']:.1f} s"
        print(f"topk: drill #{d['drill_id']} {d['status']}: measured tentative accuracy {acc}, first tentative output "
              f"after {first}, primary caught up after {caught}, lost/duplicated windows "
              f"{d['lost_windows']}/{d['duplicated_windows']}")


def _where(stack) -> None:
    print(f"Airflow: {stack.airflow.url}  (user admin; password in "
          f"{stack.airflow.home / 'simple_auth_manager_passwords.json.generated'})")
    print(f"plan history: {stack.airflow.url}/ftops/jobs/topk  (\"Fault tolerance\" in Airflow's navigation)")
    print("stop everything: .venv/bin/ftops stack down  (or make demo-stop)")
