"""Checkpoint-interval tuning from profiling runs: Chiron's modelling and optimisation (paper 004, Sec. IV-B/C).

Problem: given profiling runs of a job at several checkpoint intervals (CI) and a QoS bound ``C_TRT``
on the total recovery time, choose the CI with the lowest predicted average latency whose predicted
total recovery time (TRT) is at most ``C_TRT``.

Algorithm:

1. Per interval, the medians over the repetitions (:func:`ft_core.checkpoint.profiles.summarise`).
2. ``P(CI)``: a second-order polynomial fitted by least squares (``numpy.polyfit(x, y, 2)``) to the
   median latency; ``A(CI)``: the same fit to the TRT heuristic
   (:func:`ft_core.checkpoint.recovery_time.total_recovery_time`) evaluated at each profiled interval with
   ``E`` from the chosen case (min 0, avg CI/2, max CI). ``x`` is the CI in **seconds** (better
   conditioned than ms), so the coefficients (highest degree first) are per second. R^2 is
   ``1 - SS_res/SS_tot`` on the fitted points (1.0 when the points are constant, which the quadratic
   fits exactly).
3. The paper inverts ``A`` ("CI = A^-1(C_TRT)") and evaluates ``P`` there. That equals the lowest
   latency only when ``A`` rises and ``P`` falls; we follow the digest's robust reading and minimise
   ``P`` over the feasible set ``{CI in [CI_min, CI_max] : A(CI) <= C_TRT}``, solved analytically:
   the feasible set is at most two intervals bounded by the real roots of ``A(CI) - C_TRT`` and the
   profiled range (never extrapolated), and the minimum of the quadratic ``P`` on an interval is at
   an end or at its vertex. Where the paper's assumptions hold this is exactly the root of
   ``A = C_TRT`` (digest Example B: CI* = 57.759 s, L* = 1434.45 ms).
4. No feasible CI: :class:`~ft_core.errors.InfeasibleError` with the smallest predicted TRT in the
   profiled range and where it is reached.

Default case ``max``: the paper leaves the choice between the average and the worst case to the user
and its experiments plan with ``A_max`` (Sec. V); an upper bound on recovery is only guaranteed by
the worst case. Default variant ``paper_eq4`` (the equations as printed) with the paper's 1 ms
threshold; see :mod:`ft_core.checkpoint.recovery_time` for the corrected readings ``eq2`` and ``closed_form``.
Profiled intervals whose median utilisation ``I_avg/I_max`` is >= 1 have an infinite TRT, which no
polynomial fits: they raise :class:`~ft_core.errors.InputError` naming the interval.

The plan also reports Young's and Daly's intervals when a checkpoint cost (median
``checkpoint_duration_ms``) and an MTBF are known; they are baselines and do not affect the choice.

Complexity: O(P R log R) for the medians of P intervals of R runs, O(P) for the fits and O(1) for
the optimisation.

Example (three intervals; a rising recovery and falling latency)::

    >>> from ft_core.checkpoint.profiles import parse_profiles
    >>> runs = lambda lat, rec: [{"avg_ingress_rate": 1, "max_ingress_rate": 2, "avg_latency_ms": lat,
    ...                           "recovery_time_s": rec, "warmup_time_s": 2}]
    >>> doc = parse_profiles({"detection_timeout_s": 3, "profiles": [
    ...     {"checkpoint_interval_ms": 10_000, "repetitions": runs(900, 5)},
    ...     {"checkpoint_interval_ms": 20_000, "repetitions": runs(700, 6)},
    ...     {"checkpoint_interval_ms": 30_000, "repetitions": runs(650, 7)}]})
    >>> plan = plan_checkpoint(doc, 46, variant="closed_form")
    >>> round(plan.checkpoint_interval_ms), round(plan.predicted_recovery_s, 6)
    (25000, 46.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from ft_core.checkpoint.profiles import IntervalSummary, ProfilesDocument, summarise
from ft_core.errors import InfeasibleError, InputError
from ft_core.checkpoint.recovery_time import (
    CASES,
    DEFAULT_CASE,
    DEFAULT_VARIANT,
    PAPER_EPS_MS,
    Case,
    Variant,
    daly_interval,
    reprocess_time,
    total_recovery_time,
    young_interval,
)

_ROOT_IMAG_TOL = 1e-9


class QuadraticModel(BaseModel):
    """``y = c2 x^2 + c1 x + c0`` with ``x`` the checkpoint interval in seconds; ``r2`` on the fitted points."""

    coefficients: tuple[float, float, float]
    r2: float

    def predict(self, interval_s):
        """The model at ``interval_s`` (a number or a numpy array, seconds)."""
        return np.polyval(self.coefficients, interval_s)


class ProfilePoint(BaseModel):
    """One profiled interval: the medians the models were fitted to, and the models' predictions."""

    checkpoint_interval_ms: float
    repetitions: int
    avg_latency_ms: float
    utilisation: float
    recovery_s: float
    predicted_latency_ms: float
    predicted_recovery_s: float


class CheckpointPlan(BaseModel):
    """Chiron's output (CI, C_TRT, L_avg) plus the models, baselines and feasible range."""

    checkpoint_interval_ms: float
    predicted_latency_ms: float
    predicted_recovery_s: float
    r2: dict[str, float]
    max_recovery_s: float
    case: Case
    variant: Variant
    eps_ms: float
    profiled_range_ms: tuple[float, float]
    feasible_ranges_ms: list[tuple[float, float]]
    young_interval_ms: float | None
    daly_interval_ms: float | None
    checkpoint_cost_ms: float | None
    mtbf_s: float | None
    latency_model: QuadraticModel
    recovery_model: QuadraticModel
    recovery_r2_by_case: dict[str, float]
    points: list[ProfilePoint]
    warnings: list[str]


def r_squared(observed: Sequence[float], fitted: Sequence[float]) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot``; 1.0 for constant observations."""
    y, f = np.asarray(observed, dtype=float), np.asarray(fitted, dtype=float)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    ss_res = float(np.sum((y - f) ** 2))
    if ss_tot <= 1e-24 * max(1.0, float(np.sum(y**2))):
        return 1.0
    return 1.0 - ss_res / ss_tot


def fit_quadratic(interval_s: Sequence[float], values: Sequence[float]) -> QuadraticModel:
    """Least-squares second-order polynomial (Sec. IV-B, k=2); needs >= 3 distinct intervals."""
    x, y = np.asarray(interval_s, dtype=float), np.asarray(values, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise InputError(f"fit: intervals and values differ in shape ({x.shape} vs {y.shape})")
    if len(np.unique(x)) < 3:
        raise InputError(f"fit: a second-order polynomial needs at least 3 distinct intervals, got {len(np.unique(x))}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise InputError("fit: intervals and values must be finite")
    coef = np.polyfit(x, y, 2)
    return QuadraticModel(coefficients=tuple(float(c) for c in coef), r2=r_squared(y, np.polyval(coef, x)))


def recovery_points(
    rows: Sequence[IntervalSummary], case: Case, variant: Variant, eps_ms: float = PAPER_EPS_MS
) -> list[float]:
    """The TRT heuristic (seconds) at each profiled interval; InputError where ``U >= 1``."""
    out = []
    for row in rows:
        u = row.utilisation
        if u >= 1:
            raise InputError(
                f"profiles document field profiles (checkpoint_interval_ms={row.checkpoint_interval_ms:g}): median "
                f"utilisation avg_ingress_rate/max_ingress_rate = {u:.3f} >= 1, the job never catches up after a "
                "failure (infinite recovery time); profile a range where max_ingress_rate exceeds the average")
        e = reprocess_time(row.checkpoint_interval_ms / 1000.0, case)
        out.append(total_recovery_time(e, row.detection_timeout_s, row.recovery_time_s, row.warmup_time_s, u,
                                       variant=variant, unit="s", eps_ms=eps_ms))
    return out


def feasible_ranges(model: QuadraticModel, lo: float, hi: float, bound: float) -> list[tuple[float, float]]:
    """The maximal sub-intervals of ``[lo, hi]`` (seconds) where ``model <= bound``, in order.

    Breakpoints are ``lo``, ``hi`` and the real roots of ``model - bound`` inside; each piece between
    breakpoints is feasible iff its midpoint is. Ends are nudged (by ulps) onto the feasible side."""
    c2, c1, c0 = model.coefficients
    roots = np.roots([c2, c1, c0 - bound]) if (c2, c1) != (0.0, 0.0) else np.array([])
    real = [float(r.real) for r in roots if abs(r.imag) <= _ROOT_IMAG_TOL * max(1.0, abs(r.real))]
    points = sorted({lo, hi, *(r for r in real if lo < r < hi)})
    ok = lambda x: float(model.predict(x)) <= bound  # noqa: E731 - tiny predicate
    ranges: list[list[float]] = []
    for a, b in zip(points, points[1:]):
        if ok((a + b) / 2):
            if ranges and ranges[-1][1] == a:
                ranges[-1][1] = b
            else:
                ranges.append([a, b])
    ranges += [[p, p] for p in points if ok(p) and not any(r[0] <= p <= r[1] for r in ranges)]
    return sorted((_nudge(ok, a, b), _nudge(ok, b, a)) for a, b in ranges)


def _nudge(ok, x: float, towards: float) -> float:
    for _ in range(64):
        if ok(x) or x == towards:
            break
        x = float(np.nextafter(x, towards))
    return x


def best_interval(latency: QuadraticModel, recovery: QuadraticModel, ranges: list[tuple[float, float]]) -> float:
    """The interval (seconds) of lowest predicted latency in the feasible ranges; ties: lowest recovery."""
    candidates = [x for a, b in ranges for x in (a, b, *_vertex_inside(latency, a, b))]
    return min(candidates, key=lambda x: (float(latency.predict(x)), float(recovery.predict(x)), x))


def lowest_recovery(recovery: QuadraticModel, lo: float, hi: float) -> float:
    """Where on ``[lo, hi]`` (seconds) the recovery model is smallest."""
    return min((lo, hi, *_vertex_inside(recovery, lo, hi)), key=lambda x: float(recovery.predict(x)))


def _vertex_inside(model: QuadraticModel, lo: float, hi: float) -> tuple[float, ...]:
    c2, c1, _ = model.coefficients
    if c2 == 0:
        return ()
    v = -c1 / (2 * c2)
    return (v,) if lo < v < hi else ()


def plan_checkpoint(
    doc: ProfilesDocument,
    max_recovery_s: float,
    *,
    case: Case = DEFAULT_CASE,
    variant: Variant = DEFAULT_VARIANT,
    eps_ms: float = PAPER_EPS_MS,
    mtbf_s: float | None = None,
) -> CheckpointPlan:
    """Chiron: the lowest-latency CI whose predicted TRT (``case``, ``variant``) is <= ``max_recovery_s``.

    ``mtbf_s`` overrides the document's MTBF for the Young/Daly baselines. Raises InputError for
    a bad bound or case, InfeasibleError when no profiled-range CI meets the bound."""
    _check_arguments(max_recovery_s, case, eps_ms, mtbf_s)
    rows = summarise(doc)
    x = [r.checkpoint_interval_ms / 1000.0 for r in rows]
    latency = fit_quadratic(x, [r.avg_latency_ms for r in rows])
    trt = {c: recovery_points(rows, c, variant, eps_ms) for c in CASES}
    models = {c: fit_quadratic(x, trt[c]) for c in CASES}
    recovery, lo, hi = models[case], x[0], x[-1]
    ranges = feasible_ranges(recovery, lo, hi, max_recovery_s)
    if not ranges:
        _raise_infeasible(recovery, lo, hi, max_recovery_s, case, variant)
    ci = best_interval(latency, recovery, ranges)
    mtbf = mtbf_s if mtbf_s is not None else doc.mtbf_s
    cost = _checkpoint_cost_ms(rows)
    return CheckpointPlan(
        checkpoint_interval_ms=ci * 1000.0,
        predicted_latency_ms=float(latency.predict(ci)),
        predicted_recovery_s=float(recovery.predict(ci)),
        r2={"latency": latency.r2, "recovery": recovery.r2},
        max_recovery_s=max_recovery_s, case=case, variant=variant, eps_ms=eps_ms,
        profiled_range_ms=(lo * 1000.0, hi * 1000.0),
        feasible_ranges_ms=[(a * 1000.0, b * 1000.0) for a, b in ranges],
        young_interval_ms=_baseline(young_interval, cost, mtbf),
        daly_interval_ms=_baseline(daly_interval, cost, mtbf),
        checkpoint_cost_ms=cost, mtbf_s=mtbf,
        latency_model=latency, recovery_model=recovery,
        recovery_r2_by_case={c: m.r2 for c, m in models.items()},
        points=_points(rows, trt[case], latency, recovery),
        warnings=_warnings(rows, ci, lo, hi),
    )


def _check_arguments(max_recovery_s: float, case: str, eps_ms: float, mtbf_s: float | None) -> None:
    if not (math.isfinite(max_recovery_s) and max_recovery_s > 0):
        raise InputError(f"max_recovery_s: must be a finite number > 0, got {max_recovery_s}")
    if case not in CASES:
        raise InputError(f"case: must be one of {', '.join(CASES)}, got {case!r}")
    if not (math.isfinite(eps_ms) and eps_ms > 0):
        raise InputError(f"eps_ms: must be a finite number > 0, got {eps_ms}")
    if mtbf_s is not None and not (math.isfinite(mtbf_s) and mtbf_s > 0):
        raise InputError(f"mtbf_s: must be a finite number > 0, got {mtbf_s}")


def _raise_infeasible(recovery: QuadraticModel, lo: float, hi: float, bound: float, case: str, variant: str) -> None:
    at = lowest_recovery(recovery, lo, hi)
    raise InfeasibleError(
        f"no checkpoint interval in the profiled range {lo * 1000:g}-{hi * 1000:g} ms meets max recovery "
        f"{bound:g} s (case {case}, variant {variant}): the smallest predicted recovery time is "
        f"{float(recovery.predict(at)):.2f} s, at checkpoint_interval_ms={at * 1000:.0f}")


def _checkpoint_cost_ms(rows: Sequence[IntervalSummary]) -> float | None:
    costs = [r.checkpoint_duration_ms for r in rows if r.checkpoint_duration_ms is not None]
    return float(np.median(costs)) if costs else None


def _baseline(formula, cost_ms: float | None, mtbf_s: float | None) -> float | None:
    if cost_ms is None or mtbf_s is None or cost_ms <= 0:
        return None
    return formula(cost_ms, mtbf_s * 1000.0)


def _points(rows, trt: list[float], latency: QuadraticModel, recovery: QuadraticModel) -> list[ProfilePoint]:
    return [
        ProfilePoint(
            checkpoint_interval_ms=r.checkpoint_interval_ms, repetitions=r.repetitions,
            avg_latency_ms=r.avg_latency_ms, utilisation=r.utilisation, recovery_s=t,
            predicted_latency_ms=float(latency.predict(r.checkpoint_interval_ms / 1000.0)),
            predicted_recovery_s=float(recovery.predict(r.checkpoint_interval_ms / 1000.0)),
        )
        for r, t in zip(rows, trt)
    ]


def _warnings(rows: Sequence[IntervalSummary], ci: float, lo: float, hi: float) -> list[str]:
    out = []
    if len(rows) == 3:
        out.append("only 3 profiled intervals: the quadratics interpolate them exactly, so R^2 = 1 says nothing "
                   "about the fit; profile 5 or more intervals")
    if ci >= hi:
        out.append("the chosen interval is the largest profiled one; a longer interval may be better, "
                   "profile beyond it")
    return out
