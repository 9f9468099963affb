"""The catch-up-aware recovery policy: restart in the order that brings queries back to normal soonest (issue 15).

Problem: the staged schedule of paper 003 (:mod:`.staged`) orders queries by BestDensity, which values a
query by its priority over the capacity its restart needs. When catch-up dominates (:mod:`.catch_up`), a
partition restarted later also has more input to replay, and partitions restarted together share a node
while they replay it; the order that maximises recovered priority per stage need not minimise the
priority-weighted mean time until each query is back to normal. Choose the schedule that does, by the
catch-up model's prediction.

Algorithm: score every schedule by the priority of the queries it never brings back (an unscheduled
partition, an overloaded node), then by the predicted priority-weighted mean time back of the others.
Candidates: the three policies of :mod:`.staged` (order-then-pack with BestDensity's order, per-stage,
operator-centric), then a local search over query orders packed by order-then-pack: from the best
order-based candidate (the order in which it brings queries back), move one query earlier to any
position, keep the first move that lowers the predicted mean, and repeat until no move helps,
``max_evaluations`` schedules were scored or ``time_limit_s`` passed (the search then returns the best so
far). The result is never predicted worse than any policy of :mod:`.staged`. Below the activation
threshold (``failures`` < 2) recovery is blocking, as in paper 003.

Complexity: at most ``max_evaluations`` schedules, each O(S * P * nodes) to pack and O(P^2) to predict,
for S stages and P failed partitions (one pass of moves is O(Q^2) schedules for Q queries); on this
project's machine 1 s for 20 queries, 4 s for 50 and the 10 s default limit for 200.

Example: one node arrives 10 s after the failure, a second at 20 s, each fits one partition. BestDensity
restarts the priority-2 query first; but query ``slow``'s partition processes barely faster than its
input arrives (10 rows/s in, 11 out), so each second it waits costs it 11 s, while ``fast`` catches up
almost at once. Restarting ``slow`` first: weighted mean (2 x 20.2 + 110) / 3 = 50.1 s instead of
(2 x 10.1 + 220) / 3 = 80.1 s::

    >>> from ft_core.recovery.problem import parse_problem
    >>> problem = parse_problem({"queries": {"fast": {"priority": 2, "partitions": ["a"]},
    ...                                      "slow": {"priority": 1, "partitions": ["b"]}},
    ...                          "cost": {"a": 0.8, "b": 0.8}})
    >>> model = CatchUpModel(rates={"a": UnitRates(input_rate=10, processing_rate=1000),
    ...                             "b": UnitRates(input_rate=10, processing_rate=11)}, stage_times=[0, 10, 20])
    >>> plan_stages(problem, 0.0, [1.0, 1.0]).query_order
    ['fast', 'slow']
    >>> schedule = plan_catch_up(problem, 0.0, [1.0, 1.0], model)
    >>> schedule.query_order, schedule.predicted_back_s, schedule.predicted_weighted_mean_s
    (['slow', 'fast'], {'fast': 20.202, 'slow': 110.0}, 50.135)
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from ft_core.deadline import Deadline, check_time_limit
from ft_core.errors import InputError
from ft_core.recovery.catch_up import CatchUpModel, UnitRates, predict_catch_up, weighted_mean, with_prediction
from ft_core.recovery.problem import RecoveryProblem
from ft_core.recovery.staged import ACTIVATION_THRESHOLD, DEFAULT_NODE_CAP, POLICIES, StagedSchedule, plan_stages

POLICY = "catch-up"

__all__ = ["POLICY", "plan_catch_up", "CatchUpModel", "UnitRates"]


def plan_catch_up(problem: RecoveryProblem, capacity: float | Sequence[float], arrivals: Sequence[float],
                  model: CatchUpModel, *, node_cap: float = DEFAULT_NODE_CAP, failures: int | None = None,
                  max_evaluations: int = 400, time_limit_s: float | None = 10.0,
                  started: float | None = None) -> StagedSchedule:
    """The schedule with the least predicted priority-weighted time back (see the module docstring);
    ``started``: when the caller's time limit began (default now)."""
    start = time.perf_counter()
    deadline = Deadline(check_time_limit(time_limit_s, "time_limit_s"), start=start if started is None else started)
    if isinstance(max_evaluations, bool) or not isinstance(max_evaluations, int) or max_evaluations < 1:
        raise InputError(f"max_evaluations: must be a whole number >= 1, got {max_evaluations!r}")
    stages = dict(capacity=capacity, arrivals=arrivals, node_cap=node_cap, failures=failures)
    if failures is not None and failures < ACTIVATION_THRESHOLD:  # blocking, whatever the order
        return _labelled(problem, plan_stages(problem, **stages), model, start)
    search = _Search(problem, model)
    for policy in POLICIES:
        search.score(plan_stages(problem, **stages, policy=policy))
    order = _back_order(problem, search.best, model)

    def spent() -> bool:
        return search.evaluations >= max_evaluations or deadline.expired()

    improved = True
    while improved and not spent():
        improved = False
        for i in range(1, len(order)):
            for j in range(i):
                moved = order[:j] + [order[i]] + order[j:i] + order[i + 1:]
                if search.score(plan_stages(problem, **stages, order=moved)):
                    order, improved = moved, True
                    break
                if spent():
                    break
            if improved or spent():
                break
    return _labelled(problem, search.best, model, start)


class _Search:
    """The best schedule so far. Score: first the priority of the queries never back (an unscheduled
    partition, an overloaded node), then the priority-weighted mean time back of the others; lower is
    better, so the search still compares schedules when some query can never come back."""

    def __init__(self, problem: RecoveryProblem, model: CatchUpModel) -> None:
        self.problem, self.model = problem, model
        self.best: StagedSchedule | None = None
        self.best_score = (math.inf, math.inf)
        self.evaluations = 0

    def score(self, schedule: StagedSchedule) -> bool:
        """Score ``schedule``; True when it is strictly better than the best so far (and becomes it)."""
        self.evaluations += 1
        back = predict_catch_up(self.problem, schedule, self.model).query_back_s
        priority = {q: self.problem.queries[q].priority for q in back}
        never = math.fsum(priority[q] for q, t in back.items() if t is None)
        mean = weighted_mean({q: t for q, t in back.items() if t is not None}, priority)
        value = (never, math.inf if mean is None else mean)
        if self.best is None or value[0] < self.best_score[0] - 1e-9 or (
                abs(value[0] - self.best_score[0]) <= 1e-9 and value[1] < self.best_score[1] - 1e-9):
            self.best, self.best_score = schedule, value
            return True
        return False


def _back_order(problem: RecoveryProblem, schedule: StagedSchedule, model: CatchUpModel) -> list[str]:
    """The failed queries in the order ``schedule`` is predicted to bring them back (never: last, by id)."""
    back = predict_catch_up(problem, schedule, model).query_back_s
    ids = problem.query_ids()
    return sorted(ids, key=lambda q: (back[q] is None, back[q] or 0.0, ids.index(q)))


def _labelled(problem: RecoveryProblem, schedule: StagedSchedule, model: CatchUpModel, start: float) -> StagedSchedule:
    return with_prediction(problem, schedule, model).model_copy(update={"policy": POLICY,
                                                                        "elapsed_s": time.perf_counter() - start})
