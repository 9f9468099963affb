"""Feedback control of the redundancy level (thesis 002, Sec. 4.2, Algorithm 2 DynamoRedundancySearch, corrected).

Problem: keep a tail-latency metric (the thesis: p90 of 1-s windows) under a bound while faults
come and go, with as little redundancy as possible. Tail latency against redundancy is U-shaped
(redundancy masks slowdowns until its own load causes queueing): if the curve crosses the bound,
the target is the leftmost crossing (least redundancy that meets it); if not, its minimum.

Algorithm (hill climbing, one step per period, O(1)): ``dl = metric - bound``.

- Above the bound (``dl >= 0``) and ``dl`` changed: the first period above it increases R; later
  ones keep the direction while ``|dl|`` shrinks and reverse it when it grows. Unchanged ``dl``
  keeps the direction.
- Below the bound: decrease R only when the latency is below the bound by at least
  ``perf_margin x bound`` and ``dl`` changed; otherwise hold.
- Step: ``max(step_min, dl / bound x gain)`` with ``gain_inc`` or ``gain_dec``; R never below
  ``min_redundancy_pct`` (0 unless set) nor above ``max_redundancy_pct`` (if set), nor above
  ``MAX_REDUNDANCY_PCT`` (a thousand copies of every tuple: an arithmetic bound far past anything Spark
  applies, which runs at most one extra copy).

Corrections to the printed pseudocode (see the digest, Sec. 3.5), all on by default:

1. Margin direction: line 6 prints ``abs(dl) < perfMargin x bound`` -> decrease, the opposite of
   the prose and the WordCount trace (do not reduce while within the margin). We follow the prose.
2. Hold: the printed loop applies the current movement every period, so after a climb it keeps
   increasing while under the bound; the prose says small ``dl`` must not change R. We add HOLD.
3. Line 12 compares an undefined ``currentDiff``; we read it as the previous ``dl``.
4. Units made explicit: R is in percent (100 = every tuple duplicated once, as the thesis's 160%
   and 197%), ``step_min_pct`` is in percentage points and the gains are percentage points per
   unit of ``dl / bound``. The thesis's values: step 10, gains 5.
5. Decreases below the bound always step by ``step_min`` (``dl < 0`` makes the proportional term
   negative), as the truncated sentence "Reductions in redundancy are in steps of [min]" says.

``rule="printed"`` runs the pseudocode as printed (1 and 2 not applied) to show the difference.
The thesis's known failure mode remains: during long fault-free gaps R drains to the floor and the
next burst violates once; ``min_redundancy_pct`` is its proposed fix.

State is plain data (:class:`ControllerState`, a pydantic model): store ``to_dict()`` between
Airflow runs and rebuild with :meth:`RedundancyController.from_dict`.

Example (bound 100 ms: three periods above it climb 10 points each, then the margin holds R)::

    >>> ctl = RedundancyController(ControllerParams(latency_bound_ms=100))
    >>> [ctl.update(ms) for ms in (250, 180, 120, 95)]
    [10.0, 20.0, 30.0, 30.0]
    >>> ctl.level
    0.3
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.quantities import Milliseconds, PositiveMilliseconds, PositiveSeconds
from ft_core.input.validation import validate

Movement = Literal["increase", "decrease", "hold"]
MAX_REDUNDANCY_PCT = 100_000.0
# Redundancy, steps and gains in percent, at most MAX_REDUNDANCY_PCT, so that a period's step (gain x
# latency / bound, with the latency and the bound within their limits) stays a finite number.
Percent = Annotated[float, Field(ge=0, le=MAX_REDUNDANCY_PCT, allow_inf_nan=False)]
MIN_BOUND_MS = 0.001  # a microsecond: below it no stream processor measures latency


class ControllerParams(BaseModel):
    """Algorithm 2's parameters (the thesis's defaults: step 10 points, gains 5)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    latency_bound_ms: Annotated[PositiveMilliseconds, Field(ge=MIN_BOUND_MS)]
    step_min_pct: Annotated[Percent, Field(gt=0)] = 10.0
    gain_inc: Percent = 5.0
    gain_dec: Percent = 5.0
    perf_margin: float = Field(default=0.1, ge=0, lt=1, description="fraction of the bound kept as a safety band")
    min_redundancy_pct: Percent = 0.0
    max_redundancy_pct: Percent | None = None
    rule: Literal["corrected", "printed"] = "corrected"

    @model_validator(mode="after")
    def _ordered_limits(self) -> ControllerParams:
        if self.max_redundancy_pct is not None and self.max_redundancy_pct < self.min_redundancy_pct:
            raise ValueError("max_redundancy_pct must be >= min_redundancy_pct")
        return self


class ControllerState(BaseModel):
    """Everything the controller remembers between periods (serialisable)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    redundancy_pct: Percent = 0.0
    movement: Movement = "increase"
    last_difference_ms: float | None = None
    periods: int = Field(default=0, ge=0)


def controller_step(params: ControllerParams, state: ControllerState, metric_ms: float) -> ControllerState:
    """One period of Algorithm 2: the new state after observing ``metric_ms``."""
    if isinstance(metric_ms, bool) or not isinstance(metric_ms, (int, float)) or not math.isfinite(metric_ms) or metric_ms < 0:
        raise InputError(f"latency metric: must be a finite number >= 0, got {metric_ms!r}")
    bound = params.latency_bound_ms
    dl = float(metric_ms) - bound
    movement = _next_movement(params, state, dl)
    redundancy = state.redundancy_pct
    if movement == "increase":
        redundancy += max(params.step_min_pct, dl / bound * params.gain_inc)
    elif movement == "decrease":
        redundancy -= max(params.step_min_pct, dl / bound * params.gain_dec)
    return ControllerState(redundancy_pct=_clamp(params, redundancy), movement=movement,
                           last_difference_ms=dl, periods=state.periods + 1)


def _next_movement(params: ControllerParams, state: ControllerState, dl: float) -> Movement:
    previous = state.last_difference_ms
    if dl < 0:
        return _below_bound(params, state, dl)
    if dl == previous:
        return _resume(state.movement)  # only adapt if latency has changed
    if previous is None or previous < 0:
        return "increase"  # first period above the bound
    if abs(previous) > abs(dl):
        return _resume(state.movement)  # the last step moved latency toward the bound
    return _reverse(_resume(state.movement))


def _below_bound(params: ControllerParams, state: ControllerState, dl: float) -> Movement:
    changed = dl != state.last_difference_ms
    band = params.perf_margin * params.latency_bound_ms
    if params.rule == "printed":
        # line 6 as printed: decrease when *within* the margin, else keep moving as before
        return "decrease" if abs(dl) < band and changed else _resume(state.movement)
    return "decrease" if abs(dl) >= band and changed else "hold"


def _resume(movement: Movement) -> Movement:
    # after a hold the search restarts upwards (the printed init direction)
    return "increase" if movement == "hold" else movement


def _reverse(movement: Movement) -> Movement:
    return "decrease" if movement == "increase" else "increase"


def _clamp(params: ControllerParams, redundancy: float) -> float:
    redundancy = max(params.min_redundancy_pct, redundancy)
    if params.max_redundancy_pct is not None:
        redundancy = min(params.max_redundancy_pct, redundancy)
    return round(min(redundancy, MAX_REDUNDANCY_PCT), 9)  # percentage points: keep repeated float steps readable


def run_trace(params: ControllerParams, metrics_ms: Iterable[float], state: ControllerState | None = None) -> list[ControllerState]:
    """The state after each period of a latency trace (one metric per period)."""
    state = state or ControllerState(redundancy_pct=params.min_redundancy_pct)
    states = []
    for metric in metrics_ms:
        state = controller_step(params, state, metric)
        states.append(state)
    return states


class RedundancyController:
    """Algorithm 2 as a small object: ``update(metric)`` per period, ``level`` for Spark."""

    def __init__(self, params: ControllerParams, state: ControllerState | None = None):
        self.params = params
        self.state = state or ControllerState(redundancy_pct=params.min_redundancy_pct)

    def update(self, metric_ms: float) -> float:
        """Observe one period's metric; returns the new redundancy in percent."""
        self.state = controller_step(self.params, self.state, metric_ms)
        return self.state.redundancy_pct

    @property
    def level(self) -> float:
        """The redundancy as a replication fraction in [0, 1] (Spark runs at most one extra copy)."""
        return min(1.0, self.state.redundancy_pct / 100.0)

    def to_dict(self) -> dict[str, Any]:
        return {"params": self.params.model_dump(mode="json"), "state": self.state.model_dump(mode="json")}

    @classmethod
    def from_dict(cls, data: Any) -> RedundancyController:
        if not isinstance(data, dict) or set(data) - {"params", "state"} or "params" not in data:
            raise InputError("controller: expected an object with 'params' and optional 'state'")
        return cls(validate(ControllerParams, data["params"], "params"),
                   validate(ControllerState, data.get("state") or {}, "state"))


class LatencyTrace(BaseModel):
    """A latency trace document (``ftops plan redundancy --trace``)::

        controller: {latency_bound_ms: 500, perf_margin: 0.1}   # ControllerParams
        period_s: 1                                             # optional, for the report
        metric_ms: [620, 580, 450, ...]                         # one tail latency per period
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = "trace"
    period_s: PositiveSeconds | None = None
    controller: ControllerParams
    metric_ms: list[Milliseconds] = Field(min_length=1)


def load_trace(path: str | Path) -> LatencyTrace:
    return validate(LatencyTrace, read_document(path, "latency trace"), "latency trace")
