"""Why a redundancy scenario missed its deadlines, and what a controller period can tell apart (issue 38, item 3).

Problem: the redundancy benchmark (``ftops bench redundancy``) found the feedback controllers missing more deadlines
than the best static level. Two questions decide whether thesis 002's controller can transfer to micro-batches:
(1) what causes each missed batch (a pause the speculation did not cover, a pause it covered too late, or no pause
at all), and (2) whether one controller period's metric can even tell a better level from a worse one.

Algorithms:

- :func:`miss_causes`: a missed batch is classed by the executor pauses overlapping its interval and the speculative
  copies Spark ran for it (from the event log): ``no pause`` (the machine, not a fault), ``pause, no copy``,
  ``pause, copy`` (a copy ran: it came too late or did not cover the stall). O((B + P) log P) for B batches and P
  pauses.
- :func:`ranking_odds`: the chance that the nearest-rank p90 of ``period`` batches drawn (with replacement) from the
  better scenario's measured durations is below that of ``period`` batches from the worse one: how often one
  controller period (Algorithm 2 compares a period with the one before it, Sec. 4.2) points the right way.
  Bootstrap of ``trials`` pairs, O(trials x period log period). :func:`period_odds` for several periods;
  :func:`period_needed` (:func:`first_confident` of those odds): the smallest period whose odds reach a confidence.

    >>> miss_causes({0: (0.0, 3000), 1: (10.0, 3000), 2: (20.0, 1000)}, [(1.0, 1500)], {}, 2000)
    {'no pause': 1, 'pause, no copy': 1, 'pause, copy': 0}
    >>> ranking_odds([1.0] * 10, [2.0] * 10, period=4)
    1.0
"""

from __future__ import annotations

import bisect
import random

from spark_jobs.redundancy.runtime import percentile

CAUSES = ("no pause", "pause, no copy", "pause, copy")
PERIODS = (4, 8, 16, 32, 64, 128)


def miss_causes(batches: dict[int, tuple[float, float]], pauses: list[tuple[float, float]],
                copies: dict[int, int], deadline_ms: float) -> dict[str, int]:
    """Missed batches by cause. ``batches``: batch id -> (start epoch s, duration ms); ``pauses``: (start epoch s,
    duration ms) of each executor pause; ``copies``: speculative attempts per batch id."""
    spans = sorted((start, start + ms / 1000) for start, ms in pauses)
    starts = [s for s, _ in spans]
    longest = max((end - start for start, end in spans), default=0.0)
    found = dict.fromkeys(CAUSES, 0)
    for batch, (start, ms) in batches.items():
        if ms <= deadline_ms:
            continue
        end = start + ms / 1000
        # pauses starting after start - longest may overlap [start, end]
        lo, hi = bisect.bisect_left(starts, start - longest), bisect.bisect_right(starts, end)
        paused = any(p_end > start for _, p_end in spans[lo:hi])
        found["no pause" if not paused else "pause, copy" if copies.get(batch) else "pause, no copy"] += 1
    return found


def ranking_odds(better: list[float], worse: list[float], period: int, q: float = 90, trials: int = 2000,
                 seed: int = 0) -> float:
    """P(p``q`` of ``period`` draws from ``better`` < that of ``period`` draws from ``worse``); ties count half."""
    if not better or not worse:
        raise ValueError("ranking_odds: both scenarios need measured batches")
    rng = random.Random(seed)
    score = 0.0
    for _ in range(trials):
        a = percentile(rng.choices(better, k=period), q)
        b = percentile(rng.choices(worse, k=period), q)
        score += 1.0 if a < b else 0.5 if a == b else 0.0
    return round(score / trials, 3)


def period_odds(better: list[float], worse: list[float], periods: tuple[int, ...] = PERIODS) -> dict[int, float]:
    """:func:`ranking_odds` for each of ``periods``."""
    return {p: ranking_odds(better, worse, p) for p in periods}


def first_confident(odds: dict[int, float], confidence: float = 0.9) -> int | None:
    """The smallest period of :func:`period_odds`'s whose odds reach ``confidence``; None if none does."""
    return min((p for p, o in odds.items() if o >= confidence), default=None)


def period_needed(better: list[float], worse: list[float], confidence: float = 0.9,
                  periods: tuple[int, ...] = PERIODS) -> int | None:
    """The smallest of ``periods`` whose :func:`ranking_odds` reach ``confidence``; None if none does."""
    return first_confident(period_odds(better, worse, periods), confidence)
