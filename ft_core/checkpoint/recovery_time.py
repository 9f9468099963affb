"""Total recovery time (TRT) after a failure, and the classical checkpoint-interval baselines.

Problem (paper 004, Chiron, Sec. II-III): after a silent worker failure a stream job is unavailable
until it has caught up with the latest offset of its input. The total recovery time is

- ``T``: the heartbeat/detection timeout,
- ``R``: the time to restore a consistent state,
- then the catch-up of the backlog that built up during ``E + T + R + W`` (``E``: re-processing of
  the events since the last checkpoint, ``W``: warm-up from 0 to the maximum ingress rate), while new
  events keep arriving at the utilisation ``U = I_avg / I_max`` (Eq. 1) of the maximum capacity.

Catching up on a backlog of ``D = E + T + R + W`` seconds of input takes ``D*U`` seconds, during which
``D*U*U`` seconds of input arrive, and so on: a decreasing geometric series.

Variants (the paper's Eq. 2-5 disagree with each other; see the digest
``/work/shared/notes/paper-004-chiron.md``, "Inconsistencies to resolve"):

- ``paper_eq4`` (default, the equations as printed): first term ``a_1 = D`` (Eq. 3/4, without the
  ``U`` of Eq. 2), ``n`` the first term below ``eps`` (the paper's "first n resulting in a value less
  than one"), ``TRT = T + R + a_1 (1 - U^n) / (1 - U)`` (Eq. 4, 5). This counts ``T`` and ``R``
  twice (once in ``D``, once in Eq. 5), so it is pessimistic.
- ``eq2``: the same truncated series with Eq. 2's first term ``a_1 = D*U``.
- ``closed_form``: the infinite Eq. 2 series, ``TRT = T + R + D*U / (1 - U)``, the standard queueing
  catch-up time; no threshold.
- ``warmup_elapsed``: ``closed_form`` plus ``W``, ``TRT = T + R + W + D*U / (1 - U)``. Eq. 5 counts the
  warm-up only as backlog (inside ``D``), yet the warm-up itself elapses before the job runs at ``I_max``
  (the paper's timeline, Sec. II, points 4-5). In micro-batches this is exact: the first batch after the
  restart reads the ``E + T + R`` backlog and takes ``W + (E + T + R) U``; each later batch reads what
  arrived during the previous one, so the batches shrink by ``U`` and sum to
  ``W + (E + T + R) U + (W + (E + T + R) U) U / (1 - U) = W + D U / (1 - U)``. No threshold.

Which variant predicts a given job best is measured, not assumed:
:mod:`ft_core.checkpoint.variant_choice` compares each with the recovery times the profiling runs measured.

Units: every duration is in one ``unit`` (``"s"`` by default) and the result is in that unit. The
paper's threshold "less than one" is in ms (all its times are ms), so the truncation threshold is
given as a physical time ``eps_ms`` (default 1 ms) and converted to ``unit``. The result therefore
does not depend on the unit: the same inputs in ms give 1000 times the result in s. (With a bare
"< 1" in the unit of the inputs, the paper's heuristic gives 54.375 s in s but 54,999.39 ms in ms,
digest Example A; we reproduce both by passing ``eps_ms=1000`` or ``eps_ms=1``.)

Utilisation ``U >= 1``: the job cannot catch up, the series diverges and we return ``math.inf``
(digest P1: infinite recovery, the configuration is rejected). Callers that fit models reject it
with an :class:`~ft_core.errors.InputError` naming the profile.

Baselines (paper Sec. VI cites them without formulas; digest Sec. 6): Young's first-order optimum
``sqrt(2*C*M)`` and Daly's higher-order optimum, from a checkpoint cost and a mean time between
failures; they ignore latency and the QoS bound and are reported as sanity baselines.

Complexity: O(1) per call (``n`` is found with a logarithm, then corrected by at most a few steps).

Example (digest Example A, worst case ``E = CI = 40 s``)::

    >>> total_recovery_time(40, 10, 5, 5, 0.5, variant="closed_form")
    75.0
    >>> total_recovery_time(40, 10, 5, 5, 0.5, variant="paper_eq4", eps_ms=1000)
    134.0625
    >>> total_recovery_time(40, 10, 5, 5, 0.5, variant="warmup_elapsed")
    80.0
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Literal

from ft_core.errors import InputError

Variant = Literal["paper_eq4", "eq2", "closed_form", "warmup_elapsed"]
Case = Literal["min", "avg", "max"]
VARIANTS: tuple[str, ...] = ("paper_eq4", "eq2", "closed_form", "warmup_elapsed")
CASES: tuple[str, ...] = ("min", "avg", "max")
DEFAULT_CASE: Case = "max"  # the paper's experiments: a failure just before a checkpoint
DEFAULT_VARIANT: Variant = "paper_eq4"  # the equations as printed
PAPER_EPS_MS = 1.0
MS_PER_UNIT = {"ms": 1.0, "s": 1000.0, "min": 60_000.0, "h": 3_600_000.0}
_REPROCESS_SHARE = {"min": 0.0, "avg": 0.5, "max": 1.0}


def utilisation(avg_ingress_rate: float, max_ingress_rate: float) -> float:
    """Eq. 1: ``U = I_avg / I_max`` (events/s over events/s)."""
    if not max_ingress_rate > 0 or not math.isfinite(max_ingress_rate):
        raise InputError(f"max_ingress_rate: must be a finite number > 0, got {max_ingress_rate}")
    _check_duration("avg_ingress_rate", avg_ingress_rate)
    return avg_ingress_rate / max_ingress_rate


def reprocess_time(checkpoint_interval: float, case: Case) -> float:
    """``E`` per case (Sec. III): best 0, average CI/2, worst CI, in the unit of the interval.

    The worst case ignores the time the checkpoint itself takes (digest inconsistency 4)."""
    if case not in _REPROCESS_SHARE:
        raise InputError(f"case: must be one of {', '.join(CASES)}, got {case!r}")
    _check_duration("checkpoint_interval", checkpoint_interval)
    return _REPROCESS_SHARE[case] * checkpoint_interval


def series_length(first_term: float, ratio: float, eps: float) -> int:
    """The paper's stopping rule (Eq. 3): the smallest ``n >= 1`` with ``a_n = a_1 r^(n-1) < eps``.

    Needs ``0 <= ratio < 1`` and ``eps > 0``; O(1) via logarithms, corrected to the exact rule."""
    if not eps > 0:
        raise InputError(f"eps: must be > 0, got {eps}")
    if not 0 <= ratio < 1:
        raise InputError(f"utilisation: the series needs 0 <= U < 1, got {ratio}")
    if first_term < eps:
        return 1
    if ratio == 0:
        return 2
    m = max(1, math.floor(math.log(eps / first_term) / math.log(ratio)) + 1)
    while m > 1 and first_term * ratio ** (m - 1) < eps:
        m -= 1
    while first_term * ratio**m >= eps:
        m += 1
    return m + 1


def geometric_sum(first_term: float, ratio: float, n: int) -> float:
    """Eq. 4: ``S_n = a_1 (1 - r^n) / (1 - r)``, the sum of the first ``n`` terms (``r < 1``)."""
    return first_term * (1.0 - ratio**n) / (1.0 - ratio)


def total_recovery_time(
    reprocess: float,
    timeout: float,
    recovery: float,
    warmup: float,
    utilisation: float,
    *,
    variant: Variant = "paper_eq4",
    unit: str = "s",
    eps_ms: float = PAPER_EPS_MS,
) -> float:
    """TRT (Eq. 5) from ``E``, ``T``, ``R``, ``W`` (all in ``unit``) and ``U``; ``math.inf`` if ``U >= 1``.

    ``eps_ms`` is the truncation threshold of ``paper_eq4`` and ``eq2`` as a time in ms (the paper's
    "less than one" with times in ms); ``closed_form`` and ``warmup_elapsed`` ignore it."""
    for name, value in (("reprocess", reprocess), ("timeout", timeout), ("recovery", recovery),
                        ("warmup", warmup), ("utilisation", utilisation)):
        _check_duration(name, value)
    if variant not in VARIANTS:
        raise InputError(f"variant: must be one of {', '.join(VARIANTS)}, got {variant!r}")
    if unit not in MS_PER_UNIT:
        raise InputError(f"unit: must be one of {', '.join(MS_PER_UNIT)}, got {unit!r}")
    if utilisation >= 1:
        return math.inf
    backlog = reprocess + timeout + recovery + warmup
    if variant in ("closed_form", "warmup_elapsed"):
        elapsed_warmup = warmup if variant == "warmup_elapsed" else 0.0
        return timeout + recovery + elapsed_warmup + backlog * utilisation / (1.0 - utilisation)
    first = backlog if variant == "paper_eq4" else backlog * utilisation
    n = series_length(first, utilisation, eps_ms / MS_PER_UNIT[unit])
    return timeout + recovery + geometric_sum(first, utilisation, n)


def young_interval(checkpoint_cost: float, mtbf: float) -> float:
    """Young (1974): ``sqrt(2 C M)``, ``C`` the checkpoint cost and ``M`` the MTBF (same unit).

    Example C of the digest: ``young_interval(5, 24 * 60) == 120.0`` (minutes)."""
    _check_positive("checkpoint_cost", checkpoint_cost)
    _check_positive("mtbf", mtbf)
    return math.sqrt(2.0 * checkpoint_cost * mtbf)


def daly_interval(checkpoint_cost: float, mtbf: float) -> float:
    """Daly (2006): ``sqrt(2 d M) [1 + sqrt(d/(2M))/3 + (d/(2M))/9] - d`` for ``d < 2M``, else ``M``.

    ``d`` is the checkpoint (dump) cost, ``M`` the MTBF, same unit; the result is the compute time
    between checkpoints. Example C: ``daly_interval(5, 24 * 60)`` is 116.69 (minutes)."""
    _check_positive("checkpoint_cost", checkpoint_cost)
    _check_positive("mtbf", mtbf)
    if checkpoint_cost >= 2.0 * mtbf:
        return mtbf
    x = checkpoint_cost / (2.0 * mtbf)
    return math.sqrt(2.0 * checkpoint_cost * mtbf) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - checkpoint_cost


def _check_duration(name: str, value: float) -> None:
    if not (isinstance(value, Real) and math.isfinite(value) and value >= 0):
        raise InputError(f"{name}: must be a finite number >= 0, got {value!r}")


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, Real) and math.isfinite(value) and value > 0):
        raise InputError(f"{name}: must be a finite number > 0, got {value!r}")
