"""A local Spark standalone cluster that ftops starts, inspects, breaks and stops.

Two pools on 127.0.0.1, both started from the pip-installed pyspark (which ships ``bin/spark-class``
but no ``start-master.sh``): a *primary* cluster whose workers carry a failure-domain label
(``rack-a``, ``rack-b``, ...) and a *standby* cluster with its own master, where replicas run.
Spark has no notion of failure domains, so the label lives in the project's state file and is joined
to the master's view by worker port.

Everything the cluster starts is recorded in ``<state_dir>/cluster.json`` (pids, ports, logs, work
dirs), each process in its own session so that a whole process tree can be signalled. ``down``
stops every recorded process by pid, drivers included; ``up`` after a crash removes stale state.
Master web UIs default to 8090/8091: 8080 belongs to Airflow.

With ``network="namespaces"`` (root only) every daemon runs on a host of its own
(:mod:`spark_jobs.cluster.netns`): the masters on ``master``, each worker on ``<domain>-<i>``, and this
machine, where the drivers run, is the network's gateway; a domain can then also be cut off the
network (:func:`partition_domain`), and killing it (:func:`kill_domain`) downs its hosts whole.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ft_core.errors import ExternalError, InputError
from ft_core.local_ports import port_taken
from ft_core.home import state_path
from spark_jobs.cluster import netns
from spark_jobs.cluster.master_room import alive_workers
from spark_jobs.cluster.web_ui import master_state, try_json
from spark_jobs.runtime.processes import own_group_alive, same_process, signal_own_group, start_time
from spark_jobs.runtime.waiting import wait_for, wait_while

HOST = "127.0.0.1"


class ClusterError(ExternalError):
    """The cluster did not reach the expected state (a daemon died, a master does not answer)."""


@dataclass(frozen=True)
class ClusterConfig:
    state_dir: Path = field(default_factory=lambda: state_path("spark"))
    primary_domains: tuple[tuple[str, int], ...] = (("rack-a", 1), ("rack-b", 1))
    standby_workers: int = 1
    worker_cores: int = 1
    worker_memory: str = "1g"
    primary_port: int = 7077
    primary_ui: int = 8090
    standby_port: int = 7078
    standby_ui: int = 8091
    worker_port_base: int = 7100
    worker_ui_base: int = 8100
    # The master declares a worker dead after this many seconds without a heartbeat (Spark: 60).
    worker_timeout_s: int = 10
    start_timeout_s: float = 90.0
    network: str = "loopback"  # or "namespaces": a host per daemon (spark_jobs.cluster.netns)
    subnet: int | None = None  # namespaces: 198.18.<subnet>.0/24 (None: the first free one)
    # Spark's external shuffle service on this port: shuffle files served by the worker, not the executor that
    # wrote them (an executor paused or lost does not hold up the reads). On loopback only the first primary
    # worker runs it: it listens on every address, so it serves the executors of every worker on the machine,
    # and losing that worker loses it for all (a benchmark's setting: `ftops bench redundancy --shuffle-service`;
    # workers added later, add_worker and give_back's, do not run one).
    shuffle_service_port: int | None = None


@dataclass
class Process:
    name: str
    role: str  # master | worker | driver
    pool: str  # primary | standby
    pid: int
    port: int
    ui_port: int
    log: str
    domain: str | None = None
    work_dir: str | None = None
    host: str = HOST  # the address it binds and advertises
    netns: str | None = None  # its network namespace (network="namespaces")
    started: float | None = None  # its start time: a pid reused by another process is not this one
    cores: int | None = None  # a worker's cores and memory (None: a state file written before they were recorded)
    memory: str | None = None

    def alive(self) -> bool:
        return same_process(self.pid, self.started)

    def running(self) -> bool:
        """It, or what is left of its process group (a driver's JVM whose launcher exited), runs."""
        return self.alive() or own_group_alive(self.pid, self.started)

    def signal(self, sig: int) -> None:
        """``sig`` to its process group, only while that group is still this process's."""
        signal_own_group(self.pid, self.started, sig)


@dataclass
class ClusterState:
    state_dir: str
    worker_timeout_s: int
    processes: list[Process] = field(default_factory=list)
    network: dict | None = None  # netns.HostNetwork.to_dict() when the daemons run on hosts of their own

    def master(self, pool: str) -> Process:
        return next(p for p in self.processes if p.role == "master" and p.pool == pool)

    def master_url(self, pool: str) -> str:
        master = self.master(pool)
        return f"spark://{master.host}:{master.port}"

    def master_ui(self, pool: str) -> str:
        """The web UI of ``pool``'s master (this cluster is ftops's own: loopback, or its master host)."""
        master = self.master(pool)
        return f"http://{master.host}:{master.ui_port}"

    def hosts(self) -> netns.HostNetwork | None:
        return netns.HostNetwork.from_dict(self.network) if self.network else None

    def driver_host(self) -> str | None:
        """Where executors call back a driver this machine runs: on a namespace network this machine's
        bridge address (the gateway), not loopback; None on loopback (the default applies)."""
        net = self.hosts()
        return net.gateway if net else None

    def driver_confs(self) -> dict[str, str]:
        """Spark confs of a driver this machine runs against the cluster (:meth:`driver_host`)."""
        host = self.driver_host()
        return {"spark.driver.host": host, "spark.driver.bindAddress": host} if host else {}

    def masters(self) -> dict[str, str]:
        """Its masters and web UIs, named as a job deployment names them (:func:`local_masters` before a start)."""
        return {"primary_master": self.master_url("primary"), "standby_master": self.master_url("standby"),
                "primary_ui": self.master_ui("primary"), "standby_ui": self.master_ui("standby")}

    def workers(self, pool: str | None = None, domain: str | None = None) -> list[Process]:
        return [p for p in self.processes if p.role == "worker" and (pool is None or p.pool == pool)
                and (domain is None or p.domain == domain)]

    def save(self) -> None:
        path = Path(self.state_dir) / "cluster.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(path)

    @classmethod
    def load(cls, state_dir: Path) -> ClusterState | None:
        path = Path(state_dir) / "cluster.json"
        if not path.exists():
            return None
        doc = json.loads(path.read_text())
        return cls(doc["state_dir"], doc["worker_timeout_s"], [Process(**p) for p in doc["processes"]], doc.get("network"))


def local_masters(config: ClusterConfig | None = None) -> dict[str, str]:
    """The masters and web UIs of a local cluster with ``config``'s ports (default: the local stack's), named
    as a job deployment names them (:class:`spark_jobs.runtime.job_streams.JobDeployment`)."""
    c = config or ClusterConfig(state_dir=Path("."))
    return {"primary_master": f"spark://{HOST}:{c.primary_port}", "standby_master": f"spark://{HOST}:{c.standby_port}",
            "primary_ui": f"http://{HOST}:{c.primary_ui}", "standby_ui": f"http://{HOST}:{c.standby_ui}"}


def spark_home() -> Path:
    """The pyspark package directory, which is a Spark distribution without the sbin start scripts."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("pyspark is not installed in this environment (run ./scripts/bootstrap.sh)")
    home = Path(list(spec.submodule_search_locations)[0])
    # Inside a spark-submitted driver pyspark is imported from pyspark.zip; spark-class sets SPARK_HOME.
    launched_from = Path(os.environ.get("SPARK_HOME", "/nonexistent"))
    if not (home / "bin" / "spark-class").exists() and (launched_from / "bin" / "spark-class").exists():
        home = launched_from
    if not (home / "bin" / "spark-class").exists():
        raise InputError(f"{home} has no bin/spark-class: the pyspark installation is incomplete")
    return home


def spark_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": HOST, "SPARK_NO_DAEMONIZE": "1"})
    env.update(extra or {})
    return env


def cluster_up(config: ClusterConfig) -> ClusterState:
    """Start both masters and all workers; wait until every worker is registered and alive."""
    state_dir = config.state_dir.resolve()
    existing = ClusterState.load(state_dir)
    if existing is not None:
        if any(p.alive() for p in existing.processes):
            raise InputError(f"a cluster from {state_dir} is already running; run `ftops cluster down` first")
        (state_dir / "cluster.json").unlink()  # stale state from a crash: every recorded pid is gone
    _check_config(config)
    state = ClusterState(str(state_dir), config.worker_timeout_s)
    if config.network == "namespaces":
        state.network = netns.create_network(config.subnet).to_dict()
    else:
        check_ports_free(config)
    (state_dir / "logs").mkdir(parents=True, exist_ok=True)
    try:
        state.save()  # the network is recorded before any host exists: `down` removes it whatever happens
        master_host = _new_host(state, "master")
        for pool, port, ui in (("primary", config.primary_port, config.primary_ui), ("standby", config.standby_port, config.standby_ui)):
            _start_master(state, pool, port, ui, master_host)
        slot = 0
        for domain, count in config.primary_domains:
            for _ in range(count):
                service = config.shuffle_service_port if slot == 0 or config.network == "namespaces" else None
                _start_worker(state, config, "primary", domain, slot, service)
                slot += 1
        for _ in range(config.standby_workers):
            _start_worker(state, config, "standby", "standby", slot)
            slot += 1
        wait_for_workers(state, state.workers(), timeout_s=config.start_timeout_s)
    except BaseException:
        stop_processes(state.processes)
        _remove_network(state)
        (state_dir / "cluster.json").unlink(missing_ok=True)
        raise
    return state


def _new_host(state: ClusterState, name: str) -> netns.Host | None:
    """On a namespace network, a new host called ``name`` (numbered if taken), recorded in the state."""
    net = state.hosts()
    if net is None:
        return None
    taken = {h.name for h in net.hosts}
    unique = next(f"{name}-{i}" for i in range(1, 1000) if f"{name}-{i}" not in taken) if name != "master" else name
    try:
        return netns.add_host(net, unique)
    finally:
        state.network = net.to_dict()
        state.save()


def _remove_network(state: ClusterState) -> None:
    net = state.hosts()
    if net is not None:
        netns.teardown(net)


def _check_config(config: ClusterConfig) -> None:
    if config.network not in ("loopback", "namespaces"):
        raise InputError(f"--network: loopback or namespaces, got {config.network!r}")
    if not config.primary_domains:
        raise InputError("primary workers: at least one failure domain with one worker is needed")
    for domain, count in config.primary_domains:
        if not domain or count < 1:
            raise InputError(f"primary workers: domain {domain!r} needs a name and at least one worker")
    if config.worker_cores < 1:
        raise InputError(f"worker cores: must be >= 1, got {config.worker_cores}")


def check_ports_free(config: ClusterConfig) -> None:
    """Every port the configuration needs can be bound on 127.0.0.1, else InputError naming it."""
    workers = sum(c for _, c in config.primary_domains) + config.standby_workers
    ports = [config.primary_port, config.primary_ui, config.standby_port, config.standby_ui]
    ports += [config.worker_port_base + i for i in range(workers)] + [config.worker_ui_base + i for i in range(workers)]
    ports += [config.shuffle_service_port] if config.shuffle_service_port else []
    if len(set(ports)) != len(ports):
        raise InputError(f"ports: the configured ports overlap: {sorted(ports)}")
    for port in ports:
        if port_taken(HOST, port):
            raise InputError(f"port {port} on {HOST} is in use; choose other ports or stop what holds it")


def _spawn(state: ClusterState, name: str, args: list[str], env: dict[str, str],
           host: netns.Host | None = None) -> tuple[int, str]:
    log = Path(state.state_dir) / "logs" / f"{name}.log"
    with open(log, "ab") as out:  # `ip netns exec` execs the command: the pid is the daemon's
        proc = subprocess.Popen([*(host.exec_prefix() if host else []), *args], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    return proc.pid, str(log)


def _start_master(state: ClusterState, pool: str, port: int, ui: int, host: netns.Host | None = None) -> None:
    cls = "org.apache.spark.deploy.master.Master"
    address = host.address if host else HOST
    env = spark_env({"SPARK_MASTER_OPTS": f"-Dspark.worker.timeout={state.worker_timeout_s}", "SPARK_LOCAL_IP": address})
    args = [str(spark_home() / "bin" / "spark-class"), cls, "--host", address, "--port", str(port), "--webui-port", str(ui)]
    pid, log = _spawn(state, f"master-{pool}", args, env, host)
    state.processes.append(Process(f"master-{pool}", "master", pool, pid, port, ui, log, host=address,
                                   netns=host.netns if host else None, started=start_time(pid)))
    state.save()


def _start_worker(state: ClusterState, config: ClusterConfig, pool: str, domain: str, slot: int,
                  shuffle_service_port: int | None = None) -> Process:
    port, ui = config.worker_port_base + slot, config.worker_ui_base + slot
    return start_worker(state, pool, domain, port, ui, config.worker_cores, config.worker_memory,
                        shuffle_service_port=shuffle_service_port)


def start_worker(state: ClusterState, pool: str, domain: str, port: int, ui: int, cores: int, memory: str,
                 host: str = HOST, shuffle_service_port: int | None = None) -> Process:
    """Start one worker process registered with ``pool``'s master, labelled with ``domain``, bound to
    ``host`` (another loopback address is another host to Spark: :mod:`spark_jobs.cluster.worker_hosts`);
    on a namespace network, on a new host of its own. With ``shuffle_service_port`` it runs Spark's external
    shuffle service there (:class:`ClusterConfig`)."""
    own = _new_host(state, domain)
    host = own.address if own else host
    name = f"worker-{pool}-{domain}-{port}" if host == HOST else f"worker-{pool}-{domain}-{host}-{port}"
    work_dir = Path(state.state_dir) / "work" / name
    work_dir.mkdir(parents=True, exist_ok=True)
    args = [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", "--host", host,
            "--port", str(port), "--webui-port", str(ui), "--cores", str(cores), "--memory", memory,
            "--work-dir", str(work_dir), state.master_url(pool)]
    # The worker heartbeats every timeout / 4 of *its own* spark.worker.timeout: without this it would
    # use Spark's 60 s (a heartbeat every 15 s) and the master would drop it as dead every few seconds.
    opts = f"-Dspark.worker.timeout={state.worker_timeout_s}"
    if shuffle_service_port:
        opts += f" -Dspark.shuffle.service.enabled=true -Dspark.shuffle.service.port={shuffle_service_port}"
    env = spark_env({"SPARK_WORKER_OPTS": opts})
    if host != HOST:  # the executors it launches inherit SPARK_LOCAL_IP: they bind to (and report) ``host`` too
        env["SPARK_LOCAL_IP"] = host
    pid, log = _spawn(state, name, args, env, own)
    proc = Process(name, "worker", pool, pid, port, ui, log, domain, str(work_dir), host, own.netns if own else None,
                   start_time(pid), cores, memory)
    state.processes.append(proc)
    state.save()
    return proc


def worker_resources(worker: Process) -> tuple[int, str]:
    """A worker's cores and memory (the defaults ftops starts workers with, for a state written before they were
    recorded)."""
    return worker.cores or 1, worker.memory or "1g"


def add_worker(state_dir: Path, domain: str, pool: str = "primary", cores: int = 1, memory: str = "1g",
               timeout_s: float = 60.0, port_base: int = 7100, ui_base: int = 8100, host: str = HOST) -> Process:
    """Replacement capacity: one new worker in ``domain`` bound to ``host``, waited for until the master
    lists it alive. Its ports are the first free ones on ``host`` from ``port_base`` and ``ui_base``
    (200 candidates each)."""
    state = require_state(state_dir)
    if state.network:  # a new host: every port is free on it
        port, ui = port_base, ui_base
    else:
        used = {p.port for p in state.processes} | {p.ui_port for p in state.processes}
        port = _free_port(range(port_base, port_base + 200), used, host)
        ui = _free_port(range(ui_base, ui_base + 200), used | {port}, host)
    proc = start_worker(state, pool, domain, port, ui, cores, memory, host)
    wait_for_workers(state, [proc], timeout_s=timeout_s)
    return proc


def restart_master(state_dir: Path, pool: str, down_s: float = 10.0, timeout_s: float = 120.0) -> Process:
    """SIGKILL ``pool``'s master, wait ``down_s``, start it again on the same host and ports (ftops's own chaos: a
    master lost mid-experiment); waits until it answers. Its workers register again by themselves."""
    import time

    state = require_state(state_dir)
    old = state.master(pool)
    old.signal(signal.SIGKILL)
    wait_while(old.alive, timeout_s=30)
    time.sleep(down_s)
    state.processes.remove(old)
    net = state.hosts()
    host = net.host("master") if net else None
    _start_master(state, pool, old.port, old.ui_port, host)
    wait_for(lambda: try_json(state.master_ui(pool) + "/json/") is not None, timeout_s=timeout_s,
             what=f"the {pool} master to answer again", error=ClusterError)
    return state.master(pool)


def kill_domain(state_dir: Path, domain: str) -> list[Process]:
    """A correlated failure: SIGKILL every worker of ``domain`` with its executors (its process group); on a
    namespace network its hosts go down whole (every process killed, links cut: they answer nothing)."""
    state = require_state(state_dir)
    victims = _domain_workers(state, domain)
    net = state.hosts()
    for p in victims:
        if net:
            netns.kill_host(_host_of(net, p))  # the worker, its executors and anything else on that host
        else:
            p.signal(signal.SIGKILL)
    return victims


def partition_domain(state_dir: Path, domain: str) -> list[Process]:
    """A network partition of ``domain`` (namespace networks only): its hosts' links are cut while their
    workers and executors keep running; :func:`heal_domain` restores them."""
    state = require_state(state_dir)
    net = _namespace_network(state, "a network partition")
    victims = _domain_workers(state, domain)
    for p in victims:
        netns.cut(_host_of(net, p))
    return victims


def heal_domain(state_dir: Path, domain: str) -> list[Process]:
    """Restore the links of ``domain``'s hosts after :func:`partition_domain`."""
    state = require_state(state_dir)
    net = _namespace_network(state, "healing a partition")
    healed = state.workers(domain=domain)
    for p in healed:
        netns.restore(_host_of(net, p))
    return healed


def separate_masters(state_dir: Path) -> None:
    """A network partition between this machine (ftops, Airflow, the drivers) and the masters' host (namespace
    networks only): the masters keep their workers, but nothing passes between them and this machine;
    :func:`rejoin_masters` heals it."""
    state = require_state(state_dir)
    net = _namespace_network(state, "a partition from the masters")
    netns.separate(net.host("master"), net.gateway)


def rejoin_masters(state_dir: Path) -> None:
    """Heal :func:`separate_masters`."""
    state = require_state(state_dir)
    net = _namespace_network(state, "healing a partition from the masters")
    netns.rejoin(net.host("master"), net.gateway)


def _namespace_network(state: ClusterState, what: str) -> netns.HostNetwork:
    net = state.hosts()
    if net is None:
        raise InputError(f"{what} needs a cluster on a namespace network (`--network namespaces`)")
    return net


def _domain_workers(state: ClusterState, domain: str) -> list[Process]:
    victims = [p for p in state.workers(domain=domain) if p.alive()]
    if not victims:
        known = sorted({p.domain for p in state.workers() if p.domain})
        raise InputError(f"failure domain {domain!r} has no running worker (domains: {', '.join(known)})")
    return victims


def _host_of(net: netns.HostNetwork, proc: Process) -> netns.Host:
    return next(h for h in net.hosts if h.netns == proc.netns)


def register_driver(state_dir: Path, name: str, pid: int, pool: str, log: str) -> None:
    """Record a driver process so that ``down`` stops it even if its JVM parent is gone."""
    state = require_state(state_dir)
    state.processes.append(Process(name, "driver", pool, pid, 0, 0, log, started=start_time(pid)))
    state.save()


def require_state(state_dir: Path) -> ClusterState:
    state = ClusterState.load(Path(state_dir).resolve())
    if state is None:
        raise InputError(f"no cluster state in {Path(state_dir).resolve()}; run `ftops cluster up` first")
    return state


def cluster_down(state_dir: Path) -> list[str]:
    """Stop everything recorded in the state (drivers first, then workers, then masters)."""
    state = ClusterState.load(Path(state_dir).resolve())
    if state is None:
        return []
    order = {"driver": 0, "worker": 1, "master": 2}
    stopped = stop_processes(sorted(state.processes, key=lambda p: order[p.role]))
    _remove_network(state)
    (Path(state.state_dir) / "cluster.json").unlink(missing_ok=True)
    return stopped


def stop_processes(processes: list[Process], grace_s: float = 10.0) -> list[str]:
    """SIGTERM each process group, SIGKILL what is left after ``grace_s``; returns the names stopped."""
    alive = [p for p in processes if p.running()]
    for p in alive:
        p.signal(signal.SIGTERM)
    wait_while(lambda: any(p.running() for p in alive), timeout_s=grace_s)
    for p in alive:
        if p.running():  # the ones still there (checking also reaps the ones that exited)
            p.signal(signal.SIGKILL)
    return [p.name for p in alive]


def master_json(ui: str, timeout_s: float = 5.0) -> dict:
    """The master's state (``/json/``) at web UI ``ui`` (``ClusterState.master_ui``): workers, cores, applications."""
    try:
        return master_state(ui, timeout_s=timeout_s)
    except ExternalError as exc:
        raise ClusterError(str(exc)) from None


def wait_for_workers(state: ClusterState, workers: list[Process], timeout_s: float) -> None:
    """Poll the masters' real state until each of ``workers`` is registered and ALIVE."""
    pending = "masters not up"
    watched = [p for p in state.processes if p.role == "master"] + workers

    def ready() -> bool:
        nonlocal pending
        for p in watched:
            if not p.alive():
                raise ClusterError(f"{p.name} (pid {p.pid}) exited during start-up; see {p.log}")
        try:
            pending = _pending_workers(state, workers)
        except ClusterError as exc:
            pending = str(exc)
        return not pending

    wait_for(ready, timeout_s=timeout_s, what=lambda: f"the cluster to be ready ({pending})", error=ClusterError)


def wait_workers_gone(state: ClusterState, workers: list[Process], timeout_s: float) -> None:
    """Poll the masters until none of ``workers`` (killed) is listed ALIVE: until then the master may still place
    an executor on one."""
    def gone() -> bool:
        alive = {pool: _alive_workers(state, pool) for pool in {p.pool for p in workers}}  # one ask per master
        return not any((p.host, p.port) in alive[p.pool] for p in workers)

    wait_for(gone, timeout_s=timeout_s, what=f"{', '.join(p.name for p in workers)} to leave the master",
             error=ClusterError)


def _pending_workers(state: ClusterState, workers: list[Process]) -> str:
    missing = []
    for pool in {p.pool for p in workers}:
        alive = _alive_workers(state, pool)
        missing += [p.name for p in workers if p.pool == pool and (p.host, p.port) not in alive]
    return ", ".join(f"{m} not registered" for m in missing)


def _alive_workers(state: ClusterState, pool: str) -> set[tuple[str, int]]:
    """(host, port) of every worker ``pool``'s master lists ALIVE."""
    return {(w["host"], w["port"]) for w in alive_workers(master_json(state.master_ui(pool)))}


def cluster_status(state_dir: Path) -> dict:
    """Workers (with domains), cores, applications and executors, as the masters see them."""
    state = require_state(state_dir)
    report = {"pools": {}}
    for pool in ("primary", "standby"):
        doc = master_json(state.master_ui(pool))
        domains = {(p.host, p.port): p.domain for p in state.workers(pool)}
        report["pools"][pool] = {
            "master": state.master_url(pool),
            "ui": state.master_ui(pool),
            "status": doc.get("status"),
            "workers": [
                {"id": w["id"], "domain": domains.get((w["host"], w["port"]), "unknown"), "state": w["state"], "cores": w["cores"],
                 "cores_used": w["coresused"], "memory_mb": w["memory"], "port": w["port"]}
                for w in doc["workers"]
            ],
            "apps": [
                {"id": a["id"], "name": a["name"], "cores": a["cores"], "state": a["state"]} for a in doc.get("activeapps", [])
            ],
        }
    return report


def _free_port(candidates: range, used: set[int], host: str = HOST) -> int:
    port = next((p for p in candidates if p not in used and _port_free(p, host)), None)
    if port is None:
        raise ClusterError(f"no free port in {candidates.start}-{candidates.stop - 1} on {host} for a new worker")
    return port


def _port_free(port: int, host: str = HOST) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
            return True
        except OSError:
            return False
