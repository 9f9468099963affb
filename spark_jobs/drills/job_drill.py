"""``ftops drill job NAME``: the drill engine's steps (:mod:`spark_jobs.drills.engine`) in one process, its waits
polled in place (:mod:`spark_jobs.drills.waits`): the same drill as the ``ftops_chaos_drill`` DAG, for a team
without a scheduler or an operator at a terminal.

The command holds the job's lease for the whole drill (renewed from a thread, so a SIGKILLed command's lease
expires after ``lease_ttl_s`` and the journal's faults are undone by whoever finds them: the safety net, the next
experiment, ``ftops doctor --repair``). Every other way out, Ctrl-C and SIGTERM included, goes through the
engine's finish, which undoes the drill's open faults before it records the verdict. Running the command is the
approval a job in ``approve`` mode asks for; a job in ``recommend`` mode is never drilled.

    # report = run_job_drill(store_factory, DrillSettings(job="alerts"), holder="command ftops drill job", driver_env={})
"""

from __future__ import annotations

from collections.abc import Callable

from ft_core.errors import FtopsError, InputError
from ft_core.store.faults import HaltedError
from ft_core.store.experiments import ExperimentReport
from spark_jobs.drills.engine import DrillSettings, DrillState, Hypothesis, Outcome


class _Stopped(Exception):
    """A wait ended the drill: the outcome to record."""

    def __init__(self, outcome: Outcome, error: FtopsError | None = None):
        super().__init__(outcome.reasons[0] if outcome.reasons else outcome.verdict)
        self.outcome, self.error = outcome, error


def run_job_drill(store_factory, settings: DrillSettings, holder: str, progress: Callable[[str], None] = lambda _: None,
                  driver_env: dict[str, str] | None = None) -> ExperimentReport:
    """Drill ``settings.job`` holding its lease; returns the experiment report. BusyError or HaltedError when it
    cannot start now, InputError/ExternalError when the job is not drillable (nothing injected, nothing recorded
    when the job could not even be checked)."""
    return drill_job(store_factory, settings, holder, progress, driver_env)[0]


def drill_job(store_factory, settings: DrillSettings, holder: str, progress: Callable[[str], None] = lambda _: None,
              driver_env: dict[str, str] | None = None) -> tuple[ExperimentReport, DrillState | None]:
    """:func:`run_job_drill`, with the drill's state once verified (None: it ended before its verdict), for a caller
    that measures more around the drill (``ftops drill run``: the whole output once its input is drained)."""
    from ft_core.store.leases import LeaseKeeper
    from spark_jobs.drills.engine import begin

    env = driver_env or {}
    with LeaseKeeper(store_factory, settings.job, "drill", holder, ttl_s=settings.lease_ttl_s):
        progress(f"took the lease on {settings.job}")
        store = store_factory()
        try:
            state = begin(store, settings, holder, driver_env=env)
            progress(f"drill #{state.drill_id} of {settings.job}: failing {state.ctx.domain} once it is steady")
            return _drive(store, store_factory, state, progress, env)
        finally:
            store.conn.close()


def _drive(store, store_factory, state: DrillState, say: Callable[[str], None],
           env: dict[str, str]) -> tuple[ExperimentReport, DrillState | None]:
    from spark_jobs.drills.engine import finish

    outcome, error, interrupted = Outcome(verdict="failed", reasons=["the drill stopped before its verdict"]), None, None
    verified = None
    try:
        state = verified = _steps(store, store_factory, state, say, env)
        outcome = Outcome(verdict="failed" if state.problems else "passed", reasons=state.problems)
    except _Stopped as stop:
        outcome, error = stop.outcome, stop.error
    except HaltedError as exc:  # the halt came between two waits: the journal refused the fault
        outcome = Outcome(verdict="aborted", reasons=[f"abort probe halted: {exc}"], fired=("halted", str(exc)))
    except (Exception, KeyboardInterrupt) as exc:  # whatever stopped it, the faults are undone in finish
        outcome, interrupted = Outcome(verdict="failed", reasons=[f"the drill stopped: {type(exc).__name__}: {exc}"]), exc
    say(f"finishing: {outcome.verdict}")
    experiment = finish(store, state, outcome, env)
    if interrupted is not None:
        raise interrupted
    if error is not None:
        raise error
    return experiment, verified


def _steps(store, store_factory, state: DrillState, say: Callable[[str], None], env: dict[str, str]) -> DrillState:
    from spark_jobs.drills.engine import add_capacity, ensure_primary, inject, verify

    s = state.settings
    seen = _wait(state, "steady", store_factory, s.steady_wait_s, say)
    state = inject(store, state, Hypothesis(**seen))
    say(f"failed {state.ctx.domain}: {', '.join(state.ctx.killed) or 'nothing'}; replacement capacity in "
        f"{s.replacement_delay_s:.0f} s")
    if state.ctx.replica_output:
        _wait(state, "tentative", store_factory, s.timeout_s, say)
        say("the replica's tentative output arrives")
    _wait(state, "capacity_due", store_factory, s.replacement_delay_s + 60, say)
    state = add_capacity(store, state)
    say(f"capacity back in {state.ctx.domain} {state.ctx.t_capacity - state.ctx.t_fail:.1f} s after the failure")
    state = ensure_primary(store, state, env)
    if state.resubmitted:
        say("the primary driver was gone: resubmitted from its checkpoint")
    _wait(state, "executors", store_factory, s.timeout_s, say)
    say("the primary runs again; waiting until it has caught up")
    _wait(state, "caught_up", store_factory, s.timeout_s, say)
    say("caught up; measuring")
    return verify(store, state)


def _wait(state: DrillState, name: str, store_factory, timeout_s: float, say: Callable[[str], None]) -> dict:
    """One wait, polled here; an abort or a timeout stops the drill with the outcome to record."""
    from spark_jobs.drills.waits import DrillWatch, StoreView, watch_until

    view = StoreView(store_factory)
    try:
        result = watch_until(DrillWatch(state, name, view), timeout_s, say=say)
    finally:
        view.close()
    if result.status == "ok":
        return result.seen
    if result.status == "aborted":
        reason = f"abort probe {result.probe}: {result.reason}"
        raise _Stopped(Outcome(verdict="aborted", reasons=[reason], fired=(result.probe, result.reason)))
    if name == "steady":  # nothing was injected: the job was not in its steady state
        reason = f"not drilled: the steady state did not hold within {timeout_s:.0f} s: {result.missing}"
        raise _Stopped(Outcome(verdict="aborted", reasons=[reason]), InputError(reason))
    raise _Stopped(Outcome(verdict="failed", reasons=[f"waiting for {name}: {result.missing}"]))
