"""A drill's steady-state hypothesis and its abort probes (the guards chaos tools put around experiments).

Before a drill, the job must be in its steady state: the primary running and keeping up with its input
(its output watermark within a bound of the input's), the replica running where the plan says and keeping
up too. During
the drill the probes are checked at every poll of every wait; the first one that fires stops the
experiment (the DAG restores capacity and records the drill as aborted with the reason):

- *too long*: more than ``max_duration_s`` since the failure;
- *a second domain lost*: a worker of another domain, alive when the drill started, died (the drill's
  failure is no longer the only one: real trouble, stop adding to it);
- *too far behind*: once capacity is back, the primary's watermark more than ``max_lag_s`` behind the
  input's: read from the job's folders, else (a triggerer that does not see them) from the newest progress
  row the primary's driver wrote to the history store (``primary_stream``), given by the caller.

A :class:`Probes` document travels with the DAG run (XCom) into the triggers.

    >>> Probes(t_fail=0.0, max_duration_s=10, domain="rack-a").too_long(now=11.0)
    'the drill ran 11 s, longer than its bound of 10 s'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, field_validator

from ft_core.errors import InputError


class Probes(BaseModel):
    """What the abort probes watch (all optional but the failure time and domain)."""

    t_fail: float
    domain: str
    max_duration_s: float | None = None
    max_lag_s: float | None = None
    # worker name -> (pid, start time): the other domains' workers alive at the start; a pid the kernel
    # gave to another process since is a worker that died
    others: dict[str, tuple[int, float | None]] = {}
    input_dir: str | None = None
    primary_output: str | None = None
    pipeline: str | None = None
    params: list[str] = []
    lag_after: float | None = None  # the lag probe counts from here (capacity back)
    primary_stream: str | None = None  # the primary's progress in the history store (its query name)

    @field_validator("others", mode="before")
    @classmethod
    def _bare_pids(cls, others: dict) -> dict:  # a drill started before start times were recorded
        return {name: (v, None) if isinstance(v, int) else v for name, v in others.items()}

    def too_long(self, now: float | None = None) -> str | None:
        elapsed = (time.time() if now is None else now) - self.t_fail
        if self.max_duration_s is not None and elapsed > self.max_duration_s:
            return f"the drill ran {elapsed:.0f} s, longer than its bound of {self.max_duration_s:.0f} s"
        return None

    def second_domain_lost(self) -> str | None:
        from spark_jobs.runtime.processes import same_process

        dead = sorted(name for name, (pid, started) in self.others.items() if not same_process(pid, started))
        return f"a second failure domain was lost during the drill: {', '.join(dead)} died" if dead else None

    def too_far_behind(self, now: float | None = None,
                       stored_lag: Callable[[], float | None] | None = None) -> str | None:
        if self.max_lag_s is None or self.lag_after is None or (time.time() if now is None else now) < self.lag_after:
            return None
        try:
            lag = event_lag_s(self.pipeline, self.params, Path(self.input_dir or ""), Path(self.primary_output or ""))
        except (OSError, ValueError):  # the job's folders, or its pipeline's file, are not on this host
            lag = None
        if lag is None and stored_lag is not None:
            lag = stored_lag()
        if lag is not None and lag > self.max_lag_s:
            return f"the primary is {lag:.0f} s behind its input, more than the bound of {self.max_lag_s:.0f} s"
        return None

    def fired(self, stored_lag: Callable[[], float | None] | None = None) -> tuple[str, str] | None:
        """The first probe that fires now (its name and reason), or None; ``stored_lag`` gives the primary's lag
        from the history store when its folders are out of reach."""
        for name, probe in (("too_long", self.too_long), ("second_domain_lost", self.second_domain_lost),
                            ("too_far_behind", lambda: self.too_far_behind(stored_lag=stored_lag))):
            reason = probe()
            if reason is not None:
                return name, reason
        return None

    def bounds(self) -> dict[str, str]:
        """Each probe's bound, as the experiment report shows it."""
        return {"too_long": "no bound" if self.max_duration_s is None else f"drill shorter than {self.max_duration_s:.0f} s",
                "second_domain_lost": f"the {len(self.others)} workers outside {self.domain} stay alive",
                "too_far_behind": "no bound" if self.max_lag_s is None
                else f"primary within {self.max_lag_s:.0f} s of its input once capacity is back"}


def event_lag_s(pipeline: str | None, params: list[str], input_dir: Path, output: Path) -> float | None:
    """How far (event-time seconds) the job's output watermark trails its input's; None when unknown."""
    from spark_jobs.drills.progress import watermark_of
    from spark_jobs.pipeline.input_files import input_watermark
    from spark_jobs.pipeline.loading import load_workload

    if not pipeline:
        return None
    mark, source = watermark_of(output), input_watermark(load_workload(pipeline, params), input_dir)
    return None if mark is None or source is None else max(0.0, (source - mark) / 1000)


STEADY_LAG_S = 60.0  # the default steady-state bound: the drill DAG's Param, its operator, the soak


class SteadyState(NamedTuple):
    lag_s: float  # the primary's output watermark behind the input's, event-time seconds
    replica_lag_s: float | None  # the replica's, None when no replica was checked


def check_steady(pipeline: str, params: list[str], input_dir: Path, output: Path, bound_s: float,
                 replica_output: Path | None = None) -> SteadyState:
    """The steady-state hypothesis before a drill: the primary keeps up with its input (its watermark within
    ``bound_s`` of the input's), and so does the replica when ``replica_output`` is given (a replica still
    working through its backlog would make the drill's first tentative output late for a reason that is not
    the failure); InputError naming the stream that does not."""
    lag = _checked_lag("the primary", pipeline, params, input_dir, output, bound_s)
    replica = None if replica_output is None else \
        _checked_lag("the replica", pipeline, params, input_dir, Path(replica_output), bound_s)
    return SteadyState(lag, replica)


STEADY_WAIT_S = 180.0  # how long a drill's preflight gives a stream just (re)started to catch up


def wait_steady(pipeline: str, params: list[str], input_dir: Path, output: Path, bound_s: float,
                replica_output: Path | None = None, wait_s: float = STEADY_WAIT_S, interval_s: float = 3.0) -> SteadyState:
    """:func:`check_steady` until it holds, for up to ``wait_s`` (a replica the plan run has just started
    reads its backlog first); the last refusal when it never does."""
    from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

    retrying = Retrying(retry=retry_if_exception_type(InputError), stop=stop_after_delay(wait_s),
                        wait=wait_fixed(interval_s), reraise=True)
    return retrying(check_steady, pipeline, params, input_dir, output, bound_s, replica_output)


def settled_lag_s(pipeline: str | None, params: list[str], input_dir: Path, output: Path, bound_s: float,
                  wait_s: float = STEADY_WAIT_S, interval_s: float = 3.0,
                  on_poll: Callable[[], None] | None = None) -> tuple[float | None, float]:
    """The steady-state hypothesis after a drill: the primary's lag (:func:`event_lag_s`) once it is back within
    ``bound_s``, polled for up to ``wait_s`` like the check before it (the drill's batch reference has just run
    beside the job on the same cores and can leave it behind for a while); the last lag seen when it never gets
    back; and the seconds waited. ``on_poll`` runs before each wait (the drill keeps its lease)."""
    from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed

    t0 = time.monotonic()
    retrying = Retrying(retry=retry_if_result(lambda lag: lag is None or lag > bound_s), stop=stop_after_delay(wait_s),
                        wait=wait_fixed(interval_s), before_sleep=(lambda _s: on_poll()) if on_poll else None,
                        retry_error_callback=lambda s: s.outcome.result())
    lag = retrying(event_lag_s, pipeline, params, input_dir, output)
    return lag, time.monotonic() - t0


class NotSteady(InputError):
    """The steady-state hypothesis does not hold: the drill's refusal, and ``situation``, where the job stands
    (what a caller that waits on, rather than refuses, says)."""

    def __init__(self, situation: str, refusal: str):
        super().__init__(f"steady state: {situation}: {refusal}")
        self.situation = situation


def _checked_lag(what: str, pipeline: str, params: list[str], input_dir: Path, output: Path, bound_s: float) -> float:
    lag = event_lag_s(pipeline, params, input_dir, output)
    if lag is None:
        raise NotSteady(f"{what} has no watermark yet (no micro-batch has passed event time)", "not drilling")
    if lag > bound_s:
        raise NotSteady(f"{what} is {lag:.0f} s behind its input, more than {bound_s:.0f} s",
                        "not drilling a job that is not keeping up")
    return lag


def caught_up_lag_files(steady_files: int) -> int:
    """The lag (input files) a job must be back within to count as caught up after a failure: twice its
    steady lag plus two files. The steady lag is the most seen over a few seconds before the failure, an
    undersample of a lag that moves with every slow micro-batch (on a loaded machine a batch now and then
    takes 20 s where most take 2 s); requiring the job to get back under that one sample made drills wait
    out their timeout on a job that had long reached the input's watermark and kept up (soak of
    2026-11-26, drill 8: 15-20 files against a sample of 8). Recovery-time definitions allow a band around
    the pre-failure level for the same reason (Khaos: latency back within a threshold).

    >>> caught_up_lag_files(8), caught_up_lag_files(0)
    (18, 2)
    """
    return 2 * steady_files + 2


def steady_lag_files(checkpoint, input_dir, polls: int = 6, interval_s: float = 1.0) -> int:
    """The primary's lag (unprocessed input files) in steady state: the most seen over a few polls before
    the failure. A stream fed in real time is never at lag zero for long (input arrives during every
    micro-batch), so "caught up" after the failure means back to this lag, as Khaos defines recovery."""
    from spark_jobs.runtime.stream_lag import file_source_lag

    seen = []
    for i in range(polls):
        seen.append(file_source_lag(checkpoint, input_dir).lag_files)
        if i < polls - 1:
            time.sleep(interval_s)
    return max(seen)
