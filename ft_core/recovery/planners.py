"""Choosing a recovery planner by name: the one entry point the CLI, Spark jobs and DAGs use.

    >>> from ft_core.recovery.problem import parse_problem
    >>> problem = parse_problem({"queries": {"q": {"priority": 2, "partitions": ["A[0]"]}}, "cost": {"A[0]": 1}})
    >>> plan_recovery(problem, 1, "best-density").recovered_queries
    ['q']
"""

from __future__ import annotations

from typing import Any

from ft_core.errors import InputError
from ft_core.recovery.best_density import best_density
from ft_core.recovery.operator_centric import operator_centric
from ft_core.recovery.problem import RecoveryPlan, RecoveryProblem

ALGORITHMS = ("exact", "best-density", "operator-centric")
_PLANNERS = {"best-density": best_density, "operator-centric": operator_centric}


def plan_recovery(problem: RecoveryProblem, budget: float, algorithm: str = "best-density", **options: Any) -> RecoveryPlan:
    """Dispatch to a planner by name: ``exact``, ``best-density`` or ``operator-centric``."""
    if algorithm == "exact":
        from ft_core.recovery.exact import exact_recovery  # HiGHS and scipy: only when asked for

        return exact_recovery(problem, budget, **options)
    planner = _PLANNERS.get(algorithm)
    if planner is None:
        raise InputError(f"algorithm: unknown {algorithm!r} (choose from {', '.join(ALGORITHMS)})")
    return planner(problem, budget, **options)
