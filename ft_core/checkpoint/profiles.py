"""The profiles document: profiling runs of one job at several checkpoint intervals (paper 004, Sec. IV-A).

Problem: Chiron (paper 004) tunes the checkpoint interval from isolated profiling runs of the same job,
one per candidate interval, all reading the same stream, each repeated several times. This module is
the document those runs produce (a later Spark job writes it) and its reduction to one row of
medians per interval (Sec. V-A: "the median of each metric was used for modeling").

Format (JSON, or YAML with the same structure; the ``#`` comments explain, they are not part of the
format); units are in the field names, rates in events/s::

    {
      "job": "iot-speeding",                 # optional name
      "description": "...",                  # optional
      "detection_timeout_s": 10.0,           # T: heartbeat/detection timeout (a setting, Sec. II);
                                             #    default for repetitions that do not measure it
      "mtbf_s": 21600.0,                     # optional mean time between failures (Young/Daly baselines)
      "profiles": [                          # one entry per checkpoint interval, >= 3 distinct ones
        {
          "checkpoint_interval_ms": 1000,    # > 0, unique in the document
          "repetitions": [                   # >= 1 raw profiling runs, kept as measured
            {
              "run_id": "r1",                # optional label of the run
              "avg_ingress_rate": 500000,    # I_avg, events/s under normal load (>= 0)
              "max_ingress_rate": 1300000,   # I_max, events/s found by load testing (> 0)
              "avg_latency_ms": 2480.0,      # L_avg, source-to-sink latency, windows excluded (>= 0)
              "recovery_time_s": 14.2,       # R_avg, mean restore time over the injected failures (>= 0)
              "warmup_time_s": 4.8,          # W_avg, ingress ramp from 0 to I_max (>= 0)
              "detection_timeout_s": 10.0,   # optional, overrides the document's T
              "checkpoint_duration_ms": 900, # optional checkpoint cost (Young/Daly baselines)
              "total_recovery_time_s": 41.0  # optional measured TRT, failure to caught up (mean over the
                                             #    run's failures, each just before a checkpoint: the
                                             #    worst case E = CI); chooses the heuristic variant
            }
          ]
        }
      ]
    }

Unknown fields are rejected (they are most often a unit typo such as ``recovery_time_ms``).
Every value must be finite and non-negative (``checkpoint_interval_ms``, ``max_ingress_rate`` and
``mtbf_s`` strictly positive). A second-order polynomial has three coefficients, so the document
needs at least three *distinct* intervals: with fewer the quadratic models are undetermined, and
refitting a line silently would change the paper's model; two entries with the same interval are
rejected rather than merged (put the runs under one entry's ``repetitions``). A profiling run of
fewer intervals (``ftops profile checkpoint --intervals 2,5``) still writes a valid document of its
own measurements: it checks it with ``min_intervals`` below 3, and the planner rejects it.

Algorithm: pydantic validation, then the structural checks above; :func:`summarise` takes the
median of every metric over the repetitions of each interval (``detection_timeout_s`` falling back
to the document's value) and sorts by interval. Complexity: O(P R log R) for P intervals of R runs.

Every problem raises :class:`~ft_core.errors.InputError` naming the field and the reason.

Example::

    >>> doc = parse_profiles({"detection_timeout_s": 10, "profiles": [
    ...     {"checkpoint_interval_ms": ci, "repetitions": [{"avg_ingress_rate": 1, "max_ingress_rate": 2,
    ...      "avg_latency_ms": 900, "recovery_time_s": 5, "warmup_time_s": 5}]} for ci in (1000, 2000, 3000)]})
    >>> [(s.checkpoint_interval_ms, s.utilisation) for s in summarise(doc)][:2]
    [(1000.0, 0.5), (2000.0, 0.5)]
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.quantities import Milliseconds, NonNegative, Positive, PositiveMilliseconds, Seconds
from ft_core.input.validation import validate

MIN_INTERVALS = 3


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Repetition(_Strict):
    """One profiling run at one checkpoint interval (raw values, not aggregated)."""

    run_id: str | None = None
    avg_ingress_rate: NonNegative = Field(description="I_avg, events/s")
    max_ingress_rate: Positive = Field(description="I_max, events/s")
    avg_latency_ms: Milliseconds = Field(description="L_avg, ms")
    recovery_time_s: Seconds = Field(description="R_avg, s")
    warmup_time_s: Seconds = Field(description="W_avg, s")
    detection_timeout_s: Seconds | None = Field(default=None, description="T, s (overrides the document)")
    checkpoint_duration_ms: Milliseconds | None = Field(default=None, description="checkpoint cost, ms")
    total_recovery_time_s: Seconds | None = Field(default=None, description="measured TRT, s (failure to caught up)")


class IntervalProfile(_Strict):
    checkpoint_interval_ms: PositiveMilliseconds
    repetitions: list[Repetition] = Field(min_length=1)


class ProfilesDocument(_Strict):
    job: str | None = None
    description: str | None = None
    detection_timeout_s: Seconds | None = None
    mtbf_s: float | None = Field(default=None, gt=0)
    profiles: list[IntervalProfile]


@dataclass(frozen=True, slots=True)
class IntervalSummary:
    """The medians over the repetitions of one checkpoint interval."""

    checkpoint_interval_ms: float
    repetitions: int
    avg_ingress_rate: float
    max_ingress_rate: float
    avg_latency_ms: float
    recovery_time_s: float
    warmup_time_s: float
    detection_timeout_s: float
    checkpoint_duration_ms: float | None
    total_recovery_time_s: float | None = None

    @property
    def utilisation(self) -> float:
        """Eq. 1 on the medians: ``U = I_avg / I_max``."""
        return self.avg_ingress_rate / self.max_ingress_rate


def parse_profiles(data: Any, min_intervals: int = MIN_INTERVALS) -> ProfilesDocument:
    """Validate a profiles document given as a dict (parsed JSON or YAML).

    ``min_intervals`` is the number of distinct intervals required: 3 (the default) for the
    quadratic models of :mod:`ft_core.checkpoint.tuning`; a profiling run that measured fewer
    intervals checks its document with a smaller value (at least 1)."""
    doc = validate(ProfilesDocument, data, "profiles document")
    _check_intervals(doc, min_intervals)
    _check_timeouts(doc)
    return doc


def load_profiles(path: str | Path, min_intervals: int = MIN_INTERVALS) -> ProfilesDocument:
    """Read and validate a profiles document from a ``.json``, ``.yaml`` or ``.yml`` file."""
    return parse_profiles(read_document(path, "profiles"), min_intervals)


def summarise(doc: ProfilesDocument) -> list[IntervalSummary]:
    """One row of per-metric medians per interval (Sec. V-A), sorted by interval."""
    return [_summary(doc, p) for p in sorted(doc.profiles, key=lambda p: p.checkpoint_interval_ms)]


def _summary(doc: ProfilesDocument, profile: IntervalProfile) -> IntervalSummary:
    reps = profile.repetitions
    costs = [r.checkpoint_duration_ms for r in reps if r.checkpoint_duration_ms is not None]
    trts = [r.total_recovery_time_s for r in reps if r.total_recovery_time_s is not None]
    timeouts = [doc.detection_timeout_s if r.detection_timeout_s is None else r.detection_timeout_s for r in reps]
    return IntervalSummary(
        checkpoint_interval_ms=float(profile.checkpoint_interval_ms),
        repetitions=len(reps),
        avg_ingress_rate=statistics.median(r.avg_ingress_rate for r in reps),
        max_ingress_rate=statistics.median(r.max_ingress_rate for r in reps),
        avg_latency_ms=statistics.median(r.avg_latency_ms for r in reps),
        recovery_time_s=statistics.median(r.recovery_time_s for r in reps),
        warmup_time_s=statistics.median(r.warmup_time_s for r in reps),
        detection_timeout_s=statistics.median(timeouts),
        checkpoint_duration_ms=statistics.median(costs) if costs else None,
        total_recovery_time_s=statistics.median(trts) if trts else None,
    )


def _check_intervals(doc: ProfilesDocument, min_intervals: int) -> None:
    if min_intervals < 1:
        raise InputError(f"min_intervals: must be at least 1, got {min_intervals}")
    seen: dict[float, int] = {}
    for i, profile in enumerate(doc.profiles):
        ci = profile.checkpoint_interval_ms
        if ci in seen:
            raise InputError(f"profiles document field profiles.{i}.checkpoint_interval_ms: duplicate interval "
                             f"{ci:g} ms (also profiles.{seen[ci]}); list its runs under one entry's repetitions")
        seen[ci] = i
    if len(seen) < min_intervals:
        found = "no profiles" if not seen else f"only {len(seen)} distinct interval(s) ({', '.join(f'{c:g}' for c in seen)} ms)"
        need = (f"a second-order polynomial needs at least {MIN_INTERVALS} distinct checkpoint intervals"
                if min_intervals == MIN_INTERVALS else f"expected at least {min_intervals} distinct checkpoint interval(s)")
        raise InputError(f"profiles document field profiles: {found}; {need}")


def _check_timeouts(doc: ProfilesDocument) -> None:
    if doc.detection_timeout_s is not None:
        return
    for i, profile in enumerate(doc.profiles):
        for j, rep in enumerate(profile.repetitions):
            if rep.detection_timeout_s is None:
                raise InputError(f"profiles document field profiles.{i}.repetitions.{j}.detection_timeout_s: "
                                 "missing, and the document sets no detection_timeout_s")
