"""``ftops units ...``: any pipeline deployed as recovery units (issue 5, paper 003).

Registered through the ``ftops.commands`` entry point ``units = "spark_jobs.cli.units"``; the logic lives in
:mod:`spark_jobs.recovery_units` (Airflow operators call the same functions).

- ``units deploy [--workload NAME | --pipeline REF] --placement P.json``: the pipeline's shape checked and its
  tables laid out, units grouped into applications (one per "node"), the live feed (a sample input's);
- ``units status``: which units run where, their last batch, watermark, lag and measured cost;
- ``units start --units u1,u2 --app NAME``: restart units from their own checkpoints in a new application;
- ``units stop (--app A | --all)``; ``units kill (--domain D | --app A)``: a correlated failure, recorded;
- ``units topology`` / ``units problem``: the topology document (units as tasks) and the recovery problem of
  the last failure, for ``ftops plan stages``; ``units rates --arrival-times S,S``: the catch-up model of the
  last failure (measured rates per failed unit), for ``ftops plan stages --policy catch-up --catch-up FILE``;
- ``units verify``: committed tables against the failure-free reference (lost / duplicated rows);
- ``units recover --schedule STAGES.json``: execute a staged schedule, waiting on the Spark master for capacity
  (``ftops recover``, its old name, still works for one release).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ft_core.cli.output import print_json, print_table
from ft_core.cli.progress import Progress
from ft_core.cli.registry import add_old_name, add_renamed_flag
from ft_core.errors import InputError
from ft_core.home import path_flag, state_path
from ft_core.input.names import name_flag
from ft_core.input.quantities import PositiveFraction, PositiveSeconds, Seconds, flag
from spark_jobs.cli.job_lease import add_lease_arguments, held_lease
from spark_jobs.pipeline.loading import add_pipeline_arguments, load_pipeline, pipeline_label, pipeline_ref

DEFAULT_PIPELINE = "smartcity"
DEFAULT_DIR = "$FTOPS_HOME/units/smartcity"  # resolved by path_flag when a command runs


def register(sub, groups) -> None:
    units = sub.add_parser("units", help="recovery units: a pipeline deployed as restartable streaming queries (paper 003)")
    usub = units.add_subparsers(dest="units_command", required=True, parser_class=type(units))

    dep = usub.add_parser("deploy", help="check the pipeline's shape, start the feed and one application per placement "
                          "entry; wait until every unit runs")
    add_renamed_flag(dep, "--deployment-dir", "--dir", type=path_flag,
                     help="the deployment folder (default $FTOPS_HOME/units/<pipeline>)")
    _pipeline(dep)
    dep.add_argument("--placement", type=Path, required=True, help='{"apps": {"node-1": ["O1[0]", ...], ...}}')
    where = dep.add_mutually_exclusive_group()
    where.add_argument("--state-dir", type=path_flag, default="$FTOPS_HOME/spark",
                       help="cluster state of `ftops cluster up` (default %(default)s): its primary master")
    where.add_argument("--master", help="a Spark master URL instead (no domains)")
    dep.add_argument("--master-ui", help="that master's web UI, e.g. http://HOST:8080 (recovery polls its capacity there; "
                     "default: the cluster state's, else the Airflow connection ftops_spark_master)")
    dep.add_argument("--input", type=Path, help="input folder (default DIR/input)")
    dep.add_argument("--trigger-s", type=flag(PositiveSeconds), default=2.0, help="micro-batch and checkpoint interval (default 2)")
    dep.add_argument("--backlog-s", type=flag(Seconds), help="event seconds of sample input written before the start "
                     "(default 10 with a sample input, else 0)")
    dep.add_argument("--no-feed", action="store_true", help="no live input generator (a pipeline without a sample "
                     "input has none: its producers feed --input)")
    dep.add_argument("--timeout-s", type=flag(PositiveSeconds), default=300.0)
    dep.add_argument("--json", action="store_true")
    dep.set_defaults(func=_deploy)

    st = usub.add_parser("status", help="units, applications, failures")
    _dir(st)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=_status)

    start = usub.add_parser("start", help="restart units from their own checkpoints in a new application")
    _dir(start)
    start.add_argument("--units", required=True, help="comma-separated unit ids, e.g. 'O1[0],O3[0]'")
    start.add_argument("--app", required=True, type=name_flag("application name"),
                       help="a new application name (also its folder under the deployment's apps/)")
    start.add_argument("--no-wait", action="store_true", help="return once submitted")
    start.add_argument("--timeout-s", type=flag(PositiveSeconds), default=300.0)
    start.add_argument("--json", action="store_true", help="print the application started (name, units, driver pid) as JSON")
    start.set_defaults(func=_start)

    stop = usub.add_parser("stop", help="stop applications gracefully (between micro-batches)")
    _dir(stop)
    which = stop.add_mutually_exclusive_group(required=True)
    which.add_argument("--app", help="comma-separated application names")
    which.add_argument("--all", action="store_true", help="every application and the feed")
    stop.add_argument("--json", action="store_true", help='print {"stopped": [names]}')
    stop.set_defaults(func=_stop)

    kill = usub.add_parser("kill", help="a correlated failure: SIGKILL a failure domain (workers + drivers) or applications")
    _dir(kill)
    target = kill.add_mutually_exclusive_group(required=True)
    target.add_argument("--domain", type=name_flag("failure domain"), help="failure domain of the primary pool")
    target.add_argument("--app", help="comma-separated application names (a node failure each)")
    kill.add_argument("--fault", choices=("host-down", "partition"), default="host-down",
                      help="with --domain: host-down kills it (default); partition cuts its hosts off the network and "
                           "fences its applications (a cluster started with --network namespaces)")
    kill.add_argument("--json", action="store_true")
    kill.set_defaults(func=_kill)

    topo = usub.add_parser("topology", help="the topology document (units as tasks, queries as outputs)")
    _pipeline(topo)
    _json_always(topo)
    topo.set_defaults(func=_topology)

    prob = usub.add_parser("problem", help="the recovery problem of the last failure (input of `ftops plan stages`)")
    _dir(prob)
    prob.add_argument("--cost", type=unit_cost, default="measured",
                      help="'measured' (CPU share from Spark's task metrics, default) or 'declared:X' (every unit X of a node)")
    _json_always(prob)
    prob.set_defaults(func=_problem)

    rates = usub.add_parser("rates", help="the catch-up model of the last failure (input of `ftops plan stages --policy "
                            "catch-up --catch-up FILE`): each failed unit's measured rates")
    _dir(rates)
    rates.add_argument("--arrival-times", required=True, metavar="S,S,...",
                       help="seconds after the failure at which each replacement node is expected, comma-separated")
    _json_always(rates)
    rates.set_defaults(func=_rates)

    ver = usub.add_parser("verify", help="committed tables against the failure-free reference")
    _dir(ver)
    ver.add_argument("--json", action="store_true")
    ver.set_defaults(func=_verify)

    rec = usub.add_parser("recover", help="execute a staged recovery schedule (ftops plan stages --json) on a units deployment")
    _recover_arguments(rec)
    rec.set_defaults(func=_recover)
    add_old_name(sub, "recover", "units recover", _recover_arguments, _recover)

    from spark_jobs.cli.recovery_bench import register_bench

    register_bench(groups["bench"])


def _recover_arguments(rec) -> None:
    add_pipeline_arguments(rec)
    rec.add_argument("--schedule", type=Path, required=True, help="`ftops plan stages ... --json` output")
    _dir(rec)
    rec.add_argument("--prefix", default="recovery", type=name_flag("application name prefix"),
                     help="application names (and their folders): PREFIX-s<stage>-<node>")
    rec.add_argument("--timeout-s", type=flag(PositiveSeconds), default=600.0, help="deadline of each capacity wait (default 600)")
    rec.add_argument("--wait-recovered-s", type=flag(Seconds), default=300.0,
                     help="after the last stage, wait up to this long for every query to be available again")
    add_lease_arguments(rec)
    rec.add_argument("--json", action="store_true")


def unit_cost(text: str) -> str:
    """``--cost``: ``measured``, or ``declared:X`` with X a share of a node in (0, 1], checked when parsed
    (before the deployment is read).

    >>> unit_cost("declared:0.25")
    'declared:0.25'
    """
    if text == "measured":
        return text
    kind, sep, share = text.partition(":")
    if kind != "declared" or not sep:
        raise argparse.ArgumentTypeError(f"expected 'measured' or 'declared:X' with 0 < X <= 1, got {text!r}")
    flag(PositiveFraction)(share)
    return text


def _json_always(parser) -> None:
    """``--json`` on a command whose result is a JSON document anyway: accepted like everywhere, and errors
    become JSON documents too."""
    parser.add_argument("--json", action="store_true", help="the output is JSON either way; errors become JSON documents too")


def _dir(parser) -> None:
    add_renamed_flag(parser, "--deployment-dir", "--dir", type=path_flag, default=DEFAULT_DIR,
                     help="the deployment folder (default %(default)s)")


def _pipeline(parser) -> None:
    """``--workload NAME`` / ``--pipeline REF`` (default the smartcity sample) and ``--param``."""
    add_pipeline_arguments(parser)
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pipeline parameter (repeatable)")


def _ref(args: argparse.Namespace) -> str:
    return pipeline_ref(args) if (args.workload or args.pipeline) else DEFAULT_PIPELINE


def _check_pipeline(args: argparse.Namespace, root: Path) -> None:
    """A pipeline named on the command line must be the one the deployment runs."""
    from spark_jobs.recovery_units.deployment import load

    if not (args.workload or args.pipeline):
        return
    dep = load(root)
    if load_pipeline(pipeline_ref(args)).ref != load_pipeline(dep.pipeline).ref:
        raise InputError(f"--pipeline: the deployment in {dep.root} runs {dep.pipeline}, not {pipeline_ref(args)}")


def _deploy(args: argparse.Namespace) -> int:
    from spark_jobs.recovery_units.runtime import DeployConfig, deploy

    ref = _ref(args)
    config = DeployConfig(root=args.deployment_dir or state_path("units", pipeline_label(ref)), pipeline=ref, params=args.param,
                          placement=args.placement, input=args.input, master=args.master, master_ui=args.master_ui,
                          cluster_state=None if args.master else args.state_dir, trigger_s=args.trigger_s,
                          backlog_s=args.backlog_s, feed=False if args.no_feed else None, timeout_s=args.timeout_s)
    dep = deploy(config)
    if args.json:
        print_json(dep)
    else:
        print(f"deployed {len(dep.units.unit_ids())} units of {dep.workload.name} in {len(dep.apps)} applications "
              f"under {dep.root}")
        print_table(["application", "units"], [[a.name, " ".join(a.units)] for a in dep.apps.values()])
    return 0


def _status(args: argparse.Namespace) -> int:
    from spark_jobs.recovery_units.runtime import units_status

    doc = units_status(args.deployment_dir)
    if args.json:
        print_json(doc)
        return 0
    files = ", ".join(f"{name} {n}" for name, n in doc["input_files"].items()) or "none"
    print(f"{doc['root']} ({doc['pipeline']}): feed {'running' if doc['feed_running'] else 'stopped'}, input files: {files}")
    print_table(["unit", "app", "domain", "running", "batch", "watermark", "last progress (s ago)", "cost"],
                [[u["unit"], u["app"] or "-", u["domain"] or "-", "yes" if u["running"] else "NO", u["batch_id"],
                  u["watermark_ms"], u["last_progress_age_s"], u["cost"]] for u in doc["units"]])
    for f in doc["failures"]:
        print(f"failure at {time.strftime('%H:%M:%S', time.localtime(f['time']))}: domain {f['domain'] or '-'}, "
              f"apps {', '.join(f['apps']) or '-'}, units {', '.join(f['units'])}")
    return 0


def _split(text: str, what: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise InputError(f"--{what}: name at least one")
    return items


def _start(args: argparse.Namespace) -> int:
    from spark_jobs.recovery_units.runtime import start_units

    record = start_units(args.deployment_dir, _split(args.units, "units"), args.app, wait=not args.no_wait, timeout_s=args.timeout_s)
    state = "submitted" if args.no_wait else "running"
    if args.json:
        print_json({"app": record.name, "units": list(record.units), "state": state, "pid": record.pid})
    else:
        print(f"{record.name}: {' '.join(record.units)} ({state}, pid {record.pid})")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from spark_jobs.recovery_units.runtime import stop_apps

    stopped = stop_apps(args.deployment_dir, None if args.all else _split(args.app, "app"), all_apps=args.all)
    if args.json:
        print_json({"stopped": list(stopped)})
    else:
        print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def _kill(args: argparse.Namespace) -> int:
    from spark_jobs.recovery_units.runtime import kill_apps, kill_domain

    if args.fault != "host-down" and not args.domain:
        raise InputError("--fault: a partition cuts a failure domain off the network; give --domain")
    failure = (kill_domain(args.deployment_dir, args.domain, args.fault) if args.domain
               else kill_apps(args.deployment_dir, _split(args.app, "app")))
    if args.json:
        print_json(failure)
    else:
        print(f"killed {', '.join(failure.workers + failure.apps) or 'nothing'}; failed units: {', '.join(failure.units) or 'none'}")
    return 0


def _topology(args: argparse.Namespace) -> int:
    from spark_jobs.pipeline.loading import load_workload
    from spark_jobs.pipeline.units import UnitTopology

    print_json(UnitTopology(load_workload(_ref(args), args.param)).topology_document())
    return 0


def _problem(args: argparse.Namespace) -> int:
    from spark_jobs.recovery_units.deployment import load
    from spark_jobs.recovery_units.recovery import last_failure, unit_costs

    dep = load(args.deployment_dir)
    failure = last_failure(args.deployment_dir)
    print_json(dep.units.problem(failure.units, unit_costs(args.deployment_dir, args.cost)))
    return 0


def _rates(args: argparse.Namespace) -> int:
    from spark_jobs.recovery_units.rates import catch_up_model
    from spark_jobs.recovery_units.recovery import check_arrival_times, last_failure

    times = check_arrival_times(args.arrival_times, "--arrival-times")
    failure = last_failure(args.deployment_dir)
    print_json(catch_up_model(args.deployment_dir, failure.time, [0.0, *times], units=failure.units))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from spark_jobs.recovery_units.verification import verify

    check = verify(args.deployment_dir)
    if args.json:
        print_json(check)
    else:
        print_table(["unit", "closed by", "closed until", "rows", "expected", "lost", "duplicated", "unexpected"],
                    [[u["unit"], u["closed_by"] or "-", u["closed_until_ms"], u["rows"], u["expected_rows"], u["lost_rows"],
                      u["duplicated_rows"], u["unexpected_rows"]] for u in check.units])
    return 1 if check.lost_rows or check.duplicated_rows else 0


def _recover(args: argparse.Namespace) -> int:
    from spark_jobs.recovery_units.recovery import execute_schedule, load_schedule

    _check_pipeline(args, args.deployment_dir)
    schedule = load_schedule(args.schedule, args.deployment_dir)
    with held_lease(args, "recovery"):
        report = execute_schedule(args.deployment_dir, schedule, prefix=args.prefix, timeout_s=args.timeout_s,
                                  wait_recovered_s=args.wait_recovered_s, progress=Progress("recover"))
    if args.json:
        print_json(report)
    else:
        print_table(["stage", "event", "units", "capacity ready (s)", "running (s)"],
                    [[s.stage, s.event, " ".join(s.units) or "-", s.capacity_ready_s, s.running_s] for s in report.stages])
        print_table(["query", "available again after (s)"], [[q, v] for q, v in report.query_recovered_s.items()])
        print(f"lost rows {report.lost_rows}, duplicated rows {report.duplicated_rows}")
    return 0
