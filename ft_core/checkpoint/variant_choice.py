"""Choosing the total-recovery-time variant by its error against measured recovery times (paper 004).

Problem: the paper's Eq. 2-5 admit several readings (:data:`~ft_core.checkpoint.recovery_time.VARIANTS`),
and which one predicts a job's recovery is an empirical question: on Spark the printed Eq. 4 was 157%
off a measured recovery while Eq. 2 was 12% off (issue 15). Chiron's profiling runs measure the
heuristic's inputs (``T``, ``R``, ``W``, ``U``) *and*, since they inject real failures, the total recovery
time itself (``total_recovery_time_s``, failure to caught up). No model is ever fitted to the measured
recovery time, so it validates each variant's recovery model.

Algorithm: for each variant, fit Chiron's recovery model ``A`` (the quadratic through the heuristic at
the profiled intervals, :func:`ft_core.checkpoint.tuning.recovery_points`) and evaluate it at every
profiled interval; its error is the mean relative error ``|A(CI) - TRT(CI)| / TRT(CI)`` over the
intervals, ``TRT`` the median measured recovery time there. The variant with the lowest error is chosen
(ties: the order of ``VARIANTS``). ``case`` must be the case the profiling's failures realise: ftops
kills a copy just before its next checkpoint, so ``E`` is about one interval, the worst case ``max``.
The recommendation then plans with the chosen variant and may use another case for its bound.

Why not leave-one-out: the measured recovery time is already held out from every fit, and dropping an
end point of five intervals makes the quadratic extrapolate, which would rank variants by the noise of
one copy rather than by their form. The validation run at the recommended interval (an interval that
was not profiled) is the held-out test of the chosen model.

Complexity: O(V P) for V variants and P profiled intervals.

Example (recovery measured as ``T + R + W + D U / (1 - U)``, which ``warmup_elapsed`` predicts)::

    >>> from ft_core.checkpoint.profiles import parse_profiles
    >>> rep = lambda ci: {"avg_ingress_rate": 1, "max_ingress_rate": 4, "avg_latency_ms": 900,
    ...     "recovery_time_s": 10, "warmup_time_s": 4, "total_recovery_time_s": 19 + (ci + 19) / 3}
    >>> doc = parse_profiles({"detection_timeout_s": 5, "profiles": [
    ...     {"checkpoint_interval_ms": ci * 1000, "repetitions": [rep(ci)]} for ci in (2, 4, 8)]})
    >>> choice = choose_variant(doc, "max")
    >>> choice.chosen, round(choice.errors["warmup_elapsed"], 9)
    ('warmup_elapsed', 0.0)
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel

from ft_core.checkpoint.profiles import ProfilesDocument, summarise
from ft_core.checkpoint.recovery_time import CASES, VARIANTS, Case, Variant
from ft_core.errors import InputError

AUTO = "auto"
MEASURED_CASE: Case = "max"  # the profiles format: measured failures fall just before a checkpoint (E = CI)
METHOD = ("mean relative error of each variant's recovery model A at the profiled intervals against the "
          "recovery times measured there (no model is fitted to them)")


class VariantChoice(BaseModel):
    """Which variant predicted the measured recovery times best, and every variant's error."""

    chosen: Variant
    case: Case
    method: str
    intervals_ms: list[float]
    measured_s: list[float]
    predicted_s: dict[str, list[float]]
    errors: dict[str, float]
    reason: str


def choose_variant(doc: ProfilesDocument, case: Case = MEASURED_CASE) -> VariantChoice:
    """The variant whose recovery model is closest to the measured recovery times (module docstring).

    InputError when an interval has no measured recovery time or ``case`` is unknown."""
    if case not in CASES:
        raise InputError(f"case: must be one of {', '.join(CASES)}, got {case!r}")
    rows = summarise(doc)
    missing = [f"{r.checkpoint_interval_ms:g}" for r in rows if not r.total_recovery_time_s]
    if missing:
        raise InputError(f"profiles document field profiles: no measured total_recovery_time_s at interval(s) "
                         f"{', '.join(missing)} ms; choosing the variant needs the recovery times the profiling runs "
                         "measured (ftops profile checkpoint writes them), or name a --variant")
    x = [r.checkpoint_interval_ms / 1000.0 for r in rows]
    measured = [float(r.total_recovery_time_s) for r in rows]
    from ft_core.checkpoint.tuning import fit_quadratic, recovery_points  # numpy: only when choosing

    predicted = {v: [float(p) for p in fit_quadratic(x, recovery_points(rows, case, v)).predict(x)] for v in VARIANTS}
    errors = {v: statistics.fmean(abs(p - m) / m for p, m in zip(predicted[v], measured)) for v in VARIANTS}
    chosen = min(VARIANTS, key=lambda v: errors[v])
    others = ", ".join(f"{v} {errors[v]:.1%}" for v in VARIANTS if v != chosen)
    reason = (f"{chosen} has the lowest mean error against the {len(rows)} measured recovery times "
              f"({errors[chosen]:.1%}; {others})")
    return VariantChoice(chosen=chosen, case=case, method=METHOD, intervals_ms=[r.checkpoint_interval_ms for r in rows],
                         measured_s=measured, predicted_s=predicted, errors=errors, reason=reason)


def resolve_variant(doc: ProfilesDocument, variant: str, case: Case = MEASURED_CASE) -> tuple[Variant, VariantChoice | None]:
    """``variant`` itself, or for ``"auto"`` the chosen one and the choice (``case``: the measured failures')."""
    if variant == AUTO:
        choice = choose_variant(doc, case)
        return choice.chosen, choice
    if variant not in VARIANTS:
        raise InputError(f"variant: must be {AUTO} or one of {', '.join(VARIANTS)}, got {variant!r}")
    return variant, None
