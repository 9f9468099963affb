"""A wall-clock deadline shared by the steps of one command (issue 19's time-limit contract).

Problem: ``--time-limit`` is a promise about the whole command (loading, heuristics, building a
model, solving, checking the answer), not about one solver call. Each step asks how much time is
left and stops early, with the best it has, when there is none.

Algorithm: a start time from ``time.perf_counter`` and a limit; O(1) per question.

    >>> d = Deadline(None)
    >>> d.remaining(), d.expired()
    (inf, False)
    >>> Deadline(0.5, start=time.perf_counter() - 1.0).expired()
    True
"""

from __future__ import annotations

import math
import time

from ft_core.errors import InputError


def check_time_limit(seconds: float | None, field: str = "time_limit") -> float | None:
    """``seconds`` if it is a positive finite number (or None: no limit); InputError naming ``field`` otherwise."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0:
        raise InputError(f"{field}: must be a positive finite number of seconds, got {seconds!r}")
    return float(seconds)


class Deadline:
    """``seconds`` from ``start`` (default: now); ``None`` means no deadline."""

    def __init__(self, seconds: float | None, *, start: float | None = None) -> None:
        self.start = time.perf_counter() if start is None else start
        self.seconds = seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float:
        return math.inf if self.seconds is None else self.seconds - self.elapsed()

    def expired(self) -> bool:
        return self.remaining() <= 0
