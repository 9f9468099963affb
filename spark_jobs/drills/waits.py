"""The waits between a drill's steps, one definition each, for the command (polled in place) and the DAG
(polled by one trigger in Airflow's triggerer, :mod:`ftops_provider.triggers.drill_wait`).

A wait is a condition polled until it holds (:func:`condition` builds it from the drill's state). At every poll
:class:`DrillWatch` first keeps the drill honest: the halt (``ftops halt``), the job's lease (renewed every third
of its TTL; a lease someone else took ends the drill) and, once the fault is in, the abort probes
(:class:`~spark_jobs.drills.probes.Probes`). A poll answers with a :class:`WaitResult`: ``ok`` (with what it
saw), ``pending`` (with what is missing), ``aborted`` (a probe, the halt or the lease, and why).

The conditions:

- ``steady``: the primary (and the replica) within ``steady_lag_s`` of the input (the hypothesis before);
- ``tentative``: a micro-batch of the replica with output after the fault;
- ``capacity_due``: the replacement delay has passed;
- ``executors``: the primary has executors again;
- ``caught_up``: the primary is back to its steady lag (input files) and past the input's watermark at the
  moment capacity returned, on two polls that each saw a new micro-batch.

Streams' progress is read from the history store when their drivers write it there (no disk shared with the
driver), else from the job's folders: the same rule for the command and the triggerer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from ft_core.errors import ExternalError, FtopsError, InputError
from spark_jobs.attach.drill_support import is_attached

log = logging.getLogger(__name__)

WaitName = Literal["steady", "tentative", "capacity_due", "executors", "caught_up"]
WAITS: tuple[str, ...] = ("steady", "tentative", "capacity_due", "executors", "caught_up")


class WaitResult(BaseModel):
    status: Literal["ok", "pending", "aborted", "timeout"]
    seen: dict[str, Any] = {}
    missing: str | None = None
    probe: str | None = None
    reason: str | None = None


class StoreView:
    """The history store for waits: opened on first use, closed and reopened after a failure (a database
    restart costs polls, not the wait); every call answers None while the store is away."""

    def __init__(self, factory: Callable[[], Any]):
        self.factory, self._store, self.problem = factory, None, None

    def call(self, fn: Callable[[Any], Any]) -> Any:
        if self._store is None:
            try:
                self._store = self.factory()
            except (ExternalError, OSError) as exc:  # cannot connect (a database restart): the next poll tries again
                self.problem = f"history store not reachable ({exc})"
                log.warning("%s; retrying at the next poll", self.problem)
                return None
        try:
            result, self.problem = fn(self._store), None
            return result
        except FtopsError:
            raise
        except Exception as exc:  # noqa: BLE001 -- any database trouble: retried at the next poll
            self.problem = f"history store not readable ({exc})"
            log.warning("%s; retrying at the next poll", self.problem)
            self.close()
            return None

    def close(self) -> None:
        if self._store is not None:
            try:
                self._store.conn.close()
            except Exception:  # noqa: BLE001 -- a broken connection is closed already
                log.debug("closing a broken store connection", exc_info=True)
            self._store = None


class DrillWatch:
    """One wait of a drill: its condition, guarded by the halt, the lease and the abort probes."""

    def __init__(self, state, name: WaitName, view: StoreView):
        self.state, self.name, self.view = state, name, view
        self.condition = condition(state, name)
        self._renewed = self._orphan_checked = 0.0

    def poll(self) -> WaitResult:
        stop = self._guard()
        if stop is not None:
            return stop
        if self.view.problem is not None:  # the halt and the lease are unknown: the drill takes no step blind
            return WaitResult(status="pending", missing=self.view.problem)
        done, seen_or_missing = self.condition(self.view)
        if done:
            return WaitResult(status="ok", seen=seen_or_missing)
        return WaitResult(status="pending", missing=seen_or_missing)

    def _guard(self) -> WaitResult | None:
        s = self.state
        halt = self.view.call(lambda st: st.halted())
        if halt is not None:
            return WaitResult(status="aborted", probe="halted", reason=f"experiments were halted by {halt['halted_by']}: "
                                                                       f"{halt['reason']}")
        if time.time() - self._renewed >= s.settings.lease_ttl_s / 3:
            held = self.view.call(lambda st: st.renew_lease(s.job, s.holder, s.settings.lease_ttl_s))
            if held is False:
                return WaitResult(status="aborted", probe="lease_lost",
                                  reason=f"the drill lost its lease on {s.job} (it expired and was taken over)")
            if held:
                self._renewed = time.time()
        if not s.ctx.t_fail:
            return None
        fired = s.probes.fired(self._stored_lag())
        if fired is None and self._primary_orphaned():
            fired = ("primary_orphaned", f"the primary's master {s.deployment.primary_master} no longer lists it (a master "
                                         "restarted without recovery): finish submits it again from its checkpoint")
        return None if fired is None else WaitResult(status="aborted", probe=fired[0], reason=fired[1])

    def _primary_orphaned(self) -> bool:
        """:func:`~spark_jobs.drills.reconcile.orphaned_primary`, asked at most once a minute."""
        from spark_jobs.drills.reconcile import orphaned_primary

        s = self.state
        if is_attached(s.deployment) or time.time() - self._orphan_checked < 60:
            return False
        self._orphan_checked = time.time()
        return orphaned_primary(s.deployment, s.job)


    def _stored_lag(self) -> Callable[[], float | None] | None:
        """The primary's lag from its driver's rows (the lag probe's source when the job's folders are out of reach;
        an attached job's only source: its slowest query)."""
        s = self.state
        if is_attached(s.deployment):
            from spark_jobs.attach.drill_support import lags

            def slowest() -> float | None:
                found = [v for v in (self.view.call(lambda st: lags(st, s.deployment)) or {}).values() if v is not None]
                return max(found) if found else None

            return slowest
        stream = s.probes.primary_stream
        if not stream:
            return None

        def stored_lag() -> float | None:
            since = self.view.call(lambda st: st.progress_since(stream, (s.probes.lag_after or s.probes.t_fail) - 60))
            return since.lag_s() if since is not None else None

        return stored_lag


Condition = Callable[[StoreView], tuple[bool, Any]]


def condition(state, name: WaitName) -> Condition:
    """The condition of wait ``name`` for the drill in ``state``: a callable answering (holds, what it saw or
    what is missing); it may keep what it saw between polls."""
    builders = {"steady": _steady, "tentative": _tentative, "capacity_due": _capacity_due, "executors": _executors,
                "caught_up": _caught_up}
    if name not in builders:
        raise InputError(f"wait {name!r}: expected one of {', '.join(WAITS)}")
    return builders[name](state)


def _steady(state) -> Condition:
    from spark_jobs.drills.probes import check_steady, steady_lag_files

    dep, s = state.deployment, state.settings
    if is_attached(dep):
        from spark_jobs.attach.drill_support import steady

        return lambda view: view.call(lambda st: steady(st, dep, s.steady_lag_s)) or (False, view.problem)

    def check(_view: StoreView) -> tuple[bool, Any]:
        try:
            lag, replica = check_steady(dep.pipeline, dep.params, dep.input, dep.primary_output, s.steady_lag_s,
                                        state.ctx.replica_output)
        except InputError as exc:
            return False, str(exc)
        files = steady_lag_files(dep.primary_checkpoint, dep.input)  # the most over six polls (its docstring)
        return True, {"lag_s": round(lag, 1), "replica_lag_s": None if replica is None else round(replica, 1),
                      "bound_s": s.steady_lag_s, "lag_files": files, "checked_at": time.time()}

    return check


def _tentative(state) -> Condition:
    from spark_jobs.drills.progress import new_outputs

    ctx = state.ctx

    def check(view: StoreView) -> tuple[bool, Any]:
        if not ctx.replica_output:
            return True, {"skipped": "no replica: the plan replicates nothing"}
        since = view.call(lambda st: st.progress_since(ctx.replica_stream, ctx.t_fail)) if ctx.replica_stream else None
        if since is not None and since.batches:
            first = since.first_output_end
            return (True, {"first_s": round(first - ctx.t_fail, 2), "source": "history store"}) if first else \
                (False, f"no micro-batch of {ctx.replica_stream} with output since the fault")
        found = new_outputs(ctx.replica_output, "batch-*.jsonl", ctx.t_fail)
        if found:
            return True, {"first_s": round(found[0][0] - ctx.t_fail, 2), "source": "folder"}
        return False, f"no new output in {ctx.replica_output} since the fault"

    return check


def _capacity_due(state) -> Condition:
    def check(_view: StoreView) -> tuple[bool, Any]:
        left = state.capacity_due - time.time()
        return (True, {"due": state.capacity_due}) if left <= 0 else (False, f"replacement capacity due in {left:.0f} s")

    return check


def _executors(state) -> Condition:
    from spark_jobs.cluster.seam import cluster_of
    from spark_jobs.runtime.job_streams import primary_app_name

    def app() -> str:  # an attached job's application id changes when it is resubmitted: read it each poll
        if is_attached(state.deployment):
            from spark_jobs.attach.drill_support import run_record

            return run_record(state.deployment)["app_id"]
        return primary_app_name(state.job)

    def check(_view: StoreView) -> tuple[bool, Any]:
        try:
            hosting = cluster_of(state.deployment).executor_domains(app())
        except (FtopsError, OSError, ValueError) as exc:  # a master or driver UI that does not answer this poll
            return False, f"the primary's executors not readable: {exc}"
        n = sum(hosting.values())
        return (True, {"executors": hosting}) if n else (False, "the primary has no executor yet")

    return check


def _caught_up(state) -> Condition:
    from spark_jobs.drills.probes import caught_up_lag_files
    from spark_jobs.drills.progress import caught_up_now

    dep, ctx = state.deployment, state.ctx
    if is_attached(dep):
        from spark_jobs.attach.drill_support import caught_up, caught_up_band

        band_s = caught_up_band(ctx.steady_lag_s or 0.0, state.settings.steady_lag_s)
        return lambda view: _attached_caught_up(view, dep, ctx, band_s, caught_up)
    band = caught_up_lag_files(state.hypothesis.lag_files if state.hypothesis else 0)
    stream = state.probes.primary_stream
    last: list[Any] = [None, 0]  # what the previous poll saw, and the streak of new batches seen caught up

    def check(view: StoreView) -> tuple[bool, Any]:
        since = view.call(lambda st: st.progress_since(stream, ctx.t_capacity)) if stream else None
        if since is not None and since.batches:
            ok, missing = since.caught_up(band, ctx.backlog_ms)
            seen, source = since.last_end, "history store"
        else:
            ok, missing = caught_up_now(dep.primary_checkpoint, dep.input, after_ts=ctx.t_capacity, max_lag_files=band,
                                        output_dir=dep.primary_output, watermark_ms=ctx.backlog_ms)
            seen, source = time.time(), "folder"
        last[1] = 0 if not ok else last[1] + (seen != last[0])  # two polls, each with a new batch
        last[0] = seen
        if last[1] >= 2:
            return True, {"caught_up_s": round(time.time() - ctx.t_fail, 1), "source": source}
        return False, missing or "caught up; waiting for one more micro-batch to confirm it"

    return check


def _attached_caught_up(view: StoreView, dep, ctx, band_s: float, caught_up) -> tuple[bool, Any]:
    answer = view.call(lambda st: caught_up(st, dep, ctx.t_capacity, band_s))
    if answer is None:
        return False, view.problem
    ok, missing = answer
    return (True, {"caught_up_s": round(time.time() - ctx.t_fail, 1), "source": "history store"}) if ok else (False, missing)


def watch_until(watch: DrillWatch, timeout_s: float, interval_s: float = 2.0,
                say: Callable[[str], None] = lambda _m: None) -> WaitResult:
    """Poll ``watch`` in place until it is over (the command's way; the DAG defers the same polls to the
    triggerer); a timeout answers ``timeout`` with what was still missing."""
    deadline, missing = time.time() + timeout_s, None
    while True:
        result = watch.poll()
        if result.status != "pending":
            return result
        if result.missing != missing:
            missing = result.missing
            say(f"waiting: {missing}")
        if time.time() >= deadline:
            return WaitResult(status="timeout", missing=f"gave up after {timeout_s:.0f} s: {missing}")
        time.sleep(max(0.0, min(interval_s, deadline - time.time())))

