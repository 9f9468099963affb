"""One seam between ftops's experiments and the cluster a job runs on: lose a failure domain, give its
capacity back, say where executors run (issue 34, item 5; issue 35).

Problem: drills, staged recovery and the reconciler must break and mend clusters of different kinds:
the local standalone clusters ftops starts (daemons on loopback, or each on a network-namespace host of its
own, where a domain can also be cut off the network) and clusters ftops did not start (another team's
standalone cluster, YARN, Kubernetes), where the job's own driver kills its executors on the domain's hosts
(:mod:`spark_jobs.runtime.executor_faults`). Callers name this interface, never an implementation's
internals, and every fault comes with an *undo document*: plain JSON, written to the fault journal before the
fault is applied, from which :func:`give_back` restores the capacity in a later process that knows nothing
else (the reconciler after the injector died).

The interface (:class:`Cluster`):

- ``capacity()``: live workers (or, engine-native, executors) per failure domain: the snapshot a drill takes
  before and compares after (a drill leaves the domains it found);
- ``executor_domains(app, pool)``: failure domain -> executors of an application: where it runs;
- ``free_cores(outside)``: cores free now on the live workers outside a domain (None: the cluster manager does not
  say): where a lost executor is relaunched at once, before any capacity comes back;
- ``watched_outside(domain)``: what the second-domain-lost probe watches;
- ``check_blast_radius(domain)``: refuse a domain whose loss would take what must survive;
- ``undo_of(domain, fault)``: the undo document, before anything is touched;
- ``lose(domain, fault)``: apply the fault; returns what it did (names) and the undo document, completed;
- ``shared_cpus(demand)``: the CPUs ``demand`` restarted executor cores share, measured now (None: each core is a
  CPU of its own, as on hosts that advertise their own CPUs): what a fleet recovery's jobs catch up on;
- :func:`give_back` (module level, from the undo document alone): capacity back *in the same failure domain*
  (a rack whose power returns, a zone's instance group replacing its instances in that zone), the partition
  healed, or the executors asked back. Idempotent: it brings the domain back to what the document recorded,
  so a second call (the reconciler racing the drill's own restore) adds nothing.

Implementations: :class:`~spark_jobs.cluster.local_standalone.LocalStandalone` (ftops's own daemons on
loopback), :class:`~spark_jobs.cluster.local_standalone.NamespaceHosts` (each daemon on a host of its own:
``host-down`` powers hosts off, ``partition`` cuts them off) and
:class:`~spark_jobs.cluster.engine_native.EngineNative` (any cluster manager: the driver kills its own
executors). Kubernetes and YARN would implement the same eight methods and a ``give_back`` with their own APIs
(docs/spark.md, "One seam for clusters").

    >>> undo = {"seam": "standalone", "state_dir": "/no/such/cluster", "domain": "rack-a", "fault": "host-down",
    ...         "workers": []}
    >>> give_back(undo)  # nothing was recorded as lost: nothing to give back
    []
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from ft_core.errors import InputError

FaultMode = Literal["host-down", "partition"]


class LostDomain(BaseModel):
    """What losing a domain did: who was hit, and the completed undo document."""

    domain: str
    fault: FaultMode
    hit: list[str]
    undo: dict[str, Any]


class Cluster(Protocol):
    """What experiments ask of a cluster (module docstring)."""

    kind: str

    def capacity(self) -> dict[str, int]: ...

    def executor_domains(self, app: str, pool: str = "primary") -> dict[str, int]: ...

    def free_cores(self, outside: str) -> int | None: ...

    def watched_outside(self, domain: str) -> dict[str, tuple[int, float | None]]: ...

    def check_blast_radius(self, domain: str) -> None: ...

    def undo_of(self, domain: str, fault: FaultMode) -> dict[str, Any]: ...

    def lose(self, domain: str, fault: FaultMode) -> LostDomain: ...

    def shared_cpus(self, demand: float) -> float | None: ...


def cluster_of(dep) -> Cluster:
    """The cluster a job's deployment (:class:`~spark_jobs.runtime.job_streams.JobDeployment`) runs on: the
    local cluster ftops started (its state folder), else the job's own driver with its failure-domain map."""
    if dep.cluster_state:
        from spark_jobs.cluster.local_standalone import local_cluster

        return local_cluster(Path(dep.cluster_state), {"primary": dep.primary_ui, "standby": dep.standby_ui})
    if dep.domains:
        from spark_jobs.cluster.engine_native import EngineNative

        return EngineNative(dep.domains, [str(dep.primary_output)])
    raise InputError("the job's deployment has neither a local cluster state nor a failure-domain map; register it "
                     "with --domains FILE (worker host -> domain) to drill it")


def give_back(undo: dict[str, Any], timeout_s: float = 120.0) -> list[str]:
    """Undo a lost domain from its undo document alone (see the module docstring); returns what was done."""
    seam = undo.get("seam")
    if seam == "standalone":
        from spark_jobs.cluster.local_standalone import give_back_standalone

        return give_back_standalone(undo, timeout_s)
    if seam == "engine-native":
        from spark_jobs.cluster.engine_native import give_back_engine_native

        return give_back_engine_native(undo, timeout_s)
    raise InputError(f"undo document: unknown seam {seam!r} (expected standalone or engine-native)")
