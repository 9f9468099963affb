"""``ftops cluster up|down|status|kill-domain|add-worker`` (registered through the
``ftops.commands`` entry point, so ft_core's CLI never imports this package)."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from ft_core.cli.output import print_json, print_table
from ft_core.errors import InputError
from ft_core.home import path_flag
from ft_core.input.names import check_name, name_flag
from ft_core.input.quantities import MemorySize, NodeCount, Port, PositiveNodeCount, Subnet, check, flag

DEFAULT_STATE = "$FTOPS_HOME/spark"  # resolved by path_flag when a command runs


def register(sub, groups) -> None:
    cluster = sub.add_parser("cluster", help="a local Spark standalone cluster: primary (failure domains) and standby pools")
    csub = cluster.add_subparsers(dest="cluster_command", required=True, parser_class=type(cluster))
    up = csub.add_parser("up", help="start both masters and their workers, wait until all are alive")
    up.add_argument("--workers", default="rack-a:1,rack-b:1", help="primary workers per failure domain (default rack-a:1,rack-b:1)")
    up.add_argument("--standby-workers", type=flag(NodeCount), default=1)
    up.add_argument("--cores", type=flag(PositiveNodeCount), default=1, help="cores per worker")
    up.add_argument("--memory", type=flag(MemorySize), default="1g", help="memory per worker (default 1g)")
    up.add_argument("--primary-port", type=flag(Port), default=7077)
    up.add_argument("--primary-ui", type=flag(Port), default=8090)
    up.add_argument("--standby-port", type=flag(Port), default=7078)
    up.add_argument("--standby-ui", type=flag(Port), default=8091)
    up.add_argument("--network", choices=("loopback", "namespaces"), default="loopback",
                    help="loopback (default): every daemon on 127.0.0.1; namespaces: the masters and each worker on a "
                         "host of their own (a network namespace on a private bridge, 198.18.<subnet>.0/24; needs root), "
                         "this machine the drivers' host")
    up.add_argument("--subnet", type=flag(Subnet), help="with --network namespaces: 198.18.<subnet>.0/24 (default: the first free one)")
    up.add_argument("--json", action="store_true", help="print what was started (masters, UIs, processes with pids) as JSON")
    up.set_defaults(func=_up)
    down = csub.add_parser("down", help="stop everything the cluster started, drivers included")
    down.add_argument("--json", action="store_true", help='print {"stopped": [process names]}')
    down.set_defaults(func=_down)
    status = csub.add_parser("status", help="workers, domains, cores and applications from the masters' JSON")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=_status)
    kill = csub.add_parser("kill-domain", help="a domain fault: SIGKILL every worker (and its executors) of a failure "
                           "domain, or cut it off the network")
    kill.add_argument("domain", type=name_flag("failure domain"))
    kill.add_argument("--fault", choices=("host-down", "partition"), default="host-down",
                      help="host-down (default): kill (on namespaces: its hosts go down whole); partition: cut its hosts "
                           "off the network while they keep running (namespaces only; `ftops cluster heal-domain` ends it)")
    kill.add_argument("--json", action="store_true", help="print the killed workers as JSON")
    kill.set_defaults(func=_kill)
    heal = csub.add_parser("heal-domain", help="end a network partition: restore the links of a domain's hosts")
    heal.add_argument("domain", type=name_flag("failure domain"))
    heal.add_argument("--json", action="store_true", help="print the healed workers as JSON")
    heal.set_defaults(func=_heal)
    add = csub.add_parser("add-worker", help="replacement capacity: start one worker in a domain and wait for it")
    add.add_argument("--domain", required=True, type=name_flag("failure domain"))
    add.add_argument("--pool", choices=("primary", "standby"), default="primary")
    add.add_argument("--cores", type=flag(PositiveNodeCount), default=1)
    add.add_argument("--memory", type=flag(MemorySize), default="1g", help="the worker's memory (default 1g)")
    add.add_argument("--json", action="store_true", help="print the new worker (name, pid, ports, log) as JSON")
    add.set_defaults(func=_add)
    for p in (up, down, status, kill, heal, add):
        p.add_argument("--state-dir", type=path_flag, default=DEFAULT_STATE, help="where pids, logs and work dirs live (default %(default)s)")


def parse_domains(text: str) -> tuple[tuple[str, int], ...]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, count = part.partition(":")
        if not name or not count.isdigit() or int(count) < 1:
            raise InputError(f"--workers: expected 'domain:count,...' with counts >= 1, got {part!r}")
        out.append((check_name(name, "failure domain", "--workers"), check(PositiveNodeCount, count, "--workers")))
    if not out:
        raise InputError("--workers: at least one domain is needed")
    return tuple(out)


def _up(args: argparse.Namespace) -> int:
    from spark_jobs.cluster.standalone import ClusterConfig, cluster_up

    config = ClusterConfig(state_dir=args.state_dir, primary_domains=parse_domains(args.workers),
                           standby_workers=args.standby_workers, worker_cores=args.cores, worker_memory=args.memory,
                           primary_port=args.primary_port, primary_ui=args.primary_ui,
                           standby_port=args.standby_port, standby_ui=args.standby_ui, network=args.network,
                           subnet=args.subnet)
    state = cluster_up(config)
    if args.json:
        print_json(_started(state))
        return 0
    print(f"primary {state.master_url('primary')} (UI {state.master_ui('primary')}), "
          f"standby {state.master_url('standby')} (UI {state.master_ui('standby')}); "
          f"{len(state.workers())} workers alive; state in {state.state_dir}")
    return 0


def _down(args: argparse.Namespace) -> int:
    from spark_jobs.cluster.standalone import cluster_down

    stopped = cluster_down(args.state_dir)
    if args.json:
        print_json({"stopped": stopped})
        return 0
    print(f"stopped {len(stopped)} processes" + (f": {', '.join(stopped)}" if stopped else " (nothing was running)"))
    return 0


def _status(args: argparse.Namespace) -> int:
    from spark_jobs.cluster.standalone import cluster_status

    report = cluster_status(args.state_dir)
    if args.json:
        print_json(report)
        return 0
    for pool, info in report["pools"].items():
        print(f"{pool}: {info['master']} ({info['status']}), UI {info['ui']}")
        print_table(["worker", "domain", "state", "cores", "used"],
                    [[w["id"], w["domain"], w["state"], w["cores"], w["cores_used"]] for w in info["workers"]])
        for app in info["apps"]:
            print(f"  app {app['id']} {app['name']} cores={app['cores']} {app['state']}")
    return 0


def _kill(args: argparse.Namespace) -> int:
    from spark_jobs.cluster.standalone import kill_domain, partition_domain

    victims = (partition_domain if args.fault == "partition" else kill_domain)(args.state_dir, args.domain)
    if args.json:
        print_json({"domain": args.domain, "fault": args.fault, "killed": [asdict(v) for v in victims]})
        return 0
    done = "cut off" if args.fault == "partition" else "killed"
    print(f"{done} {len(victims)} workers of {args.domain}: {', '.join(v.name for v in victims)}")
    return 0


def _heal(args: argparse.Namespace) -> int:
    from spark_jobs.cluster.standalone import heal_domain

    healed = heal_domain(args.state_dir, args.domain)
    if args.json:
        print_json({"domain": args.domain, "healed": [asdict(v) for v in healed]})
        return 0
    print(f"restored the links of {len(healed)} workers of {args.domain}")
    return 0


def _add(args: argparse.Namespace) -> int:
    from spark_jobs.cluster.standalone import add_worker

    proc = add_worker(args.state_dir, args.domain, args.pool, args.cores, args.memory)
    if args.json:
        print_json(asdict(proc))
        return 0
    print(f"worker {proc.name} alive in {args.domain}")
    return 0


def _started(state) -> dict:
    """``cluster up --json``: each pool's master and web UI, and every process started (pid, ports, log)."""
    return {"state_dir": state.state_dir,
            "pools": {pool: {"master": state.master_url(pool), "ui": state.master_ui(pool)} for pool in ("primary", "standby")},
            "network": state.network, "processes": [asdict(p) for p in state.processes]}
