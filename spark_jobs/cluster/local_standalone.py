"""The cluster seam (:mod:`spark_jobs.cluster.seam`) on the standalone clusters ftops starts itself
(:mod:`spark_jobs.cluster.standalone`): daemons on loopback, or each on a network-namespace host of its own.

Losing a domain (``host-down``) SIGKILLs its workers with their executors (on namespace hosts: every process
of the host, and its link cut, so it answers nothing); ``partition`` (namespace hosts only) cuts the hosts'
links while everything keeps running. The undo document records, per lost worker, its pool, cores, memory and
port, so :func:`give_back_standalone` can bring the domain back to as many live workers of that pool as it had
(new processes, or new hosts, in the same domain; the first free ports from the lost ones') or heal the links.

    # cluster = local_cluster(Path(".state/spark"))
    # lost = cluster.lose("rack-a", "host-down"); ...; give_back_standalone(lost.undo)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ft_core.errors import InputError
from spark_jobs.cluster.seam import FaultMode, LostDomain


class LocalStandalone:
    """ftops's own standalone cluster on loopback (its state folder names every daemon)."""

    kind = "standalone"
    faults: tuple[str, ...] = ("host-down",)

    def __init__(self, state_dir: Path, uis: dict[str, str] | None = None):
        self.state_dir = Path(state_dir).resolve()
        self.uis = uis or {}  # pool -> master web UI as the job's deployment names it

    def _state(self):
        from spark_jobs.cluster.standalone import require_state

        return require_state(self.state_dir)

    def capacity(self) -> dict[str, int]:
        """Live primary workers per failure domain."""
        out: dict[str, int] = {}
        for w in self._state().workers("primary"):
            if w.domain and w.alive():
                out[w.domain] = out.get(w.domain, 0) + 1
        return dict(sorted(out.items()))

    def domains(self) -> list[str]:
        return sorted({w.domain for w in self._state().workers("primary") if w.domain})

    def executor_domains(self, app: str, pool: str = "primary") -> dict[str, int]:
        """Failure domain -> executors of the running application named ``app`` (or of id ``app``; each worker's own
        JSON)."""
        from spark_jobs.cluster.web_ui import master_state
        from spark_jobs.cluster.worker_ui import executors_by_worker

        state = self._state()
        ui = self.uis.get(pool) or state.master_ui(pool)
        ids = [a["id"] for a in master_state(ui).get("activeapps", [])
               if app in (a.get("name"), a.get("id")) and a.get("state") == "RUNNING"]
        out: dict[str, int] = {}
        for worker, executors in executors_by_worker(ui, state.workers(pool)):
            n = sum(1 for e in executors if e.get("appid") in ids)
            if n:
                out[worker.domain] = out.get(worker.domain, 0) + n
        return out

    def free_cores(self, outside: str) -> int | None:
        """Cores free now on the live primary workers outside the domain ``outside``, as the master counts them: a
        lost executor is relaunched there at once (the application still asks for its cores). Workers ftops did not
        start (no domain) are not counted; None when the master does not answer (it only informs a forecast)."""
        from ft_core.errors import ExternalError
        from spark_jobs.cluster.master_room import alive_workers, free_cores
        from spark_jobs.cluster.web_ui import master_state

        state = self._state()
        domains = {(w.host, w.port): w.domain for w in state.workers("primary")}
        try:
            alive = alive_workers(master_state(self.uis.get("primary") or state.master_ui("primary")))
        except ExternalError:
            return None
        return free_cores(w for w in alive if domains.get((w.get("host"), w.get("port"))) not in (None, outside))

    def watched_outside(self, domain: str) -> dict[str, tuple[int, float | None]]:
        """The live workers outside ``domain`` (name -> pid and start time)."""
        return {w.name: (w.pid, w.started) for w in self._state().workers() if w.domain != domain and w.alive()}

    def check_blast_radius(self, domain: str) -> None:
        """A drill never takes the only standby capacity left."""
        standby = self._state().workers("standby")
        if standby and all(w.domain == domain for w in standby):
            raise InputError(f"blast radius: failure domain {domain!r} holds all of the standby capacity; a drill must "
                             "leave standby workers for the replica and for recovery")

    def undo_of(self, domain: str, fault: FaultMode) -> dict[str, Any]:
        """The document that gives ``domain`` back: its live workers now (pool, cores, memory, ports)."""
        self._require_fault(fault)
        workers = [w for w in self._state().workers(domain=domain) if w.alive()]
        if not workers:
            raise InputError(f"failure domain {domain!r} has no running worker (domains: {', '.join(self.domains())})")
        return {"seam": "standalone", "state_dir": str(self.state_dir), "domain": domain, "fault": fault,
                "workers": [_worker_record(w) for w in workers]}

    def lose(self, domain: str, fault: FaultMode) -> LostDomain:
        from spark_jobs.cluster.standalone import kill_domain, partition_domain

        undo = self.undo_of(domain, fault)
        hit = (partition_domain if fault == "partition" else kill_domain)(self.state_dir, domain)
        return LostDomain(domain=domain, fault=fault, hit=[p.name for p in hit], undo=undo)

    def shared_cpus(self, demand: float) -> float | None:
        """Every daemon runs on this machine (a namespace host has no CPUs of its own): the share of its CPUs that
        ``demand`` restarted executor cores get beside the work running here now (:mod:`ft_core.fleet.cpu_share`)."""
        import os

        from ft_core.fleet.cpu_share import fair_share_cpus
        from spark_jobs.cluster.host_cpu import idle_cpus

        return fair_share_cpus(float(os.cpu_count() or 1), idle_cpus(), demand)

    def _require_fault(self, fault: str) -> None:
        if fault not in self.faults:
            raise InputError(f"fault {fault!r}: a {self.kind} cluster can take {', '.join(self.faults)} "
                             "(a partition needs a cluster on namespace hosts)")


class NamespaceHosts(LocalStandalone):
    """ftops's own standalone cluster with every daemon on a network-namespace host of its own."""

    kind = "namespace hosts"
    faults = ("host-down", "partition")


def local_cluster(state_dir: Path, uis: dict[str, str] | None = None) -> LocalStandalone:
    """The seam of the cluster in ``state_dir``: on namespace hosts or on loopback, as it was started."""
    from spark_jobs.cluster.standalone import require_state

    state = require_state(Path(state_dir))
    return (NamespaceHosts if state.network else LocalStandalone)(Path(state_dir), uis)


def _worker_record(w) -> dict[str, Any]:
    from spark_jobs.cluster.standalone import worker_resources

    cores, memory = worker_resources(w)
    return {"name": w.name, "pool": w.pool, "cores": cores, "memory": memory, "port": w.port, "ui_port": w.ui_port}


def give_back_standalone(undo: dict[str, Any], timeout_s: float = 120.0) -> list[str]:
    """Heal a partition, or start workers until each pool of the domain has as many live workers as the undo
    document recorded (idempotent); returns what was done."""
    from spark_jobs.cluster.standalone import add_worker, heal_domain, require_state

    if not undo.get("workers"):
        return []
    state_dir, domain = Path(undo["state_dir"]), undo["domain"]
    if undo.get("fault") == "partition":
        return [f"healed {p.name}" for p in heal_domain(state_dir, domain)]
    done = []
    for pool in sorted({w["pool"] for w in undo["workers"]}):
        lost = [w for w in undo["workers"] if w["pool"] == pool]
        live = [w for w in require_state(state_dir).workers(pool, domain) if w.alive()]
        for record in lost[len(live):]:
            proc = add_worker(state_dir, domain, pool, record["cores"], record["memory"], timeout_s=timeout_s,
                              port_base=min(w["port"] for w in lost), ui_base=min(w["ui_port"] for w in lost))
            done.append(f"{proc.name} joined {domain}")
    return done
