"""One way to call the HiGHS MILP solver (``scipy.optimize.milp``) from ft_core's exact planners.

HiGHS sometimes writes diagnostics straight to file descriptor 1 from C++, which would corrupt
the CLI's ``--json`` output; :func:`solve_milp` sends the solver's own output to stderr.
"""

from __future__ import annotations

import ctypes
import os
import sys
from contextlib import contextmanager

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp


_libc = ctypes.CDLL(None)


@contextmanager
def _stdout_to_stderr():
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        _libc.fflush(None)  # HiGHS writes through C stdio: flush it while fd 1 still points at stderr
        os.dup2(saved, 1)
        os.close(saved)


def solve_milp(c, matrix, upper, integrality, *, time_limit: float | None, rel_gap: float = 1e-9) -> OptimizeResult:
    """Minimise ``c @ x`` subject to ``matrix @ x <= upper``, ``0 <= x <= 1``, with integrality."""
    options = {"disp": False, "mip_rel_gap": rel_gap}
    if time_limit is not None:
        options["time_limit"] = max(0.01, float(time_limit))
    with _stdout_to_stderr():
        return milp(
            c,
            constraints=LinearConstraint(matrix, -np.inf, upper),
            integrality=integrality,
            bounds=Bounds(np.zeros(len(c)), np.ones(len(c))),
            options=options,
        )
