"""A failure domain's loss injected by the job itself: its driver kills its own executors on the domain's
hosts and keeps them off those hosts until capacity returns (issue 14, item 4).

Problem: a drill must fail a domain on clusters ftops did not start (another team's standalone cluster,
YARN, Kubernetes), where ftops has no worker processes to kill and no right to. What every cluster
manager offers the application itself is its own executors.

Method: every stream ftops runs (primary, replica) starts an :class:`ExecutorFaultWatcher` in its driver.
:func:`request_domain_down` writes ``<output>/_faults/request.json``: the domain, its hosts (from the
failure-domain map of :func:`load_domain_map`, host -> domain as configured, or Kubernetes zone labels read
into the same map) and a request id. Every ``interval_s`` the watcher reads it; while a domain is down it
asks the driver's own REST API (``/api/v1/applications/<id>/executors``) for the active executors on those
hosts and kills them with ``SparkContext.killExecutors``, a developer API every coarse-grained scheduler
backend implements (standalone, YARN, Kubernetes) under static allocation: it lowers the application's
executor target, so the cluster manager does not start replacements; one that appears on a down host
anyway is killed at the next poll. :func:`request_domain_up` ends the fault: the watcher asks for the
executors it killed back (``SparkContext.requestTotalExecutors``: the survivors plus the killed), and
the cluster manager places them wherever it has capacity. Every action is appended to ``<output>/_faults/applied.jsonl``; the requester
waits for its id there (:func:`wait_applied`).

Limits: executors only; the driver and the cluster's own daemons keep running (the fault the users' jobs
see, not a host crash); dynamic allocation must be off (Spark refuses ``killExecutors`` with it); the
request file must be visible to the driver (the output folder, as every ftops stream's).

Example::

    request_domain_down(Path("out/primary"), "rack-a", ["10.0.0.5", "10.0.0.6"])  # -> request id
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ft_core.errors import ExternalError, InputError
from ft_core.input.names import check_name
from spark_jobs.runtime.atomic_json import write_json
from spark_jobs.runtime.waiting import wait_for

REQUEST_FILE = Path("_faults") / "request.json"
APPLIED_FILE = Path("_faults") / "applied.jsonl"


def load_domain_map(path: Path, field: str = "--domains") -> dict[str, str]:
    """A failure-domain map: worker host (as the executors report it, or a worker id) -> domain, JSON or
    YAML (``{"10.0.0.5": "rack-a", "10.0.0.6": "rack-a", "10.0.1.5": "rack-b"}``); InputError otherwise.
    The same file serves ``ftops job register --domains`` and ``ftops faults domain-down --domains``."""
    from ft_core.input.documents import read_document

    doc = read_document(path, field)
    if not isinstance(doc, dict) or not doc or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        raise InputError(f"{field}: expected a mapping of worker host (or worker id) to failure domain name",
                         field=field)
    blank = next((k for k, v in doc.items() if not k.strip() or not v.strip()), None)
    if blank is not None:  # an empty host matches no executor, an empty domain names none
        raise InputError(f"{field}: {blank!r}: a worker host and its failure domain must not be empty", field=field)
    for domain in doc.values():  # hosts are as the executors report them; domains are names ftops gives out
        check_name(domain, "failure domain", field)
    return doc


def hosts_of(domains: dict[str, str], domain: str) -> list[str]:
    """The hosts of ``domain`` in a failure-domain map; InputError naming the known domains otherwise."""
    hosts = sorted(h for h, d in domains.items() if d == domain)
    if not hosts:
        raise InputError(f"--domain: {domain!r} is not in the failure-domain map (known: "
                         f"{', '.join(sorted(set(domains.values())))})", field="--domain")
    return hosts


class FaultRequest(BaseModel):
    id: str
    action: Literal["down", "up"]
    domain: str
    hosts: list[str] = Field(default_factory=list)
    written_at: float


def request_domain_down(output: Path, domain: str, hosts: list[str]) -> str:
    """Ask the run writing to ``output`` to lose its executors on ``hosts``; returns the request id."""
    return _request(output, FaultRequest(id=uuid.uuid4().hex, action="down", domain=domain, hosts=hosts,
                                         written_at=time.time()))


def request_domain_up(output: Path) -> str:
    """End the run's domain fault: it asks for the executors it killed back; returns the request id."""
    current = read_request(output)
    if current is None or current.action != "down":
        raise InputError(f"--output: no domain of the run at {output} is down", field="--output")
    return _request(output, FaultRequest(id=uuid.uuid4().hex, action="up", domain=current.domain,
                                         written_at=time.time()))


def _request(output: Path, request: FaultRequest) -> str:
    write_json(Path(output) / REQUEST_FILE, request)
    return request.id


def read_request(output: Path) -> FaultRequest | None:
    path = Path(output) / REQUEST_FILE
    return FaultRequest.model_validate_json(path.read_text()) if path.exists() else None


def applied(output: Path) -> list[dict]:
    """What the run's driver did, oldest first: ``{"id", "action", "domain", "executors", "at"}``."""
    path = Path(output) / APPLIED_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_applied(output: Path, request_id: str, timeout_s: float) -> dict:
    """The driver's first record of ``request_id``. When none comes (no driver runs), the request is
    withdrawn, so that no later driver applies a fault nobody is waiting for, and ExternalError says so."""
    try:
        record = wait_for(lambda: next((a for a in applied(output) if a["id"] == request_id), None),
                          timeout_s=timeout_s, interval_s=0.5,
                          what=f"the driver writing to {output} to apply the fault (is the run alive?); "
                               "the request was withdrawn")
    except ExternalError:
        current = read_request(output)
        if current is not None and current.id == request_id:
            (Path(output) / REQUEST_FILE).unlink(missing_ok=True)
        raise
    if record["action"] == "error":
        raise ExternalError(f"the driver writing to {output} could not apply the fault: {record['error']}")
    return record


def active_executors(ui: str, app_id: str | None = None) -> list[dict]:
    """``[{"id", "host"}]``: the application's active executors (not its driver), as its UI lists them."""
    from spark_jobs.discovery.rest_client import ApplicationApi, SparkRestApi, select_application

    api = SparkRestApi(ui, timeout_s=10)
    listed = ApplicationApi(api, select_application(api, app_id)).executors()
    return [{"id": e["id"], "host": e["hostPort"].rsplit(":", 1)[0]} for e in listed
            if e["id"] != "driver" and e.get("isActive", True)]


def domains_of_run(output: Path, domains: dict[str, str]) -> dict[str, int]:
    """Failure domain -> executors of the run writing to ``output`` on its hosts (from the driver's UI,
    which the run names in ``_run.json``); executors on hosts the map lacks are not counted."""
    run = json.loads((Path(output) / "_run.json").read_text())
    if not run.get("ui"):
        raise ExternalError(f"the run at {output} names no driver UI (_run.json): its executors cannot be listed")
    counts: dict[str, int] = {}
    for e in active_executors(run["ui"], run.get("app_id")):
        if e["host"] in domains:
            counts[domains[e["host"]]] = counts.get(domains[e["host"]], 0) + 1
    return counts


class ExecutorFaultWatcher:
    """In a driver: applies ``<output>/_faults/request.json`` to the application's own executors."""

    def __init__(self, spark, output: Path, interval_s: float = 1.0):
        self._sc = spark.sparkContext
        self.output = Path(output)
        self.interval_s = interval_s
        self._handled: str | None = None
        self._down: FaultRequest | None = None
        self._killed: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ftops-executor-faults", daemon=True)

    def start(self) -> ExecutorFaultWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll()
            except Exception as exc:  # the job must outlive a failed injection; the requester sees the error
                self._record(self._handled or "?", None, "error", [], error=f"{type(exc).__name__}: {exc}")

    def poll(self) -> None:
        request = read_request(self.output)
        if request is not None and request.id != self._handled:
            self._handled = request.id
            if request.action == "down":
                self._down = request
                self._record(request.id, request.domain, "down", self._kill(request.hosts))
            else:
                self._down = None
                killed = sorted(self._killed)
                self._record(request.id, request.domain, "up", killed, requested_total=self._request_back())
            return
        if self._down is not None:
            again = self._kill(self._down.hosts)
            if again:  # the cluster manager put an executor back on a down host
                self._record(self._down.id, self._down.domain, "down-again", again)

    def _kill(self, hosts: list[str]) -> list[str]:
        ids = [e["id"] for e in self._executors() if e["host"] in hosts and e["id"] not in self._killed]
        if ids:
            self._sc._jsc.sc().killExecutors(self._jvm.PythonUtils.toSeq(self._java_list(ids)))
            self._killed.update(ids)
        return ids

    def _request_back(self) -> int:
        """Ask for the survivors plus the killed as the application's total: killing lowered its target
        to what was left (or to 0, where it had none), so adding to it could ask for too few."""
        if not self._killed:
            return 0
        alive = [e for e in self._executors() if e["id"] not in self._killed]
        total = len(alive) + len(self._killed)
        no_locality = self._jvm.PythonUtils.toScalaMap(self._jvm.java.util.HashMap())
        self._sc._jsc.sc().requestTotalExecutors(total, 0, no_locality)
        self._killed.clear()
        return total

    @property
    def _jvm(self):
        return self._sc._jvm

    def _java_list(self, items: list[str]):
        jlist = self._jvm.java.util.ArrayList()
        for item in items:
            jlist.add(item)
        return jlist

    def _executors(self) -> list[dict]:
        if self._sc.uiWebUrl is None:
            raise ExternalError("the driver's UI is off (spark.ui.enabled=false): its executors cannot be listed")
        return active_executors(self._sc.uiWebUrl, self._sc.applicationId)

    def _record(self, request_id: str, domain: str | None, action: str, executors: list[str], **extra) -> None:
        path = self.output / APPLIED_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"id": request_id, "action": action, "domain": domain, "executors": executors, "at": time.time(),
                 **extra}
        with path.open("a") as fh:
            fh.write(json.dumps(entry) + "\n")
