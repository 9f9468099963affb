"""Hosts on one machine: network namespaces on a private bridge (issue 14's multi-host test cluster).

Problem: failures that matter on a real cluster cross a network: a host that stops answering, a rack
cut off while its processes keep running. On loopback neither exists (a killed process's port answers
"connection refused" at once, and nothing can be cut), so ftops's local clusters could only show the
first, and only by killing processes.

Model: each *host* is a Linux network namespace with its own address on a bridge; the machine itself
(the root namespace) is one more host on it, the *gateway* address, where ftops, Airflow, PostgreSQL and
the drivers run. Processes are started in a host with ``ip netns exec`` (:func:`exec_prefix`). Faults:

- :func:`cut` (a *network partition*): the host's link goes down; its processes keep running, and every
  connection to or from it times out instead of being refused; :func:`restore` heals it;
- :func:`separate` (a partition between one host and this machine only): the host keeps reaching the other
  hosts, but nothing passes between it and the gateway; :func:`rejoin` heals it;
- :func:`kill_host` (a *host down*): every process in the namespace is killed and the link cut, so
  the host answers nothing at all, as a powered-off machine.

Addresses come from 198.18.0.0/15 (RFC 2544's benchmarking range, never routed): ``198.18.<subnet>.0/24``
per network, the gateway ``.1``, hosts from ``.2``. A network claims its subnet by creating its bridge
(``ftopsbr<subnet>``): the kernel refuses a second bridge of that name, so concurrent clusters (test
workers, several checkouts) never share one. Needs root and iproute2; :func:`teardown` removes every
namespace, link and the bridge, and is safe to call twice.

    >>> Host("rack-a-1", "ftops7-rack-a-1", "198.18.7.3", "ftops7h3").exec_prefix()
    ['ip', 'netns', 'exec', 'ftops7-rack-a-1']
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import asdict, dataclass, field

from ft_core.errors import ExternalError, InputError
from spark_jobs.runtime.processes import signal_group

FIRST_SUBNET, LAST_SUBNET = 1, 250  # 198.18.<n>.0/24; 198.18.0.0/24 is left alone


@dataclass(frozen=True)
class Host:
    """One host: its name (``master``, ``rack-a-1``), namespace, address and host-side link."""

    name: str
    netns: str
    address: str
    link: str

    def exec_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.netns]


@dataclass
class HostNetwork:
    """A bridge, its gateway (this machine) and the hosts on it, as recorded in a cluster's state."""

    subnet: int
    hosts: list[Host] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"ftopsbr{self.subnet}"

    @property
    def gateway(self) -> str:
        return f"198.18.{self.subnet}.1"

    def host(self, name: str) -> Host:
        found = next((h for h in self.hosts if h.name == name), None)
        if found is None:
            raise InputError(f"host {name!r}: not in this network (hosts: {', '.join(h.name for h in self.hosts)})")
        return found

    def to_dict(self) -> dict:
        return {"subnet": self.subnet, "hosts": [asdict(h) for h in self.hosts]}

    @classmethod
    def from_dict(cls, doc: dict) -> HostNetwork:
        return cls(doc["subnet"], [Host(**h) for h in doc["hosts"]])


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    # argv lists only: names come from ftops, never through a shell
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise ExternalError(f"ip {' '.join(args)}: {proc.stderr.strip() or f'exit {proc.returncode}'}")
    return proc


def check_can_create() -> None:
    """Namespaces need root and iproute2: InputError saying so, before anything is created."""
    if shutil.which("ip") is None:
        raise InputError("--network namespaces: the `ip` command (iproute2) is not installed")
    if os.geteuid() != 0:
        raise InputError("--network namespaces: creating network namespaces needs root")


def create_network(subnet: int | None = None) -> HostNetwork:
    """A new bridge with this machine on it as the gateway; ``subnet`` None takes the first free one."""
    check_can_create()
    candidates = [subnet] if subnet is not None else range(FIRST_SUBNET, LAST_SUBNET + 1)
    for n in candidates:
        if not FIRST_SUBNET <= n <= LAST_SUBNET:
            raise InputError(f"--subnet: must be in {FIRST_SUBNET}-{LAST_SUBNET} (198.18.<subnet>.0/24), got {n}")
        net = HostNetwork(n)
        if _ip("link", "add", net.bridge, "type", "bridge", check=False).returncode == 0:
            try:
                _ip("addr", "add", f"{net.gateway}/24", "dev", net.bridge)
                _ip("link", "set", net.bridge, "up")
            except ExternalError:
                teardown(net)
                raise
            return net
    raise InputError(f"--subnet: 198.18.{candidates[0]}.0/24 is taken (bridge exists); choose another"
                     if subnet is not None else "no free 198.18.<n>.0/24 subnet: remove stale ftopsbr* bridges")


def add_host(net: HostNetwork, name: str) -> Host:
    """A new namespace with the next address, linked to the bridge, loopback up."""
    index = len(net.hosts) + 2
    if index > 254:
        raise InputError(f"host {name!r}: the network 198.18.{net.subnet}.0/24 is full")
    host = Host(name, f"ftops{net.subnet}-{name}", f"198.18.{net.subnet}.{index}", f"ftops{net.subnet}h{index}")
    peer = f"ftops{net.subnet}n{index}"
    _ip("netns", "add", host.netns)
    net.hosts.append(host)  # recorded before the links exist: teardown removes a half-made host too
    _ip("link", "add", host.link, "type", "veth", "peer", "name", peer)
    _ip("link", "set", peer, "netns", host.netns)
    _ip("link", "set", host.link, "master", net.bridge, "up")
    _ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", peer)
    _ip("-n", host.netns, "link", "set", peer, "up")
    _ip("-n", host.netns, "link", "set", "lo", "up")
    return host


def cut(host: Host) -> None:
    """A network partition: the host's link goes down; its processes keep running."""
    _ip("link", "set", host.link, "down")


def restore(host: Host) -> None:
    """Heal a partition: the link comes back up."""
    _ip("link", "set", host.link, "up")


def separate(host: Host, gateway: str) -> None:
    """A partition between ``host`` and this machine alone (the gateway: where ftops, Airflow and the drivers run):
    the host drops every packet from the gateway and routes none to it, while it keeps reaching every other host.
    Policy rules in the host's namespace, ahead of its local table (else packets to the host's own address would
    be delivered before any rule saw them); :func:`rejoin` removes them."""
    for selector in ("from", "to"):
        _ip("-n", host.netns, "rule", "add", "pref", str(_SEPARATE_PREF), selector, gateway, "blackhole")
    _ip("-n", host.netns, "rule", "add", "pref", str(_LOCAL_PREF), "lookup", "local")
    _ip("-n", host.netns, "rule", "del", "pref", "0", "lookup", "local")


def rejoin(host: Host, gateway: str) -> None:
    """Heal :func:`separate` (safe to call when the host is not separated)."""
    if "lookup local" in _ip("-n", host.netns, "rule", "show", "pref", str(_LOCAL_PREF)).stdout:  # moved by separate
        _ip("-n", host.netns, "rule", "add", "pref", "0", "lookup", "local")
        _ip("-n", host.netns, "rule", "del", "pref", str(_LOCAL_PREF), "lookup", "local")
    for selector in ("from", "to"):
        _ip("-n", host.netns, "rule", "del", "pref", str(_SEPARATE_PREF), selector, gateway, "blackhole", check=False)


_SEPARATE_PREF, _LOCAL_PREF = 1, 2


def pids(host: Host) -> list[int]:
    """The processes running in the host's namespace."""
    proc = _ip("netns", "pids", host.netns, check=False)
    return [int(p) for p in proc.stdout.split()] if proc.returncode == 0 else []


def _kill_all(host: Host) -> list[int]:
    """SIGKILL every process in the host's namespace (one that exits meanwhile is left alone)."""
    killed = pids(host)
    for pid in killed:
        signal_group(pid, signal.SIGKILL)
    return killed


def kill_host(host: Host) -> list[int]:
    """A host down: SIGKILL everything in its namespace and cut its link (it answers nothing)."""
    killed = _kill_all(host)
    cut(host)
    return killed


def teardown(net: HostNetwork) -> None:
    """Kill what still runs in the hosts, delete their links and namespaces and the bridge (idempotent)."""
    for host in net.hosts:
        _kill_all(host)
        _ip("link", "del", host.link, check=False)  # deleting one end of a veth pair deletes both
        _ip("netns", "del", host.netns, check=False)
    _ip("link", "del", net.bridge, check=False)
