"""The cluster seam (:mod:`spark_jobs.cluster.seam`) on any cluster manager Spark supports: the job's own
driver loses its executors on a failure domain's hosts and asks for them back
(:mod:`spark_jobs.runtime.executor_faults`: ``SparkContext.killExecutors`` / ``requestTotalExecutors``, which
standalone, YARN and Kubernetes implement under static allocation).

The failure domains come from the job's failure-domain map (worker host -> domain); capacity is counted in
the primary's executors per domain. Only ``host-down`` exists here (the job's executors die; the cluster's
daemons and other jobs are untouched, and nothing can be cut off a network ftops does not own). The undo
document names the runs' output folders (where each driver reads its fault requests) and the domain;
:func:`give_back_engine_native` writes the "up" request there, which a driver started again later reads too.

    # cluster = EngineNative({"10.0.0.5": "rack-a", "10.0.1.5": "rack-b"}, ["/jobs/alerts/primary"])
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ft_core.errors import ExternalError, InputError
from spark_jobs.cluster.seam import FaultMode, LostDomain


class EngineNative:
    """Failure domains of a cluster ftops did not start, lost by the job's own drivers."""

    kind = "engine-native"

    def __init__(self, domains: dict[str, str], outputs: list[str], apply_timeout_s: float = 60.0):
        self.domains_map, self.outputs, self.apply_timeout_s = domains, outputs, apply_timeout_s

    def capacity(self) -> dict[str, int]:
        """Executors of the primary (the first run) per failure domain, from its driver's UI."""
        from spark_jobs.runtime.executor_faults import domains_of_run

        try:
            return dict(sorted(domains_of_run(Path(self.outputs[0]), self.domains_map).items()))
        except (OSError, ValueError):  # no run yet (no _run.json): no capacity seen
            return {}

    def executor_domains(self, app: str, pool: str = "primary") -> dict[str, int]:
        return self.capacity()

    def shared_cpus(self, demand: float) -> float | None:
        return None  # the executors' hosts are not this machine: their cores are taken as CPUs of their own

    def free_cores(self, outside: str) -> int | None:
        return None  # the cluster manager places the executors the driver asks back: its free capacity is its own

    def watched_outside(self, domain: str) -> dict[str, tuple[int, float | None]]:
        return {}  # no daemon of another domain is ftops's to watch: the second-domain probe has nothing here

    def check_blast_radius(self, domain: str) -> None:
        if domain not in set(self.domains_map.values()):
            raise InputError(f"failure domain {domain!r}: the failure-domain map has "
                             f"{', '.join(sorted(set(self.domains_map.values())))}")

    def undo_of(self, domain: str, fault: FaultMode) -> dict[str, Any]:
        if fault != "host-down":
            raise InputError(f"fault {fault!r}: on a cluster ftops did not start the job can only lose its executors "
                             "(host-down); a partition needs ftops's own namespace hosts")
        self.check_blast_radius(domain)
        return {"seam": "engine-native", "domain": domain, "outputs": self.outputs, "fault": fault}

    def lose(self, domain: str, fault: FaultMode) -> LostDomain:
        from spark_jobs.runtime.executor_faults import hosts_of, request_domain_down, wait_applied

        undo = self.undo_of(domain, fault)
        hosts = hosts_of(self.domains_map, domain)
        hit = []
        for output in self.outputs:
            record = wait_applied(Path(output), request_domain_down(Path(output), domain, hosts), self.apply_timeout_s)
            hit += [f"executor {e}" for e in record["executors"]]
        return LostDomain(domain=domain, fault=fault, hit=hit, undo=undo)


def give_back_engine_native(undo: dict[str, Any], timeout_s: float = 60.0) -> list[str]:
    """Ask each run's executors back (idempotent: a run whose domain is not down is left alone); a run whose
    driver is gone reads the request when it is started again."""
    from spark_jobs.runtime.executor_faults import read_request, request_domain_up, wait_applied
    from spark_jobs.runtime.launch import driver_running

    done = []
    for output in map(Path, undo["outputs"]):
        current = read_request(output)
        if current is None or current.action != "down" or current.domain != undo["domain"]:
            continue
        request = request_domain_up(output)
        if not driver_running(output):
            done.append(f"{output.name}: executors asked back (read when its driver starts again)")
            continue
        try:
            record = wait_applied(output, request, timeout_s)
        except ExternalError as exc:
            raise ExternalError(f"giving {undo['domain']} back to the run at {output}: {exc}") from None
        done.append(f"{output.name}: {len(record['executors'])} executors asked back")
    return done
