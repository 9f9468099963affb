"""One way to call the HiGHS MILP solver (``highspy``) from ft_core's exact planners.

Problem: minimise ``c @ x`` subject to ``matrix @ x <= upper`` and ``0 <= x <= 1``, some ``x``
integral, within a wall-clock time limit, starting from a known feasible point (a heuristic's plan),
and report what was proven: the best solution found and HiGHS's dual bound, which stays valid when
the time limit stops the search.

Algorithm: HiGHS's branch-and-cut (the same solver ``scipy.optimize.milp`` wraps, through its own
Python API, which also takes a MIP start). A start that gives only the integral columns is completed
by HiGHS (it solves the LP with them fixed). With a time limit HiGHS runs in a forked child process
that reports each improving solution and dual bound through a pipe: HiGHS checks its clock between
steps only, and on a loaded machine some steps of a 32,000-column model ran 15-43 s past the limit
(issue 19's benchmark), so at the limit (plus :data:`GRACE_S`) the caller stops the child and keeps
what it reported. The child uses one thread, so the parent never holds HiGHS threads across a fork. HiGHS sometimes writes to file descriptor 1 from C++
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
import multiprocessing
import os
import sys
import time
from contextlib import contextmanager

import highspy
import numpy as np
from scipy.optimize import OptimizeResult
from scipy.sparse import csc_matrix

_libc = ctypes.CDLL(None)
GRACE_S = 0.2  # how long past its time limit the child may take to report before it is stopped
_BOUND_EVERY_S = 0.05  # dual-bound reports at most this often
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


def _watch(h: highspy.Highs, stop_at: float | None, report) -> None:
    """Interrupt HiGHS at ``stop_at`` (``time.perf_counter()``) and ``report`` its progress: improving
    solutions as ``("solution", x, objective)``, dual bounds as ``("bound", value)``."""
    last = {"bound": -math.inf, "at": 0.0}

    def check(event) -> None:
        now = time.perf_counter()
        if stop_at is not None and now >= stop_at:
            event.interrupt()
        if report is not None and event.callback_type == highspy.cb.HighsCallbackType.kCallbackMipInterrupt:
            bound = event.data_out.mip_dual_bound
            if math.isfinite(bound) and bound > last["bound"] and now - last["at"] >= _BOUND_EVERY_S:
                last["bound"], last["at"] = bound, now
                report(("bound", bound))

    def improved(event) -> None:
        report(("solution", np.array(event.data_out.mip_solution), event.data_out.objective_function_value))

    for event in (h.cbSimplexInterrupt, h.cbIpmInterrupt, h.cbMipInterrupt):
        event.subscribe(check)
    if report is not None:
        h.cbMipImprovingSolution.subscribe(improved)


def solve_milp(c, matrix, upper, integrality, *, time_limit: float | None, rel_gap: float = 1e-9,
               abs_gap: float = 1e-6, start: dict[int, float] | None = None) -> OptimizeResult:
    """Minimise ``c @ x`` s.t. ``matrix @ x <= upper``, ``0 <= x <= 1``, ``x_j`` integral where ``integrality[j]``.

    HiGHS stops when the gap to its dual bound is at most ``rel_gap`` (relative) or ``abs_gap``.
    ``start`` maps column indices to values of a feasible solution (the integral columns suffice).
    Returns ``x`` (None without a feasible solution), ``fun``, ``status`` (0: proven optimal, 1: stopped
    by the time limit, 2: infeasible or failed), ``mip_dual_bound`` (a proven lower bound on ``fun``,
    None when none was proven) and ``message``. With ``time_limit`` the call returns within it plus
    about :data:`GRACE_S`.
    """
    if time_limit is None:
        return _solve(c, matrix, upper, integrality, None, rel_gap, abs_gap, start, None)
    if not (math.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit must be a positive finite number of seconds, got {time_limit!r}")
    stop_at = time.perf_counter() + time_limit  # setting up counts too
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(sender, c, matrix, upper, integrality, stop_at, rel_gap, abs_gap, start),
                        daemon=True)
    child.start()
    sender.close()
    best_x, best_fun, bound, final = None, None, None, None
    try:
        while final is None:
            wait = stop_at + GRACE_S - time.perf_counter()
            if wait <= 0 or not receiver.poll(wait):
                break
            message = receiver.recv()
            if message[0] == "solution" and (best_fun is None or message[2] < best_fun):
                best_x, best_fun = message[1], message[2]
            elif message[0] == "bound":
                bound = message[1] if bound is None else max(bound, message[1])
            elif message[0] == "done":
                final = message[1]
    except EOFError:  # the child died without a last word
        pass
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receiver.close()
    if final is not None:
        return final
    return OptimizeResult(x=best_x, fun=best_fun, status=1 if best_x is not None else 2, mip_dual_bound=bound,
                          mip_node_count=None, message="stopped at the time limit (HiGHS had not returned)")


def _child(sender, c, matrix, upper, integrality, stop_at, rel_gap, abs_gap, start) -> None:
    try:
        result = _solve(c, matrix, upper, integrality, stop_at, rel_gap, abs_gap, start, sender.send)
        sender.send(("done", result))
    finally:
        sender.close()
        os._exit(0)  # no atexit handlers or finalizers of the parent's state in the child


def _solve(c, matrix, upper, integrality, stop_at, rel_gap, abs_gap, start, report) -> OptimizeResult:
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
        _watch(h, stop_at, report)
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
