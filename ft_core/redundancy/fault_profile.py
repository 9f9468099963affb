"""Fault profiles and seeded fault schedules (thesis 002, Sec. 3.1, Listing 3.1, adapted).

Problem: drills and benchmarks need reproducible faults of the kinds the thesis models: timing
faults (slowdowns such as GC pauses: exponential time between faults, Gaussian magnitude), link
outages (correlated communication faults: exponential time between them, Gaussian time to
restore), crashes of a task, and correlated failures of a whole failure domain (a rack).

Format (YAML or JSON; units are in the field names, unknown fields are rejected)::

    name: gc-pauses
    operators:                    # per operator ("agg") or per task ("agg[0]")
      agg:
        instances: [0, 1]         # optional (the thesis's `enabled`): one fault process per task agg[0], agg[1]
        slowdown:
          every_s: {mean: 1.0, min: 0.0001, max: 900}           # exponential, truncated to [min, max]
          magnitude_ms: {mean: 150, stddev: 37.5, min: 75, max: 300}   # Gaussian, truncated (min default 0)
        link_outage:
          every_s: {mean: 20}
          duration_ms: {mean: 1000, stddev: 250}
        crash:
          rate_per_hour: 2        # exponential arrivals at this rate
          down_s: {mean: 10.8, stddev: 2}                        # optional time to restart
    domains:                      # correlated failures of a whole failure domain (named as ft_core.input.names says)
      rack-a:
        at_s: [300]               # fixed times (or every_s / rate_per_hour)
        down_s: {mean: 60, stddev: 0}

Every fault process has exactly one of ``every_s`` (exponential spec), ``rate_per_hour`` (the
same with mean 3600 / rate) or ``at_s`` (fixed times). The thesis's Listing 3.1 maps as:
``enabled`` -> ``instances``, ``timing.parameters.mtbf.exponential [min, max, mean]`` (µs) ->
``slowdown.every_s`` (s), ``timing.parameters.magnitude.gaussian [min, max, mean, std]`` (µs) ->
``slowdown.magnitude_ms`` (ms); correlated communication faults -> ``link_outage``.

Algorithm (:func:`fault_schedule`): every (target, kind) is an independent process with its own
random stream, seeded from ``(seed, target, kind)`` so that adding a target leaves the others'
schedules unchanged. A process draws a gap, then a magnitude or duration; the next gap starts when
the fault ends (the thesis's injector draws the next fault after sleeping off the current one), so
the faults of one target never overlap. Truncated distributions are sampled exactly by inverting
the CDF on the truncated range (no rejection loop). Events are sorted by (time, kind, target).
Complexity: O(E log E) for E events.

Example::

    >>> profile = parse_fault_profile({"operators": {"agg": {"slowdown": {
    ...     "every_s": {"mean": 1.0}, "magnitude_ms": {"mean": 150, "stddev": 37.5}}}}})
    >>> events = fault_schedule(profile, duration_s=10, seed=7)
    >>> events == fault_schedule(profile, duration_s=10, seed=7), {e.kind for e in events}, events[0].target
    (True, {'slowdown'}, 'agg')
"""

from __future__ import annotations

import hashlib
import math
import random
from pathlib import Path
from statistics import NormalDist
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.limits import LIMITS, current_limits, exceeds
from ft_core.input.names import named
from ft_core.input.quantities import AtMost, PositiveSeconds, Seconds, check
from ft_core.input.validation import validate

FaultKind = Literal["slowdown", "link_outage", "crash", "domain"]
_MIN_MASS = 1e-12  # a truncation range with less probability than this is a typo, not a model
_STANDARD = NormalDist()


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


class Exponential(_Doc):
    """Exponential with ``mean`` (the untruncated mean), truncated to ``[min, max]``; in seconds, as the
    gaps between faults are. A mean gap below ``1 / FTOPS_MAX_FAULT_RATE_PER_S`` is refused: a fault every
    1e-300 s is a typo that would otherwise fill memory with faults."""

    mean: float = Field(gt=0)
    min: Seconds = 0.0
    max: PositiveSeconds | None = None

    @model_validator(mode="after")
    def _range(self) -> Exponential:
        rate = 1.0 / self.mean
        if rate > current_limits().max_fault_rate_per_s:
            raise ValueError(f"mean: a fault every {self.mean:g} s on average {exceeds('max_fault_rate_per_s', rate)}")
        high = math.inf if self.max is None else self.max
        if self.min >= high:
            raise ValueError(f"min ({self.min:g}) must be < max ({high:g})")
        if math.exp(-self.min / self.mean) - math.exp(-high / self.mean) < _MIN_MASS:
            raise ValueError(f"[{self.min:g}, {high:g}] has no probability for mean {self.mean:g}")
        return self

    def sample(self, rng: random.Random) -> float:
        high = math.inf if self.max is None else self.max
        low_cdf, high_cdf = -math.expm1(-self.min / self.mean), -math.expm1(-high / self.mean)
        u = low_cdf + rng.random() * (high_cdf - low_cdf)
        return min(max(-self.mean * math.log1p(-u), self.min), high)


class Gaussian(_Doc):
    """Gaussian with ``mean`` and ``stddev``, truncated to ``[min, max]`` (``min`` defaults to 0).

    As a fault's size (a pause, an outage, a time down) its unit is in the field's name; ``mean``,
    ``stddev`` and ``max`` must then lie within ``FTOPS_MAX_DURATION_S`` (``per_second`` units a second)."""

    per_second: ClassVar[float | None] = None

    mean: float
    stddev: float = Field(ge=0)
    min: float = Field(default=0.0, ge=0)
    max: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _range(self) -> Gaussian:
        self._within_duration_limit()
        high = math.inf if self.max is None else self.max
        if self.min >= high:
            raise ValueError(f"min ({self.min:g}) must be < max ({high:g})")
        if self.stddev == 0:
            if not self.min <= self.mean <= high:
                raise ValueError(f"with stddev 0 the mean ({self.mean:g}) must lie in [{self.min:g}, {high:g}]")
        elif self._cdf(high) - self._cdf(self.min) < _MIN_MASS:
            raise ValueError(f"[{self.min:g}, {high:g}] has no probability for mean {self.mean:g}, stddev {self.stddev:g}")
        return self

    def _within_duration_limit(self) -> None:
        if self.per_second is None:
            return
        for name in ("mean", "stddev", "max", "min"):
            value = getattr(self, name)
            if value is not None and abs(value) > current_limits().max_duration_s * self.per_second:
                raise ValueError(f"{name}: {exceeds('max_duration_s', abs(value) / self.per_second)}")

    def _cdf(self, x: float) -> float:
        return 1.0 if x == math.inf else _STANDARD.cdf((x - self.mean) / self.stddev)

    def sample(self, rng: random.Random) -> float:
        high = math.inf if self.max is None else self.max
        if self.stddev == 0:
            return float(self.mean)
        low_cdf, high_cdf = self._cdf(self.min), self._cdf(high)
        u = low_cdf + rng.random() * (high_cdf - low_cdf)
        u = min(max(u, 1e-300), 1 - 1e-16)  # inv_cdf needs 0 < u < 1
        return min(max(self.mean + self.stddev * _STANDARD.inv_cdf(u), self.min), high)


class Milliseconds(Gaussian):
    """A fault's size in milliseconds (a slowdown's pause, a link outage)."""

    per_second: ClassVar[float | None] = 1000.0


class SecondsDown(Gaussian):
    """A fault's size in seconds (a crash's or a domain's time down)."""

    per_second: ClassVar[float | None] = 1.0


class _Arrivals(_Doc):
    """When faults happen: exactly one of ``every_s``, ``rate_per_hour``, ``at_s``."""

    every_s: Exponential | None = None
    rate_per_hour: Annotated[float, Field(gt=0), AtMost("max_fault_rate_per_s", 3600.0)] | None = None
    at_s: list[Seconds] | None = None

    @model_validator(mode="after")
    def _one_arrival_rule(self) -> _Arrivals:
        given = [name for name in ("every_s", "rate_per_hour", "at_s") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of every_s, rate_per_hour, at_s (got {', '.join(given) or 'none'})")
        return self

    def gap_distribution(self) -> Exponential | None:
        if self.rate_per_hour is not None:
            return Exponential(mean=3600.0 / self.rate_per_hour)
        return self.every_s


class Slowdown(_Arrivals):
    magnitude_ms: Milliseconds


class LinkOutage(_Arrivals):
    duration_ms: Milliseconds


class Crash(_Arrivals):
    down_s: SecondsDown | None = None


class DomainFault(_Arrivals):
    down_s: SecondsDown | None = None


class OperatorFaults(_Doc):
    instances: list[Annotated[int, AtMost("max_tasks")]] | None = Field(default=None, min_length=1)
    slowdown: Slowdown | None = None
    link_outage: LinkOutage | None = None
    crash: Crash | None = None


class FaultProfile(_Doc):
    """A validated fault profile (see the module docstring for the format)."""

    name: str = "faults"
    description: str | None = None
    operators: dict[str, OperatorFaults] = Field(default_factory=dict)
    domains: dict[named("failure domain"), DomainFault] = Field(default_factory=dict)  # failure-domain names: identifiers


class FaultEvent(BaseModel):
    """One fault: a slowdown of ``magnitude_ms``, or an outage/crash/domain failure of
    ``duration_s`` (None: until something restarts it)."""

    time_s: float
    kind: FaultKind
    target: str
    magnitude_ms: float | None = None
    duration_s: float | None = None


def load_fault_profile(path: str | Path) -> FaultProfile:
    """Read and validate a fault profile from a ``.yaml``, ``.yml`` or ``.json`` file."""
    return parse_fault_profile(read_document(path, "fault profile"))


def parse_fault_profile(data: Any) -> FaultProfile:
    """Validate a fault profile given as a dict; InputError names the field."""
    profile = validate(FaultProfile, data, "fault profile")
    _check_targets(profile)
    return profile


def _check_targets(profile: FaultProfile) -> None:
    for name, spec in profile.operators.items():
        where = f"fault profile field operators.{name}"
        if not name or name != name.strip():
            raise InputError(f"{where}: an operator or task name must be non-empty without surrounding spaces")
        if spec.instances is not None:
            if "[" in name:
                raise InputError(f"{where}.instances: {name!r} is already a task; list instances under its operator")
            if any(i < 0 for i in spec.instances) or len(set(spec.instances)) != len(spec.instances):
                raise InputError(f"{where}.instances: instance ids must be distinct integers >= 0")
        if spec.slowdown is None and spec.link_outage is None and spec.crash is None:
            raise InputError(f"{where}: no fault given (slowdown, link_outage or crash)")


def fault_schedule(profile: FaultProfile, duration_s: float, seed: int, *, field: str = "duration") -> list[FaultEvent]:
    """Every fault starting in ``[0, duration_s)``, sorted by (time, kind, target); deterministic in ``seed``.

    At most ``FTOPS_MAX_FAULT_EVENTS`` faults: more is refused (InputError on ``field``, the caller's name
    for the duration) as soon as the count is passed, before memory or time run out."""
    if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float)) or not math.isfinite(duration_s) or duration_s < 0:
        raise InputError(f"{field}: must be a finite number of seconds >= 0, got {duration_s!r}", field=field)
    check(Seconds, duration_s, field)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed: must be an integer, got {seed!r}")
    budget = current_limits().max_fault_events
    events: list[FaultEvent] = []
    for target, kind, spec in _processes(profile):
        events.extend(_process_events(target, kind, spec, float(duration_s), _stream(seed, target, kind), budget - len(events)))
        if len(events) > budget:
            raise InputError(f"{field}: {duration_s:g} s of fault profile {profile.name!r} hold more faults than "
                             f"the limit of {budget} (set {LIMITS['max_fault_events'].env} to raise it, or shorten "
                             "the duration)", field=field)
    events.sort(key=lambda e: (e.time_s, e.kind, e.target))
    return events


def _processes(profile: FaultProfile):
    for name, spec in profile.operators.items():
        targets = [name] if spec.instances is None else [f"{name}[{i}]" for i in spec.instances]
        for target in targets:
            for kind in ("slowdown", "link_outage", "crash"):
                if getattr(spec, kind) is not None:
                    yield target, kind, getattr(spec, kind)
    for domain, spec in profile.domains.items():
        yield domain, "domain", spec


def _stream(seed: int, target: str, kind: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{target}\x00{kind}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _process_events(target: str, kind: str, spec: _Arrivals, duration_s: float, rng: random.Random,
                    budget: int) -> list[FaultEvent]:
    """One process's faults; stops once it has more than ``budget`` (the caller refuses the schedule)."""
    if spec.at_s is not None:
        return [_event(target, kind, spec, float(t), rng) for t in sorted(spec.at_s) if t < duration_s]
    gap = spec.gap_distribution()
    events, t = [], 0.0
    while len(events) <= budget:
        t += gap.sample(rng)
        if t >= duration_s:
            return events
        event = _event(target, kind, spec, t, rng)
        events.append(event)
        # the next gap starts when this fault is over: one target's faults never overlap
        t += (event.magnitude_ms or 0.0) / 1000.0 + (event.duration_s or 0.0)
    return events


def _event(target: str, kind: str, spec: _Arrivals, time_s: float, rng: random.Random) -> FaultEvent:
    if isinstance(spec, Slowdown):
        return FaultEvent(time_s=time_s, kind=kind, target=target, magnitude_ms=spec.magnitude_ms.sample(rng))
    if isinstance(spec, LinkOutage):
        return FaultEvent(time_s=time_s, kind=kind, target=target, duration_s=spec.duration_ms.sample(rng) / 1000.0)
    down = spec.down_s.sample(rng) if spec.down_s is not None else None
    return FaultEvent(time_s=time_s, kind=kind, target=target, duration_s=down)
