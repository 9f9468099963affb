"""A fault profile (thesis 002's fault model: slowdowns, crashes, domains) applied to a running job, journaled like
every fault ftops injects (issue 35, item 1): a drill's optional profile, and ``ftops faults inject --job``.

The whole injection is one journal entry of kind ``executors_paused``, written before the first fault: its undo
continues every executor JVM of the application on this host (SIGCONT; harmless to one that runs) and gives back
every domain the profile may take down (their undo documents, taken before). The injector resumes what it paused
and restores its domains itself when it ends; the entry is closed then. If the process dies mid-injection, the
entry is orphaned with its lease and undone by whoever finds it.

    # report = journaled_injection(store, "alerts", holder, 7, *checked_profile("profiles/gc.yaml", 60, 1),
    #                              output=Path("/jobs/alerts/primary"))
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ft_core.input.quantities import PositiveSeconds, Seed, check


def checked_profile(profile_path: str, duration_s: Any, seed: Any, field: str = "fault_duration_s") -> tuple[Any, float, int]:
    """The profile, its duration and seed, validated (InputError naming the Param) before anything is touched."""
    from ft_core.redundancy.fault_profile import fault_schedule, load_fault_profile

    duration, seed = check(PositiveSeconds, duration_s, field), check(Seed, seed, "fault_seed")
    profile = load_fault_profile(profile_path)
    fault_schedule(profile, duration, seed, field=field)  # too many faults: refused before any
    return profile, duration, seed


def journaled_injection(store, job: str, holder: str, experiment_id: int | None, profile, duration: float, seed: int, *,
                        output: Path | None = None, app_id: str | None = None, state_dir: Path | None = None,
                        stop: threading.Event | None = None, store_factory: Callable | None = None,
                        log: Callable[[str], None] = lambda _m: None):
    """Journal, apply for ``duration`` s, close: ``profile`` on the application (``app_id``, or the run writing to
    ``output``); returns the injection report (:class:`spark_jobs.fault_injection.InjectionReport`). With
    ``store_factory`` a guard stops the injection early when experiments are halted or the lease is lost."""
    from ft_core.errors import InputError
    from ft_core.redundancy.fault_profile import fault_schedule
    from spark_jobs.cluster.local_standalone import local_cluster
    from spark_jobs.cluster.seam import give_back
    from spark_jobs.fault_injection import inject

    domains = sorted({e.target for e in fault_schedule(profile, duration, seed) if e.kind == "domain"})
    if domains and state_dir is None:
        raise InputError("fault profile: its domain faults need a cluster ftops started (its state folder); this job "
                         "runs on another cluster: drill its domains with a drill instead")
    undo = {"seam": "processes", "app_id": app_id, "output": None if output is None else str(output),
            "domains": [local_cluster(state_dir).undo_of(d, "host-down") for d in domains] if domains else []}
    fault = store.open_fault(job, "fault_profile", experiment_id, holder, "executors_paused", profile.name, undo,
                             undo_within_s=duration + 300)
    store.fault_applied(fault)
    stop = stop or threading.Event()
    guard = _Guard(store_factory, job, holder, stop, log) if store_factory else None
    try:
        report = inject(profile, duration_s=duration, seed=seed, app_id=app_id, output=output, state_dir=state_dir,
                        stop=stop, log=log)
    finally:
        if guard is not None:
            guard.close()
    given = [done for doc in undo["domains"] for done in give_back(doc)]  # a domain fault without a duration stays down
    store.close_fault(fault, holder, "; ".join([f"injection ended: {sum(report.applied.values())} faults applied, "
                                                "every executor continued", *given]))
    return report


class _Guard:
    """Stops an injection (sets ``stop``) when experiments are halted or its holder lost the job's lease."""

    def __init__(self, store_factory: Callable, job: str, holder: str, stop: threading.Event,
                 log: Callable[[str], None], every_s: float = 5.0):
        self.factory, self.job, self.holder, self.stop, self.log, self.every_s = store_factory, job, holder, stop, log, every_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ftops-injection-guard", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        from spark_jobs.drills.waits import StoreView

        view = StoreView(self.factory)
        try:
            while not self._done.wait(self.every_s):
                halt = view.call(lambda st: st.halted())
                lease = view.call(lambda st: st.lease(self.job))
                lost = lease is not None and lease["holder"] != self.holder
                if halt is not None or lost:
                    self.log("stopping the injection: " + ("experiments are halted" if halt else "the lease was taken over"))
                    self.stop.set()
                    return
        finally:
            view.close()

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)


def run_fault_profile(store, state, profile, duration: float, seed: int, store_factory: Callable | None = None,
                      log: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """A drill's profile (:func:`checked_profile`) on its primary, under its lease; the injection report as a dict."""
    from spark_jobs.drills.engine import hold_lease

    dep = state.deployment
    hold_lease(store, state)
    report = journaled_injection(store, state.job, state.holder, state.drill_id, profile, duration, seed,
                                 output=Path(dep.primary_output),
                                 state_dir=Path(dep.cluster_state) if dep.cluster_state else None,
                                 store_factory=store_factory, log=log)
    return {"profile": report.profile, "seed": report.seed, "duration_s": report.duration_s, "applied": report.applied,
            "skipped": report.skipped, "paused_s": report.paused_s}
