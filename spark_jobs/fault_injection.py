"""Fault injection into a running Spark application from a fault profile (thesis 002, Sec. 3.1).

Problem: drills and the redundancy benchmark need the thesis's faults in a real job: timing faults
(GC pauses, a slow node: exponential time between faults, Gaussian magnitude), link outages,
crashes, and correlated failures of a failure domain, reproducible from a profile and a seed
(:mod:`ft_core.redundancy.fault_profile`). A slowdown must be *executor-local*: a GC pause or a slow node hits
one executor (every task on it), not a key. Otherwise a speculative copy of a slowed task would be
slowed as much as the original and redundancy could not help.

Method: :func:`ft_core.redundancy.fault_profile.fault_schedule` draws the events; this module applies them
from outside the job, to the processes of the application's executors on this host:

- ``slowdown`` (magnitude M ms): ``SIGSTOP`` the executor's JVM, ``SIGCONT`` it M ms later. That
  is a stop-the-world pause of the whole executor, which is exactly what a full GC pause is: every
  task on it stalls, while tasks elsewhere, speculative copies of its tasks included, run on. The
  job needs no change and pays nothing when no fault is injected.
- ``link_outage`` (duration D): approximated by a pause of D (the executor neither sends nor
  receives: heartbeats, shuffle blocks, results). Unlike a real outage its computation stops too.
- ``crash``: ``SIGKILL`` of the executor's JVM. The standalone master starts a replacement, so
  the profile's ``down_s`` is Spark's to decide and is ignored here.
- ``domain``: :func:`spark_jobs.cluster.standalone.kill_domain` (needs the cluster's state folder); with
  ``down_s``, as many workers join the domain again after ``down_s`` (replacement capacity).

Targets: the profile's ``NAME[i]`` hits the i-th executor of the application (by numeric executor
id, ``i mod n``, so a profile written for more tasks than there are executors applies all its
faults); ``NAME`` without an index hits an executor drawn per fault (seeded). Executors are found
in ``/proc`` (``CoarseGrainedExecutorBackend ... --app-id <app>``), so the injector must run on the
executors' host (the local clusters of this project). The application is given by id or by a
run's output folder, whose ``_run.json`` is re-read, so that injection follows a job resubmitted
from its checkpoint under a new application id. Two processes mapped to one executor may overlap:
a pause count per process keeps it stopped until the last pause ends. Whatever happens, every
paused executor is resumed before :func:`inject` returns. Time 0 is the start of the injection.
"""

from __future__ import annotations

import heapq
import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from ft_core.errors import InputError
from ft_core.redundancy.fault_profile import FaultEvent, FaultProfile, fault_schedule
from spark_jobs.runtime.processes import pid_alive, same_process, start_time

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
_REFRESH_S = 1.0  # executors are re-listed at most this often (and whenever a known one is gone)


@dataclass(frozen=True)
class Executor:
    id: str
    pid: int
    app_id: str
    started: float | None = None  # its start time: a signal never reaches a process that took over the pid


def find_executors(app_id: str) -> list[Executor]:
    """The live executor JVMs of ``app_id`` on this host, by numeric executor id."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if EXECUTOR_CLASS.encode() not in args:
            continue
        opts = dict(zip(args, args[1:]))
        pid = int(cmdline.parent.name)
        started = start_time(pid)  # None: it exited meanwhile (a record without it would trust the bare pid)
        if opts.get(b"--app-id", b"").decode() == app_id and pid_alive(pid) and started is not None:
            found.append(Executor(opts[b"--executor-id"].decode(), pid, app_id, started))
    return sorted(found, key=lambda e: (len(e.id), e.id))


def app_of_run(output: Path) -> str | None:
    """The application id a run (``ftops workload run --output``) recorded in its ``_run.json``."""
    path = Path(output) / "_run.json"
    try:
        return json.loads(path.read_text()).get("app_id")
    except (FileNotFoundError, json.JSONDecodeError):  # not started yet, or being replaced
        return None


class AppliedFault(BaseModel):
    """One scheduled fault and what became of it (times in seconds from the injection's start)."""

    time_s: float
    kind: str
    target: str
    magnitude_ms: float | None = None
    duration_s: float | None = None
    outcome: Literal["applied", "skipped"]
    applied_at_s: float | None = None
    executor: str | None = None
    pid: int | None = None
    app_id: str | None = None
    note: str | None = None


class InjectionReport(BaseModel):
    profile: str
    seed: int
    duration_s: float
    started_at: float
    elapsed_s: float
    faults: list[AppliedFault]
    applied: dict[str, int]
    skipped: int
    paused_s: dict[str, float]


class _Executors:
    """The application's executors, re-listed when stale; resolves a fault's target to one."""

    def __init__(self, app: Callable[[], str | None], seed: int):
        self.app, self.seed = app, seed
        self.listed_at, self.executors = -1e9, []
        self.rngs: dict[str, random.Random] = {}

    def current(self) -> list[Executor]:
        fresh = time.monotonic() - self.listed_at < _REFRESH_S
        if not fresh or not all(same_process(e.pid, e.started) for e in self.executors):
            app = self.app()
            self.executors = find_executors(app) if app else []
            self.listed_at = time.monotonic()
        return self.executors

    def resolve(self, target: str) -> Executor | None:
        executors = self.current()
        if not executors:
            return None
        _, _, index = target.partition("[")
        if index:
            return executors[int(index.rstrip("]")) % len(executors)]
        rng = self.rngs.setdefault(target, random.Random(f"{self.seed}\x00{target}"))
        return rng.choice(executors)


class _Pauses:
    """SIGSTOP/SIGCONT with a count per process, so overlapping pauses end with the last one."""

    def __init__(self):
        self.count: dict[int, int] = {}
        self.since: dict[int, float] = {}
        self.total: dict[str, float] = {}
        self.names: dict[int, str] = {}
        self.started: dict[int, float | None] = {}

    def pause(self, executor: Executor) -> bool:
        if self.count.get(executor.pid, 0) == 0:
            if not _signal(executor.pid, executor.started, signal.SIGSTOP):
                return False
            self.since[executor.pid], self.started[executor.pid] = time.monotonic(), executor.started
            self.names[executor.pid] = f"{executor.app_id}/{executor.id}"
        self.count[executor.pid] = self.count.get(executor.pid, 0) + 1
        return True

    def resume(self, pid: int) -> None:
        if self.count.get(pid, 0) == 0:
            return
        self.count[pid] -= 1
        if self.count[pid] == 0:
            _signal(pid, self.started[pid], signal.SIGCONT)
            name = self.names[pid]
            self.total[name] = self.total.get(name, 0.0) + time.monotonic() - self.since.pop(pid)

    def forget(self, pid: int) -> None:
        """A paused process was killed: nothing to resume."""
        if self.count.pop(pid, 0):
            name = self.names[pid]
            self.total[name] = self.total.get(name, 0.0) + time.monotonic() - self.since.pop(pid)

    def resume_all(self) -> None:
        for pid in [p for p, n in self.count.items() if n > 0]:
            self.count[pid] = 1
            self.resume(pid)


def inject(profile: FaultProfile, *, duration_s: float, seed: int, app_id: str | None = None,
           output: Path | None = None, state_dir: Path | None = None, stop: threading.Event | None = None,
           log: Callable[[str], None] | None = None) -> InjectionReport:
    """Apply ``profile``'s faults for ``duration_s`` seconds to the application ``app_id`` (or the
    one a run in ``output`` is running, followed across resubmissions); returns what was applied."""
    if (app_id is None) == (output is None):
        raise InputError("inject: give exactly one of an application id or a run's output folder")
    if profile.domains and state_dir is None:
        raise InputError("--state-dir: the profile has domain faults; they need the cluster's state folder")
    events = fault_schedule(profile, duration_s, seed)
    executors = _Executors((lambda: app_id) if app_id else (lambda: app_of_run(output)), seed)
    run = _Run(events, executors, state_dir, stop or threading.Event(), log or (lambda _m: None))
    started = time.time()
    try:
        run.execute()
    finally:
        run.pauses.resume_all()  # never leave an executor stopped
        for thread in run.threads:
            thread.join(timeout=120)
    faults = run.applied
    kinds = sorted({f.kind for f in faults})
    return InjectionReport(profile=profile.name, seed=seed, duration_s=duration_s, started_at=started,
                           elapsed_s=time.time() - started, faults=faults,
                           applied={k: sum(f.kind == k and f.outcome == "applied" for f in faults) for k in kinds},
                           skipped=sum(f.outcome == "skipped" for f in faults),
                           paused_s={k: round(v, 3) for k, v in sorted(run.pauses.total.items())})


class _Run:
    """The action loop of one injection: faults at their times, resumes and restores after them."""

    def __init__(self, events: list[FaultEvent], executors: _Executors, state_dir: Path | None,
                 stop: threading.Event, log: Callable[[str], None]):
        self.executors, self.state_dir, self.stop, self.log = executors, state_dir, stop, log
        self.pauses = _Pauses()
        self.applied: list[AppliedFault] = []
        self.threads: list[threading.Thread] = []
        self.actions: list[tuple[float, int, str, object]] = [(e.time_s, i, "fault", e) for i, e in enumerate(events)]
        self.seq = len(events)
        heapq.heapify(self.actions)

    def execute(self) -> None:
        self.t0 = time.monotonic()
        while self.actions:
            at, _, action, payload = self.actions[0]
            if self.stop.wait(max(0.0, self.t0 + at - time.monotonic())):
                break
            heapq.heappop(self.actions)
            if action == "resume":
                self.pauses.resume(payload)
            else:
                self._fault(payload)

    def _later(self, at: float, action: str, payload: object) -> None:
        heapq.heappush(self.actions, (at, self.seq, action, payload))
        self.seq += 1

    def _fault(self, event: FaultEvent) -> None:
        now = time.monotonic() - self.t0
        base = dict(time_s=event.time_s, kind=event.kind, target=event.target, magnitude_ms=event.magnitude_ms,
                    duration_s=event.duration_s)
        if event.kind == "domain":
            self.applied.append(AppliedFault(**base, **self._domain(event), applied_at_s=now))
            return
        executor = self.executors.resolve(event.target)
        if executor is None:
            self.applied.append(AppliedFault(**base, outcome="skipped", note="no executor of the application on this host"))
            return
        done = self._crash(executor) if event.kind == "crash" else self._pause(executor, event)
        self.applied.append(AppliedFault(**base, outcome="applied" if done else "skipped", applied_at_s=now,
                                         executor=executor.id, pid=executor.pid, app_id=executor.app_id,
                                         note=None if done else "the executor exited before the fault"))

    def _pause(self, executor: Executor, event: FaultEvent) -> bool:
        length_s = event.magnitude_ms / 1000.0 if event.kind == "slowdown" else event.duration_s
        if not self.pauses.pause(executor):
            return False
        # counted from the stop itself: finding the executor (the master's API, the process table) can take a good
        # part of a short pause under load, and a CI run once measured 74 ms of a 500 ms one
        self._later(time.monotonic() - self.t0 + length_s, "resume", executor.pid)
        self.log(f"{event.kind}: executor {executor.id} (pid {executor.pid}) paused for {length_s * 1000:.0f} ms")
        return True

    def _crash(self, executor: Executor) -> bool:
        self.pauses.forget(executor.pid)
        self.log(f"crash: SIGKILL executor {executor.id} (pid {executor.pid})")
        return _signal(executor.pid, executor.started, signal.SIGKILL)

    def _domain(self, event: FaultEvent) -> dict:
        from spark_jobs.cluster.standalone import kill_domain

        try:
            victims = kill_domain(self.state_dir, event.target)
        except InputError as exc:
            return {"outcome": "skipped", "note": str(exc)}
        self.log(f"domain: killed {', '.join(v.name for v in victims)}")
        if event.duration_s is not None:
            thread = threading.Thread(target=self._restore, args=(event, victims), daemon=True)
            self.threads.append(thread)
            thread.start()
        return {"outcome": "applied", "note": f"killed {len(victims)} workers"}

    def _restore(self, event: FaultEvent, victims: list) -> None:
        """Replacement capacity: as many workers as were killed join the domain after ``down_s``."""
        from spark_jobs.cluster.standalone import add_worker

        if self.stop.wait(event.duration_s):
            return
        for v in victims:
            add_worker(self.state_dir, event.target, v.pool, port_base=min(x.port for x in victims),
                       ui_base=min(x.ui_port for x in victims))
        self.log(f"domain: {len(victims)} workers joined {event.target} again")


class Injection:
    """:func:`inject` in a background thread (drills and benchmarks inject while they measure)."""

    def __init__(self, profile: FaultProfile, **kwargs):
        self.stop_event = threading.Event()
        self.report: InjectionReport | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(profile, kwargs), name="fault-injection", daemon=True)

    def _run(self, profile: FaultProfile, kwargs: dict) -> None:
        try:
            self.report = inject(profile, stop=self.stop_event, **kwargs)
        except BaseException as exc:  # surfaced by stop()
            self.error = exc

    def start(self) -> Injection:
        self._thread.start()
        return self

    def stop(self) -> InjectionReport:
        """Stop injecting (resuming every paused executor) and return the report."""
        self.stop_event.set()
        self._thread.join(timeout=180)
        if self.error is not None:
            raise self.error
        return self.report


def _signal(pid: int, started: float | None, sig: int) -> bool:
    """``sig`` to the executor, if ``pid`` is still that process; whether it was sent."""
    if not same_process(pid, started):
        return False
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False
