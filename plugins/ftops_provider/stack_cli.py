"""``ftops stack up|down|status``, ``ftops stack demo`` and ``ftops bench soak``: the local stack on the
embedded defaults, and drills in a row through its Airflow."""

from __future__ import annotations

import argparse

from ft_core.cli.output import command_line, emit_report, print_json, print_table
from ft_core.cli.progress import Progress
from ft_core.input.quantities import Port, Seconds, flag
from ft_core.replication.predicted_accuracy import AccuracyEstimate
from ftops_provider.soak import DrillCount

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
        p.add_argument("--airflow-port", type=flag(Port), default=8080, help="Airflow's api-server port (default 8080)")
        p.add_argument("--json", action="store_true", help="print the result as one JSON document (progress stays on stderr)")
        if name in ("up", "demo"):
            _network_argument(p)
        p.set_defaults(func=func)
    soak = groups["bench"].add_parser("soak", help="chaos drills in a row through ftops_chaos_drill on the local stack, "
                                      "alternating failure domains (issue 16); writes docs/benchmarks/soak.md")
    soak.add_argument("--drills", type=flag(DrillCount), default=20, help="how many drills in a row (default 20)")
    soak.add_argument("--domains", type=domain_list, default=["auto"],
                      help="failure domains to take turns, comma-separated (default auto: where the primary's executors "
                      "run, which alternates, since each drill moves them to the other domain)")
    soak.add_argument("--replacement-delay-s", type=flag(Seconds), default=20,
                      help="seconds until each drill's replacement capacity arrives (default 20)")
    soak.add_argument("--out", default="docs/benchmarks/soak.md", help="report path (default docs/benchmarks/soak.md)")
    soak.add_argument("--json", action="store_true", help='print {"out": PATH, "report": MARKDOWN}')
    soak.add_argument("--airflow-port", type=flag(Port), default=8080, help="Airflow's api-server port (default 8080)")
    _network_argument(soak)
    soak.set_defaults(func=_soak)
    chaos = groups["bench"].add_parser("self-chaos", help="kill a piece of ftops mid-drill on the local stack and time "
                                       "how long until the job is whole again (issue 35); writes docs/benchmarks/self-chaos.md")
    chaos.add_argument("--scenarios", type=_scenario_list, default=None,
                       help="comma-separated, in order (default all the stack's network allows; a subset replaces "
                            "those rows of the last report and keeps the others): " + ", ".join(_scenario_names()))
    chaos.add_argument("--out", default="docs/benchmarks/self-chaos.md", help="report path")
    chaos.add_argument("--json", action="store_true", help='print {"out": PATH, "report": MARKDOWN}')
    chaos.add_argument("--airflow-port", type=flag(Port), default=8080, help="Airflow's api-server port (default 8080)")
    _network_argument(chaos)
    chaos.set_defaults(func=_self_chaos)


def extend(sub, groups) -> None:
    from ftops_provider.protect_cli import add_protect_command

    add_protect_command(sub)  # `job protect` drives the local stack's Airflow when it runs


def _network_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--network", choices=("loopback", "namespaces"),
                        help="where the Spark daemons run when the stack starts them: loopback (the default), or "
                             "namespaces: each on a host of its own on a private bridge, drivers on this machine (root)")


def domain_list(text: str) -> list[str]:
    """``--domains``: failure-domain names, comma-separated (at least one).

    >>> domain_list("rack-a, rack-b")
    ['rack-a', 'rack-b']
    """
    from ft_core.input.names import name_flag

    domains = [d.strip() for d in text.split(",") if d.strip()]
    if not domains:
        raise argparse.ArgumentTypeError(f"expected failure domains, comma-separated, got {text!r}")
    return [name_flag("failure domain")(d) for d in domains]


def _stack(args: argparse.Namespace):
    from ftops_provider.local_stack import LocalStack

    return LocalStack(airflow_port=args.airflow_port, progress=Progress("stack"), network=getattr(args, "network", None))


def _up(args: argparse.Namespace) -> int:
    stack = _stack(args)
    stack.up()
    _emit_addresses(stack, args.json)
    return 0


def _down(args: argparse.Namespace) -> int:
    stopped = _stack(args).down()
    if args.json:
        print_json({"stopped": stopped})
    else:
        print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def _status(args: argparse.Namespace) -> int:
    rows = _components(_stack(args))
    state, hint = _stack_state(rows)
    if args.json:
        print_json({"state": state, "components": rows, "next": hint})
    else:
        print_table(["component", "state", "where"], [[r["component"], r["state"], r["where"]] for r in rows])
        if hint:
            print(hint)
    return 0


def _components(stack) -> list[dict]:
    """What runs: PostgreSQL, each Airflow component, each Spark pool (``running`` says whether it does)."""
    server = stack.postgres
    postgres = server.running()
    rows = [("postgres", postgres, "running" if postgres else "stopped", f"{server.host}:{server.port}")]
    alive = stack.airflow.alive()
    rows += [(f"airflow {name}", ok, "running" if ok else "exited", stack.airflow.url) for name, ok in alive.items()] \
        or [("airflow", False, "stopped", stack.airflow.url)]
    rows += _spark_rows(stack)
    return [{"component": c, "running": running, "state": state, "where": where} for c, running, state, where in rows]


def _spark_rows(stack) -> list[tuple[str, bool, str, str]]:
    from spark_jobs.cluster.standalone import cluster_status

    if not stack.clusters_started():  # never started, or stopped by `stack down`
        return [("spark", False, "stopped", str(stack.spark_state))]
    try:
        return [(f"spark {pool}", True, f"{len(info['workers'])} workers", info["master"])
                for pool, info in cluster_status(stack.spark_state)["pools"].items()]
    except Exception as exc:  # noqa: BLE001 - status must report, not fail, when Spark is down
        return [("spark", False, "not answering", str(exc).splitlines()[0][:80])]


def _stack_state(rows: list[dict]) -> tuple[str, str | None]:
    """``down``, ``partial`` or ``up``, and what to run next (None when everything runs)."""
    running = [r["running"] for r in rows]
    if not any(running):
        return "down", ("the stack is down: `make demo` starts it (PostgreSQL, the Spark clusters, Airflow, the sample "
                        "job, then a plan and a drill), `.venv/bin/ftops stack up` without the demo's runs")
    if not all(running):
        return "partial", ("part of the stack is not running: `.venv/bin/ftops stack up` starts what is missing, "
                           "`.venv/bin/ftops stack down` stops the rest")
    return "up", None


def _demo(args: argparse.Namespace) -> int:
    stack = _stack(args)
    stack.up()
    results = [(dag_id, stack.trigger(dag_id, conf)) for dag_id, conf in DEMO_RUNS]
    runs = [{"dag_id": dag_id, "run_id": run["dag_run_id"], "state": run["state"]} for dag_id, run in results]
    summary = _summary(stack)
    if args.json:
        print_json({"runs": runs, **summary, **_addresses(stack)})
    else:
        print_table(["DAG", "run", "state"], [[r["dag_id"], r["run_id"], r["state"]] for r in runs])
        _print_summary(summary)
        _emit_addresses(stack, False)
    return 0 if all(r["state"] == "success" for r in runs) else 1


def _soak(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ftops_provider.local_stack import RUNNING_JOB
    from ftops_provider.soak import run_soak, soak_report

    stack = _stack(args)
    stack.up()
    command = command_line(["stack", "soak"])
    progress, out = Progress("soak", total=args.drills), Path(args.out) if args.out else None

    def partial(so_far) -> None:  # rewritten after every drill: a stopped soak keeps the drills it ran
        if out is not None:  # whole or not at all: an interrupt must not leave half a table
            out.parent.mkdir(parents=True, exist_ok=True)
            partial_file = out.with_name(out.name + ".partial")
            partial_file.write_text(soak_report(so_far, out, planned=args.drills))
            partial_file.replace(out)

    result = run_soak(stack, job=RUNNING_JOB, drills=args.drills, domains=args.domains,
                      replacement_delay_s=args.replacement_delay_s, command=command, progress=progress, step=progress.step,
                      on_drill=partial)
    emit_report(soak_report(result, out), args.out, args.json)
    return 0 if result.target_met else 1


def _scenario_names() -> tuple[str, ...]:
    from ftops_provider.self_chaos import SCENARIOS

    return SCENARIOS


def _scenario_list(text: str) -> list[str]:
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [c for c in chosen if c not in _scenario_names()]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(_scenario_names())}, got {text!r}")
    return chosen


def _self_chaos(args: argparse.Namespace) -> int:
    from ftops_provider.self_chaos import ChaosResult, merged, run_self_chaos, scenarios_for, self_chaos_report

    stack = _stack(args)
    scenarios = scenarios_for(stack.spark_network(), args.scenarios)  # refused before anything starts
    stack.up()
    progress = Progress("self-chaos", total=len(scenarios))
    result = run_self_chaos(stack, scenarios, command_line(["bench", "self-chaos"]), progress=progress)
    raw = stack.state / "self-chaos.json"  # the raw rows, beside the stack: a scenario run again replaces its row only
    previous = ChaosResult.model_validate_json(raw.read_text()) if args.scenarios and raw.exists() else None
    whole = merged(previous, result)
    raw.write_text(whole.model_dump_json(indent=2))
    emit_report(self_chaos_report(whole), args.out, args.json)
    return 0 if all(r.restored for r in result.rows) else 1


def _summary(stack) -> dict:
    """What the demo's runs stored: the sample job's current plan with its accuracy estimate (None while not
    estimated) and its latest drill (None if none)."""
    with stack.store() as store:
        plan = store.current_plan("topk", "replication")
        estimate = (store.predicted_accuracy(plan["plan_id"]) or {}).get("accuracy_estimate") if plan else None
        drills = store.drills("topk")
    return {"plan": None if not plan else {"job": "topk", "plan_id": plan["plan_id"], "algorithm": plan["algorithm"],
                                           "tasks": plan["payload"].get("tasks", []), "predicted_output_fidelity": plan["objective"],
                                           "predicted_accuracy": None if estimate is None else estimate["mean"],
                                           "accuracy_estimate": estimate},
            "drill": None if not drills else {"job": "topk", **{k: drills[-1][k] for k in DRILL_FIELDS}}}


DRILL_FIELDS = ("drill_id", "status", "predicted_output_fidelity", "predicted_accuracy", "tentative_accuracy",
                "time_to_first_tentative_s", "time_to_caught_up_s", "predicted_caught_up_s", "lost_windows",
                "duplicated_windows", "error")


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _print_summary(summary: dict) -> None:
    plan, d = summary["plan"], summary["drill"]
    if plan:
        print(f"\ntopk: replication plan #{plan['plan_id']} ({plan['algorithm']}): {' '.join(plan['tasks'])}, "
              f"predicted output fidelity {plan['predicted_output_fidelity']:.3f}, predicted tentative accuracy "
              f"{'-' if plan['accuracy_estimate'] is None else AccuracyEstimate.model_validate(plan['accuracy_estimate']).spread()}")
    if d:
        first = "-" if d["time_to_first_tentative_s"] is None else f"{d['time_to_first_tentative_s']:.1f} s"
        caught = "-" if d["time_to_caught_up_s"] is None else f"{d['time_to_caught_up_s']:.1f} s"
        if d.get("predicted_caught_up_s") is not None:  # the drill's own forecast, made before its fault
            caught += f" (forecast {d['predicted_caught_up_s']:.1f} s)"
        if d["status"] != "passed" and d.get("error"):  # an aborted or failed drill measured little: say why first
            print(f"topk: drill #{d['drill_id']} {d['status']}: {d['error']}")
        print(f"topk: drill #{d['drill_id']} {d['status']}: measured tentative accuracy {_fraction(d['tentative_accuracy'])} "
              f"(predicted {_fraction(d['predicted_accuracy'])}, output fidelity {_fraction(d['predicted_output_fidelity'])}), "
              f"first tentative output after {first}, primary caught up after {caught}, lost/duplicated windows "
              f"{'-' if d['lost_windows'] is None else d['lost_windows']}/"
              f"{'-' if d['duplicated_windows'] is None else d['duplicated_windows']}")


def _addresses(stack) -> dict:
    """Where the running stack answers (``stack up --json``, and the end of ``stack demo``)."""
    from ft_core.store.connection import redact

    return {"airflow": stack.airflow.url,
            "admin_password_file": str(stack.airflow.home / "simple_auth_manager_passwords.json.generated"),
            "plan_history": f"{stack.airflow.url}/ftops/jobs/topk", "database": redact(stack.postgres.url()),
            "spark_state_dir": str(stack.spark_state), "airflow_pids": stack.airflow.pids()}


def _emit_addresses(stack, as_json: bool) -> None:
    doc = _addresses(stack)
    if as_json:
        print_json(doc)
        return
    print(f"Airflow: {doc['airflow']}  (user admin; password in {doc['admin_password_file']})")
    print(f"plan history: {doc['plan_history']}  (\"Fault tolerance\" in Airflow's navigation)")
    print("stop everything: .venv/bin/ftops stack down  (or make demo-stop)")
