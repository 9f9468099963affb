"""One way to call the HiGHS MILP solver (``highspy``) from ft_core's exact planners.

Problem: minimise ``c @ x`` subject to ``matrix @ x <= upper`` and ``0 <= x <= 1``, some ``x``
integral, within a wall-clock time limit, starting from a known feasible point (a heuristic's plan),
and report what was proven: the best solution found and HiGHS's dual bound, which stays valid when
the time limit stops the search.

Algorithm: HiGHS's branch-and-cut (the same solver ``scipy.optimize.milp`` wraps, through its own
Python API, which also takes a MIP start). A start that gives only the integral columns is completed
by HiGHS (it solves the LP with them fixed). HiGHS sometimes writes to file descriptor 1 from C++
(diagnostics), which would corrupt the CLI's ``--json`` output: everything it prints goes to stderr,
except its start-up banner, which goes nowhere. Complexity: exponential in the worst case; the time limit bounds it.

    >>> import numpy as np
    >>> from scipy.sparse import csr_matrix
    >>> res = solve_milp(np.array([-1.0, -1.0]), csr_matrix([[1.0, 1.0]]), np.array([1.5]), np.array([1, 1]),
    ...                  time_limit=5.0)
    >>> round(res.fun, 6), res.status, round(res.mip_dual_bound, 6)
    (-1.0, 0, -1.0)
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import time
from contextlib import contextmanager

import highspy
import numpy as np
from scipy.optimize import OptimizeResult
from scipy.sparse import csc_matrix

_libc = ctypes.CDLL(None)
_OK_WITH_SOLUTION = {highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit,
                     highspy.HighsModelStatus.kInterrupt, highspy.HighsModelStatus.kSolutionLimit,
                     highspy.HighsModelStatus.kIterationLimit}


@contextmanager
def _stdout_to(fd: int):
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(fd, 1)
        yield
    finally:
        _libc.fflush(None)  # HiGHS writes through C stdio: flush it while fd 1 still points elsewhere
        os.dup2(saved, 1)
        os.close(saved)


def _quiet_highs() -> highspy.Highs:
    """A Highs object without its start-up banner (printed before any option can turn it off)."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        with _stdout_to(null):
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
    finally:
        os.close(null)
    return h


def _interrupt_at(h: highspy.Highs, stop_at: float) -> None:
    """Interrupt HiGHS at ``stop_at`` (``time.perf_counter()``): its own time limit is checked between
    steps, and a long LP step on a large model overran it by over a second (issue 19's contract)."""

    def check(event) -> None:
        if time.perf_counter() >= stop_at:
            event.interrupt()

    for event in (h.cbSimplexInterrupt, h.cbIpmInterrupt, h.cbMipInterrupt):
        event.subscribe(check)


def solve_milp(c, matrix, upper, integrality, *, time_limit: float | None, rel_gap: float = 1e-9,
               abs_gap: float = 1e-6, start: dict[int, float] | None = None) -> OptimizeResult:
    """Minimise ``c @ x`` s.t. ``matrix @ x <= upper``, ``0 <= x <= 1``, ``x_j`` integral where ``integrality[j]``.

    HiGHS stops when the gap to its dual bound is at most ``rel_gap`` (relative) or ``abs_gap``.
    ``start`` maps column indices to values of a feasible solution (the integral columns suffice).
    Returns ``x`` (None without a feasible solution), ``fun``, ``status`` (0: proven optimal, 1: stopped
    by the time limit, 2: infeasible or failed), ``mip_dual_bound`` (a proven lower bound on ``fun``,
    None when none was proven) and ``message``.
    """
    if time_limit is not None and not (math.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit must be a positive finite number of seconds, got {time_limit!r}")
    stop_at = None if time_limit is None else time.perf_counter() + time_limit  # setting up counts too
    a = csc_matrix(matrix)
    n_rows, n_cols = a.shape
    lp = highspy.HighsLp()
    lp.num_col_ = n_cols
    lp.num_row_ = n_rows
    lp.col_cost_ = np.asarray(c, dtype=float)
    lp.col_lower_ = np.zeros(n_cols)
    lp.col_upper_ = np.ones(n_cols)
    lp.row_lower_ = np.full(n_rows, -highspy.kHighsInf)
    lp.row_upper_ = np.asarray(upper, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_ = n_cols
    lp.a_matrix_.num_row_ = n_rows
    lp.a_matrix_.start_ = a.indptr.astype(np.int32)
    lp.a_matrix_.index_ = a.indices.astype(np.int32)
    lp.a_matrix_.value_ = a.data.astype(float)
    integral = np.asarray(integrality) > 0
    if integral.any():
        lp.integrality_ = np.where(integral, highspy.HighsVarType.kInteger, highspy.HighsVarType.kContinuous)
    h = _quiet_highs()
    with _stdout_to(2):
        h.setOptionValue("mip_rel_gap", rel_gap)
        h.setOptionValue("mip_abs_gap", abs_gap)
        h.setOptionValue("threads", 1)  # the planners run beside other work; HiGHS's MIP search is serial anyway
        h.passModel(lp)
        if start:
            cols = np.fromiter(start.keys(), dtype=np.int32, count=len(start))
            vals = np.fromiter(start.values(), dtype=float, count=len(start))
            h.setSolution(len(cols), cols, vals)
        if stop_at is not None:
            h.setOptionValue("time_limit", max(1e-3, stop_at - time.perf_counter()))
            _interrupt_at(h, stop_at)
        h.run()
        status = h.getModelStatus()
        info = h.getInfo()
        has_solution = status in _OK_WITH_SOLUTION and info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
        x = np.array(h.getSolution().col_value) if has_solution else None
        message = h.modelStatusToString(status)
    dual = info.mip_dual_bound if integral.any() else (info.objective_function_value if has_solution else -math.inf)
    code = 0 if status == highspy.HighsModelStatus.kOptimal else (1 if status in _OK_WITH_SOLUTION else 2)
    return OptimizeResult(
        x=x,
        fun=info.objective_function_value if has_solution else None,
        status=code,
        mip_dual_bound=dual if dual is not None and math.isfinite(dual) else None,
        mip_node_count=info.mip_node_count,
        message=message,
    )
