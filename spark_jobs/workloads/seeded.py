"""Seeded randomness for the sample inputs: the same parameters and file index always give the same
records, whether a file is written in bulk or appended live (:mod:`spark_jobs.pipeline.sample_input`).

    >>> count_in_file(2.5, 1.0, 0), count_in_file(2.5, 1.0, 1)
    (2, 3)
    >>> apportion(10, zipf_probabilities(3, 1.0))
    [5, 3, 2]
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


def rng(seed: int, *parts: int) -> np.random.Generator:
    """A generator seeded with ``(seed, *parts)``: one independent stream per source and file."""
    return np.random.default_rng([seed, *parts])


def file_slice_ms(start_ms: int, file_s: float, index: int) -> tuple[int, int]:
    """The event-time range ``[lo, hi)`` of input file ``index``."""
    span = file_s * 1000
    return start_ms + round(index * span), start_ms + round((index + 1) * span)


def count_in_file(rate: float, file_s: float, index: int) -> int:
    """Records in file ``index`` at ``rate`` per second: the whole numbers of the running total, so
    fractional rates add up exactly over files."""
    per_file = rate * file_s
    return math.floor((index + 1) * per_file + 1e-9) - math.floor(index * per_file + 1e-9)


def sorted_times(generator: np.random.Generator, lo: int, hi: int, n: int) -> np.ndarray:
    return np.sort(generator.integers(lo, hi, size=n))


@lru_cache(maxsize=256)
def _zipf(n: int, s: float) -> tuple[float, ...]:
    weights = [1.0 / (r ** s) for r in range(1, n + 1)]
    total = sum(weights)
    return tuple(w / total for w in weights)


def zipf_probabilities(n: int, s: float) -> list[float]:
    """P(rank r) proportional to 1 / r^s, r = 1..n."""
    return list(_zipf(n, s))


def apportion(total: int, probs: list[float]) -> list[int]:
    """Largest-remainder apportionment of ``total`` items by ``probs`` (deterministic, exact sum)."""
    quotas = [total * p for p in probs]
    counts = [int(q) for q in quotas]
    order = sorted(range(len(probs)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts
