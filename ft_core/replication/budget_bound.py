"""Upper bounds on what each value can reach with a given number of replicas (a relaxed DP).

Problem: the LP relaxation of a product of count fractions is weak. Along a chain of full streams
with 25% of each operator's tasks replicated the true value is ``0.25^L``, but the LP may replicate
a quarter of "all tasks" of every operator and claim 0.25 (issue 19: gaps of 1.5-100% on Spark-like
shapes). What the LP misses is the budget: a value can only be as high as the replicas spent in its
upstream cone allow. This module computes, for every atom ``a`` of the exact model (a task, a count
of interchangeable tasks, an operator-level stream; see :mod:`ft_core.replication.alive_model`) and
every budget ``B <= R``, a proven upper bound ``U_a(B)`` on ``a``'s value when at most ``B`` replicas
lie in its cone. The model then caps each product step by it: ``w_k <= U_b(R - k) z_k``, so the LP
can no longer buy a whole operator for a fraction of its cost at every level.

Algorithm: dynamic programming over atoms in topological order, paper 000's DP (Alg. 1) moved
from MC-trees to values and relaxed where cones share tasks:

- a choice of cost ``k`` with factor ``rho(k)``: ``U(B) = max_k rho(k) * F(B - k)``;
- a linear input ``F = sum_b c_b val_b``: every replicated atom costs at least one replica, so at
  most ``B`` terms are non-zero: ``F(B) <= sum of the B largest c_b U_b(B)``;
- a join ``F = prod_j F_j``: the budget is split between the streams, ``sum_j B_j <= B + (m - 1) * s``
  where ``s`` bounds the replicas the streams' cones share (counted in each ``B_j``): exact for
  disjoint cones, a relaxation otherwise.

Each bound is valid for every plan, so the model stays exact. Complexity: O(A * R * d) for ``A``
atoms of ``d`` inputs, plus O(R^2) per join stream; used when ``A * R`` is at most a few million.

Example (a chain of 3 operators of 4 tasks, all full: with 6 replicas the best is 2 x 2 x 2)::

    >>> quarter = [(k, k / 4) for k in range(1, 5)]
    >>> chain = [Atom(quarter, [], 1), Atom(quarter, [{0: 1.0}], 3), Atom(quarter, [{1: 1.0}], 7)]
    >>> round(float(value_caps(chain, 6)[2][6]), 6)
    0.125
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Atom:
    """One value of the model: ``choices`` are ``(cost, factor)`` (empty: no choice of its own, factor 1),
    ``forms`` its inputs as linear forms over earlier atoms (one per join stream; none at a source)
    and ``cone`` a bit set of the atoms with choices in its upstream cone, itself included."""

    choices: list[tuple[int, float]]
    forms: list[dict[int, float]]
    cone: int


def value_caps(atoms: list[Atom], budget: int) -> list[np.ndarray]:
    """``caps[a][B]``: an upper bound on atom ``a``'s value with at most ``B`` replicas (B = 0..budget)."""
    caps: list[np.ndarray] = []
    for atom in atoms:
        if not atom.forms:
            inputs = np.ones(budget + 1)
        elif len(atom.forms) == 1:
            inputs = _linear(atom.forms[0], caps, budget)
        else:
            inputs = _join(atom, atoms, caps, budget)
        if not atom.choices:
            caps.append(inputs)
            continue
        best = np.zeros(budget + 1)
        for cost, factor in atom.choices:
            if cost <= budget:
                shifted = np.zeros(budget + 1)
                shifted[cost:] = factor * inputs[: budget + 1 - cost]
                np.maximum(best, shifted, out=best)
        caps.append(np.minimum(best, 1.0))
    return caps


def _linear(form: dict[int, float], caps: list[np.ndarray], budget: int) -> np.ndarray:
    terms = np.array([c * caps[b] for b, c in form.items()])  # (terms, budget + 1)
    terms = -np.sort(-terms, axis=0)
    cumulative = np.cumsum(terms, axis=0)
    count = np.minimum(np.arange(budget + 1), len(form))  # at most B atoms alive, each costs a replica
    out = np.where(count > 0, cumulative[np.maximum(count - 1, 0), np.arange(budget + 1)], 0.0)
    return np.minimum(out, 1.0)


def _join(atom: Atom, atoms: list[Atom], caps: list[np.ndarray], budget: int) -> np.ndarray:
    streams = [_linear(form, caps, budget) for form in atom.forms]
    cones = [_form_cone(form, atoms) for form in atom.forms]
    shared_bits = 0
    for j, cone in enumerate(cones):
        for other in cones[j + 1:]:
            shared_bits |= cone & other
    shared = min(budget, _shared_size(shared_bits, atoms))
    slack = (len(streams) - 1) * shared
    total = budget + slack
    # Max-product convolution of the streams over budgets up to `total`; then read at B + slack.
    acc = _extend(streams[0], total)
    for stream in streams[1:]:
        s = _extend(stream, total)
        nxt = np.zeros(total + 1)
        for b in range(total + 1):
            nxt[b] = np.max(acc[: b + 1] * s[b::-1])
        acc = nxt
    return np.minimum(acc[slack: slack + budget + 1], 1.0)


def _extend(values: np.ndarray, total: int) -> np.ndarray:
    out = np.full(total + 1, values[-1])
    out[: len(values)] = values[: total + 1]
    return out


def _form_cone(form: dict[int, float], atoms: list[Atom]) -> int:
    cone = 0
    for b in form:
        cone |= atoms[b].cone
    return cone


def _shared_size(bits: int, atoms: list[Atom]) -> int:
    """Replicas the shared choices can hold: each choice atom's largest cost."""
    total = 0
    a = 0
    while bits:
        if bits & 1:
            total += max((c for c, _ in atoms[a].choices), default=0)
        bits >>= 1
        a += 1
    return total
