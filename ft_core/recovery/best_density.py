"""BestDensity: the query-centric recovery planner (paper 003, Section 5, Algorithm 3, corrected).

Problem: the recovery-scheduling problem of :mod:`ft_core.recovery.problem` (a set-union
knapsack): restart failed partitions within budget R to maximise the priority of the queries whose
failed partitions are all restarted.

Algorithm: *profit density* (Definition 3) ``PD_Q = prt_Q / sum_{p in Q, not yet recovered}
c_p / f_p``, with ``f_p`` the number of failed queries sharing ``p``. Each candidate plan starts
from a *seed* and is extended greedily: repeatedly add the query of largest conditional PD whose
conditional cost (its not-yet-recovered partitions) still fits; the best candidate wins (queries
covered incidentally count too). Corrections to the printed pseudocode (see the paper's digest,
Section 3.2-3.3):

- seeds: the best-density feasible query (CP_0), **every feasible single query** (without them the
  bound fails: example T1) and every feasible pair;
- the ``found`` flag is reset each step (the printed loop never ends once nothing fits);
- ties go to the lower query id (natural order), not the last candidate.

Exact-preserving pruning: any set T of queries with union cost <= R has ``sum_T W_Q <= R`` with
``W_Q = sum_{p in Q} c_p / f_p``, so a fractional knapsack over (prt_Q, W_Q) bounds the optimum;
a seed S can be skipped when ``prt(S) + FK(R - W(S))`` cannot beat the incumbent. ``seeds="all"``
therefore returns the same value as plain enumeration. ``seeds="auto"`` (default) enumerates all
seeds when the estimated work fits ``work_limit`` and otherwise the best-ranked singletons and pairs
(by priority, then density) up to it; the plan's ``full_enumeration`` says which happened.
``seeds="literal"`` is the paper's seed set (CP_0 and pairs, no singletons), kept to show T1.

Guarantee (Theorem 5.1): with full enumeration the plan recovers at least ``1 - e^(-1/d)`` of the
optimum's priority, d = max_p f_p (for d = 1 the pair seeds give Sahni's 2/3 >= 1 - 1/e).

Complexity: one greedy extension is O((M + I) log M) with lazy heap updates (M queries, I = sum of
query sizes): recovering a partition updates the densities of its sharers only. Full enumeration
runs O(M^2) extensions, O(M^2 (M + I) log M) in all (the paper states O(M^3 log M)).

Example (T1 of the digest: a knapsack trap the literal algorithm falls into)::

    >>> from ft_core.recovery.problem import make_problem
    >>> t1 = make_problem({"Q1": (2, ["a"]), "Q2": (10, ["b"])}, {"a": 1.0, "b": 10.0})
    >>> best_density(t1, 10).recovered_queries, best_density(t1, 10, seeds="literal").recovered_queries
    (['Q2'], ['Q1'])
"""

from __future__ import annotations

import math
import time
from bisect import bisect_right
from heapq import heapify, heappop, heappush

from ft_core.errors import InputError
from ft_core.recovery.problem import IndexedProblem, RecoveryPlan, RecoveryProblem, check_budget, index_problem, make_plan

SEED_MODES = ("auto", "all", "literal")
# Work units (queries + query-partition incidences touched) allowed for the seeds in "auto" mode;
# about 1 s of CPython on a 2020s core (see docs/benchmarks/recovery.md, scale section).
DEFAULT_WORK_LIMIT = 1_000_000
_TIE_BITS = 30  # densities equal in their top 30 mantissa bits (~1e-9 relative) are ties: float noise of incremental sums
_INF = math.inf
_TINY = 1e-15  # a remaining weight below this is zero (all its partitions free or recovered)


def best_density(
    problem: RecoveryProblem,
    budget: float,
    *,
    seeds: str = "auto",
    work_limit: int = DEFAULT_WORK_LIMIT,
) -> RecoveryPlan:
    """The BestDensity plan for ``budget`` (see the module docstring)."""
    start = time.perf_counter()
    budget = check_budget(budget)
    search = _Search(index_problem(problem), budget)
    best, tried, full = search.run(seeds, work_limit)
    inst = search.inst
    chosen = [inst.partition_ids[p] for p in range(len(inst.cost)) if best.rec[p]]
    d = problem.max_sharing()
    proven = best.value >= search.fractional_bound(budget) - search.tol or all(n == 0 for n in best.nrem)
    return make_plan(
        problem, "best-density", budget, chosen, time.perf_counter() - start,
        optimal=proven,
        guarantee=1 - math.exp(-1 / d) if d else None, seeds=tried, full_enumeration=full,
    )


def best_density_order(
    problem: RecoveryProblem,
    budget: float,
    *,
    seeds: str = "auto",
    work_limit: int = DEFAULT_WORK_LIMIT,
) -> list[str]:
    """Every failed query in BestDensity's order for ``budget``.

    First the winning candidate plan's queries in the order they were added (seed first), then the
    remaining queries in the order the same greedy continues with an unlimited budget (ties and
    zero-priority queries last, by id). This is the query order of the order-then-pack schedule.
    """
    search = _Search(index_problem(problem), check_budget(budget))
    best, _, _ = search.run(seeds, work_limit)
    search.extend_unbounded(best)
    seen = set(best.order)
    rest = [q for q in range(len(search.inst.query_ids)) if q not in seen]
    return [search.inst.query_ids[q] for q in best.order + rest]


def profit_density(problem: RecoveryProblem, recovered=()) -> dict[str, float]:
    """Definition 3: each outstanding query's PD given already ``recovered`` partitions (conditional).

    >>> from ft_core.recovery.problem import make_problem
    >>> p = make_problem({"Q1": (1, ["p0", "p1"]), "Q2": (1, ["p0", "p2"])}, {"p0": 4, "p1": 1, "p2": 1})
    >>> profit_density(p), profit_density(p, {"p0", "p1"})
    ({'Q1': 0.3333333333333333, 'Q2': 0.3333333333333333}, {'Q2': 1.0})
    """
    done = set(recovered)
    f = problem.sharing()
    out = {}
    for qid in problem.query_ids():
        q = problem.queries[qid]
        left = [p for p in q.partitions if p not in done]
        if left:
            out[qid] = _density(q.priority, math.fsum(problem.cost[p] / f[p] for p in left))
    return out


def _heap_key(density: float) -> float:
    """Min-heap key of a density: negated and rounded to ``_TIE_BITS`` mantissa bits, so that
    densities differing only by float noise tie and the heap's ``(key, query)`` order breaks the
    tie to the lower query id in O(log M), without popping every tied entry."""
    if density == _INF or density == 0.0:
        return -density
    mantissa, exponent = math.frexp(density)
    return -math.ldexp(round(mantissa * (1 << _TIE_BITS)), exponent - _TIE_BITS)


def _density(priority: float, weight: float) -> float:
    if weight > _TINY:
        return priority / weight
    return _INF if priority > 0 else 0.0


class _State:
    """One candidate plan under construction: plain lists, copied from the search's start arrays."""

    __slots__ = ("W", "C", "nrem", "rec", "dead", "heap", "order", "value", "left")

    def __init__(self, search: "_Search") -> None:
        self.W = list(search.W0)
        self.C = list(search.C0)
        self.nrem = list(search.n0)
        self.rec = bytearray(len(search.inst.cost))
        self.dead = bytearray(search.dead0)
        self.heap = list(search.heap0)
        self.order: list[int] = []
        self.value = 0.0
        self.left = search.budget


class _Search:
    """Seeds, greedy extension and the fractional bound over one indexed problem and budget."""

    def __init__(self, inst: IndexedProblem, budget: float) -> None:
        self.inst = inst
        self.budget = budget
        self.share = inst.share
        scale = max([budget, *inst.cost, 1e-12])
        self.tol = 1e-9 * max(1.0, max(inst.priority, default=1.0) * len(inst.priority))
        self.eps = 1e-9 * scale
        self.W0 = [math.fsum(self.share[p] for p in ps) for ps in inst.parts]
        self.C0 = [math.fsum(inst.cost[p] for p in ps) for ps in inst.parts]
        self.n0 = [len(ps) for ps in inst.parts]
        self.dead0 = bytearray(1 if c > budget + self.eps else 0 for c in self.C0)
        self.heap0 = [(_heap_key(_density(pr, w)), q, n) for q, (pr, w, n) in enumerate(zip(inst.priority, self.W0, self.n0)) if not self.dead0[q]]
        heapify(self.heap0)
        self._fk_prepare()

    # ----- the greedy extension (lines 20-31, loop flag reset every step, ties to the lower id)

    def select(self, st: _State, q: int) -> None:
        """Add query ``q`` to the candidate plan: recover its outstanding partitions."""
        inst, share, W, C, nrem, rec, dead, heap = self.inst, self.share, st.W, st.C, st.nrem, st.rec, st.dead, st.heap
        cost, prio, sharers = inst.cost, inst.priority, inst.sharers
        push = heappush
        st.order.append(q)
        for p in inst.parts[q]:
            if rec[p]:
                continue
            rec[p] = 1
            cp, sp = cost[p], share[p]
            st.left -= cp
            for q2 in sharers[p]:
                w = W[q2] - sp
                W[q2] = w
                C[q2] -= cp
                n = nrem[q2] - 1
                nrem[q2] = n
                if n == 0:
                    st.value += prio[q2]
                elif not dead[q2]:
                    push(heap, (_heap_key(prio[q2] / w if w > _TINY else _density(prio[q2], w)), q2, n))

    def extend(self, st: _State, allow_zero: bool = False) -> None:
        """Greedily add the densest query that fits until none does."""
        while True:
            q = self._pop_best(st, allow_zero)
            if q < 0:
                return
            self.select(st, q)

    def extend_unbounded(self, st: _State) -> None:
        """Continue ``st`` as if the budget were unlimited (every outstanding query gets added)."""
        st.left = _INF
        st.dead = bytearray(len(st.nrem))
        st.heap = [(_heap_key(_density(self.inst.priority[q], st.W[q])), q, n) for q, n in enumerate(st.nrem) if n]
        heapify(st.heap)
        self.extend(st, allow_zero=True)

    def _pop_best(self, st: _State, allow_zero: bool) -> int:
        heap, nrem, C, dead = st.heap, st.nrem, st.C, st.dead
        limit = st.left + self.eps
        while heap:
            negd, q, stamp = heap[0]
            if stamp != nrem[q] or dead[q]:
                heappop(heap)
            elif C[q] > limit:
                heappop(heap)
                dead[q] = 1  # C[q] - left never decreases: it will never fit again
            else:
                break
        else:
            return -1
        if heap[0][0] >= 0 and not allow_zero:  # the best density is 0: nothing worth adding
            return -1
        return heappop(heap)[1]  # ties (equal keys) pop the lower query id first

    def run_seed(self, seed: tuple[int, ...]) -> _State:
        st = _State(self)
        for q in seed:
            if st.nrem[q]:
                self.select(st, q)
        self.extend(st)
        return st

    # ----- seeds (lines 9-19, with singleton seeds) and the winner (line 32)

    def run(self, mode: str, work_limit: int) -> tuple[_State, int, bool]:
        """Evaluate the seeds of ``mode``; return the best state, seeds tried, full enumeration."""
        if mode not in SEED_MODES:
            raise InputError(f"seeds: unknown mode {mode!r} (choose from {', '.join(SEED_MODES)})")
        feasible = [q for q in range(len(self.C0)) if not self.dead0[q] and self.inst.priority[q] > 0]
        best = self.run_seed(())  # CP_0: the greedy from nothing starts with the densest feasible query
        tried = 1
        full = mode != "literal"
        n = len(feasible)
        per_seed = 2 * len(self.C0) + sum(self.n0)
        budget_seeds = max(0, work_limit // max(1, per_seed) - 1)
        if mode == "auto" and n + n * (n - 1) // 2 > budget_seeds:
            seeds, full = self._ranked_seeds(feasible, budget_seeds), False
        else:
            seeds = self._seed_list(feasible, mode)
        for seed in seeds:
            if self._seed_bound(seed) <= best.value + self.tol or not self._fits(seed):
                continue
            st = self.run_seed(seed)
            tried += 1
            if st.value > best.value + self.tol:
                best = st
        return best, tried, full

    def _seed_list(self, feasible: list[int], mode: str) -> list[tuple[int, ...]]:
        singles = [] if mode == "literal" else [(q,) for q in feasible]
        pairs = [(a, b) for i, a in enumerate(feasible) for b in feasible[i + 1:]]
        return singles + pairs

    def _ranked_seeds(self, feasible: list[int], count: int) -> list[tuple[int, ...]]:
        """The ``count`` most promising seeds: singletons then pairs of the highest-ranked queries."""
        prio = self.inst.priority
        ranked = sorted(feasible, key=lambda q: (-prio[q], -_density(prio[q], self.W0[q]), q))
        singles = [(q,) for q in ranked[: max(0, count // 2)]]
        k = 1
        while k < len(ranked) and (k + 1) * k // 2 <= count - len(singles):
            k += 1
        top = sorted(ranked[:k])
        pairs = [(a, b) for i, a in enumerate(top) for b in top[i + 1:]]
        return singles + pairs[: max(0, count - len(singles))]

    def _fits(self, seed: tuple[int, ...]) -> bool:
        if len(seed) == 1:
            return True
        parts = set(self.inst.parts[seed[0]]).union(*(self.inst.parts[q] for q in seed[1:]))
        return math.fsum(self.inst.cost[p] for p in parts) <= self.budget + self.eps

    # ----- the fractional-knapsack upper bound over (prt_Q, W_Q)

    def _fk_prepare(self) -> None:
        prio = self.inst.priority
        items = sorted((q for q in range(len(prio)) if not self.dead0[q] and prio[q] > 0),
                       key=lambda q: (-_density(prio[q], self.W0[q]), q))
        self._fk_w, self._fk_p, self._fk_items = [0.0], [0.0], items
        for q in items:
            self._fk_w.append(self._fk_w[-1] + self.W0[q])
            self._fk_p.append(self._fk_p[-1] + prio[q])

    def fractional_bound(self, capacity: float) -> float:
        """``max sum prt_Q x_Q`` s.t. ``sum W_Q x_Q <= capacity``, ``0 <= x <= 1``: >= the optimum."""
        if capacity < 0:
            return 0.0
        k = bisect_right(self._fk_w, capacity + self.eps) - 1
        value = self._fk_p[k]
        if k < len(self._fk_items):
            q = self._fk_items[k]
            value += self.inst.priority[q] * max(0.0, capacity - self._fk_w[k]) / self.W0[q]
        return value

    def _seed_bound(self, seed: tuple[int, ...]) -> float:
        prio = self.inst.priority
        return sum(prio[q] for q in seed) + self.fractional_bound(self.budget - sum(self.W0[q] for q in seed))
