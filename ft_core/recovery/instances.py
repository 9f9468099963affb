"""Synthetic recovery instances: the query generator of paper 003's planner evaluation (Section 7.3).

Problem: the paper compares its planners on "synthetic topologies" from a generator with "the
number of queries, the size of each query, the distribution of query priority and the skewness of
partition sharing frequency" as parameters (18 queries so that DP finishes; Fig. 16: maximum share
frequency 3 or 6, Zipf-distributed sharing with skew 0.2 or 0.5, priorities uniform in 1-10 or
rising linearly 1 -> 10 with the query's workload). The generator itself is not published.

Algorithm (our reading, a two-level topology): each query has one private failed output partition
(level 1) fed by ``size - 1`` failed upstream partitions (level 0) drawn from a shared pool without
replacement. A pool partition's popularity follows Zipf with exponent ``skew`` over its rank (0 =
uniform), and no partition is shared by more than ``max_share`` queries (a saturated pool grows a
new partition). The pool holds ``M * (mean size - 1) / ((1 + max_share) / 2)`` partitions, so
sharing is dense enough for the cap to matter. Costs are integer CPU percentages uniform in
``cost``; priorities are uniform integers 1-10 (``"random"``) or ``1 + 9 * (C_q - C_min) / (C_max -
C_min)`` rounded (``"cost"``, C_q the query's total failed cost). Every listed partition is failed.

Complexity: O(M * size * pool) with the weighted draws; 10,000 queries take well under a second.

Example::

    >>> problem = random_instance(InstanceSpec(queries=18, max_share=3), seed=7)
    >>> len(problem.queries), problem.max_sharing() <= 3
    (18, True)
"""

from __future__ import annotations

import random
from bisect import bisect_left
from itertools import accumulate
from dataclasses import dataclass
from typing import Literal

from ft_core.recovery.problem import RecoveryProblem, make_problem


@dataclass(frozen=True)
class InstanceSpec:
    """Parameters of one generator setting (defaults: Fig. 16(a) with maximum sharing 3)."""

    queries: int = 18
    query_size: tuple[int, int] = (2, 6)
    max_share: int = 3
    skew: float = 0.0
    priority: Literal["random", "cost"] = "random"
    cost: tuple[int, int] = (1, 10)


def random_instance(spec: InstanceSpec, seed: int) -> RecoveryProblem:
    """One reproducible instance of ``spec``."""
    rng = random.Random(seed)
    lo, hi = spec.query_size
    mean_shared = max(0.0, (lo + hi) / 2 - 1)
    pool = [f"u{i}" for i in range(max(1, round(spec.queries * mean_shared / ((1 + spec.max_share) / 2))))]
    uses = [0] * len(pool)
    queries: dict[str, list[str]] = {}
    for j in range(spec.queries):
        shared = _draw(rng, pool, uses, rng.randint(lo, hi) - 1, spec)
        queries[f"Q{j}"] = [pool[i] for i in shared] + [f"o{j}"]
    names = pool + [f"o{j}" for j in range(spec.queries)]
    used = {p for ps in queries.values() for p in ps}
    cost = {p: float(rng.randint(*spec.cost)) for p in names if p in used}
    level = {p: (0 if p.startswith("u") else 1) for p in cost}
    prio = _priorities(rng, queries, cost, spec.priority)
    return make_problem({q: (prio[q], ps) for q, ps in queries.items()}, cost, level=level, name=f"synthetic-{seed}")


def _draw(rng: random.Random, pool: list[str], uses: list[int], k: int, spec: InstanceSpec) -> list[int]:
    """``k`` distinct pool partitions by Zipf popularity among those below the sharing cap.

    Rejection sampling over the whole pool (cumulative weights, O(log pool) a draw), falling back
    to an explicit draw over the open partitions when most of the pool is saturated.
    """
    cum = _cumulative(pool, spec.skew)
    chosen: list[int] = []
    for _ in range(k):
        i = -1
        for _attempt in range(32):
            j = bisect_left(cum, rng.random() * cum[-1])
            if uses[j] < spec.max_share and j not in chosen:
                i = j
                break
        if i < 0:
            i = _draw_open(rng, pool, uses, chosen, spec)
            cum = _cumulative(pool, spec.skew)
        chosen.append(i)
        uses[i] += 1
    return chosen


def _draw_open(rng: random.Random, pool: list[str], uses: list[int], chosen: list[int], spec: InstanceSpec) -> int:
    open_ = [i for i in range(len(pool)) if uses[i] < spec.max_share and i not in chosen]
    if not open_:
        pool.append(f"u{len(pool)}")
        uses.append(0)
        return len(pool) - 1
    return rng.choices(open_, weights=[1.0 / (i + 1) ** spec.skew for i in open_])[0]


_CUM_CACHE: dict[tuple[int, float], list[float]] = {}


def _cumulative(pool: list[str], skew: float) -> list[float]:
    key = (len(pool), skew)
    if key not in _CUM_CACHE:
        _CUM_CACHE.clear()
        _CUM_CACHE[key] = list(accumulate(1.0 / (i + 1) ** skew for i in range(len(pool))))
    return _CUM_CACHE[key]


def _priorities(rng: random.Random, queries: dict[str, list[str]], cost: dict[str, float], mode: str) -> dict[str, float]:
    if mode == "random":
        return {q: float(rng.randint(1, 10)) for q in queries}
    total = {q: sum(cost[p] for p in ps) for q, ps in queries.items()}
    lo, hi = min(total.values()), max(total.values())
    return {q: float(1 + round(9 * (c - lo) / (hi - lo))) if hi > lo else 1.0 for q, c in total.items()}
