"""Random topologies covering the settings of paper 000's Fig. 14 (Section VI-C).

Problem: the replication planners are compared on 100 random topologies per setting: 5-10
operators; task workloads within an operator uniform or Zipf(s); parallelism drawn from a range;
*structured* topologies (one-to-one, split, merge; full partitioning only into the output operator)
or *full* topologies (every stream full); 0% or 50% join operators.

Beyond the paper, the shapes Spark jobs have (issue 19: stages linked by shuffles, joins of several
stages): *mixed* topologies draw parallelism uniformly from the range; where the two parallelisms
divide, a stream is a narrow dependency (one_to_one, split or merge) with probability
``narrow_fraction``, and every other stream is full (a shuffle). ``fan_in`` is the probability that
a non-source operator reads a second upstream operator (a union, or a join when it is picked as
one). With parallelism 2-8, ``narrow_fraction=0.7`` and ``fan_in=0.5`` about three streams in four
are full: the *full-link-heavy* (``join_fraction=0.2``) and *join-heavy* (``0.5``) settings.

Algorithm: operators are numbered; each non-source operator reads one earlier operator (two when it
is to be a join and two are available), and every operator but the last feeds a later one, so the
DAG is connected with the last operator as its only output. In structured topologies parallelism
is a power of two inside the range, so any two operators divide one way and a partitioning always
exists (one_to_one, split or merge). O(N^2) for N operators.

Example::

    >>> spec = RandomTopologySpec(operators=(5, 5), parallelism=(2, 4), seed=1)
    >>> len(random_topology(spec).operators)
    5
    >>> spark_like = RandomTopologySpec(operators=(10, 10), parallelism=(2, 8), shape="mixed", fan_in=0.5,
    ...                                 join_fraction=0.5, seed=3)
    >>> streams = random_topology(spark_like).streams
    >>> len(streams), sum(s.partitioning == "full" for s in streams)
    (19, 14)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

from ft_core.topology.document import Topology, parse_topology


@dataclass(frozen=True)
class RandomTopologySpec:
    operators: tuple[int, int] = (5, 10)
    parallelism: tuple[int, int] = (1, 10)
    shape: Literal["structured", "full", "mixed"] = "structured"
    workload: Literal["uniform", "zipf"] = "uniform"
    zipf_s: float = 0.1
    join_fraction: float = 0.0
    seed: int = 0
    narrow_fraction: float = 0.7  # mixed shape: probability of a narrow stream where parallelisms divide
    fan_in: float = 0.0  # probability that a non-source operator reads a second upstream operator


def random_topology(spec: RandomTopologySpec) -> Topology:
    """One random, valid topology for ``spec`` (deterministic in ``spec.seed``)."""
    return parse_topology(random_topology_document(spec))


def random_topology_document(spec: RandomTopologySpec) -> dict[str, Any]:
    rng = random.Random(spec.seed)
    n = rng.randint(*spec.operators)
    par = [_parallelism(rng, spec) for _ in range(n)]
    n_sources = max(1, min(n - 1, rng.randint(1, max(1, n // 3))))
    inputs: list[list[int]] = [[] for _ in range(n)]
    wants_join = [False] * n
    for k in range(n_sources, n):
        inputs[k].append(rng.randrange(k))
        if k >= 2 and rng.random() < spec.join_fraction * 2:
            second = rng.choice([u for u in range(k) if u != inputs[k][0]])
            inputs[k].append(second)
            wants_join[k] = True
        elif k >= 2 and spec.fan_in > 0 and rng.random() < spec.fan_in:
            inputs[k].append(rng.choice([u for u in range(k) if u != inputs[k][0]]))
    _connect_dangling(rng, n, inputs)
    if spec.join_fraction > 0:
        _mark_joins(rng, spec, n, inputs, wants_join)
    streams = [
        {"from": f"O{u + 1}", "to": f"O{v + 1}", "partitioning": _partitioning(rng, spec, par[u], par[v], v == n - 1)}
        for v in range(n)
        for u in inputs[v]
    ]
    operators = [
        {"name": f"O{k + 1}", "parallelism": par[k], "input_model": "correlated" if wants_join[k] and len(inputs[k]) > 1 else "independent"}
        for k in range(n)
    ]
    tasks = {f"O{k + 1}[{t}]": {"rate": r} for k in range(n) for t, r in enumerate(_rates(rng, spec, par[k]))}
    return {"name": f"random-{spec.shape}-{spec.seed}", "operators": operators, "streams": streams, "tasks": tasks}


def _parallelism(rng: random.Random, spec: RandomTopologySpec) -> int:
    lo, hi = spec.parallelism
    if spec.shape in ("full", "mixed"):
        return rng.randint(lo, hi)
    powers = [p for p in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if lo <= p <= hi] or [lo]
    return rng.choice(powers)


def _connect_dangling(rng: random.Random, n: int, inputs: list[list[int]]) -> None:
    """Every operator but the last must feed a later one: the last is the only output operator."""
    for u in range(n - 1):
        if not any(u in inputs[v] for v in range(u + 1, n)):
            v = rng.randint(u + 1, n - 1)
            inputs[v].append(u)


def _mark_joins(rng: random.Random, spec: RandomTopologySpec, n: int, inputs: list[list[int]], wants_join: list[bool]) -> None:
    multi = [k for k in range(n) if len(inputs[k]) > 1]
    target = round(spec.join_fraction * n)
    chosen = set(rng.sample(multi, min(target, len(multi))))
    for k in range(n):
        wants_join[k] = k in chosen


def _partitioning(rng: random.Random, spec: RandomTopologySpec, n1: int, n2: int, into_output: bool) -> str:
    if spec.shape == "full" or (into_output and n2 > 1 and n1 > 1):
        return "full"
    if spec.shape == "mixed" and (_narrow(n1, n2) is None or rng.random() >= spec.narrow_fraction):
        return "full"
    return _narrow(n1, n2) or "full"


def _narrow(n1: int, n2: int) -> str | None:
    """The narrow partitioning between parallelisms ``n1`` and ``n2``, if they divide."""
    if n1 == n2:
        return "one_to_one"
    if n2 % n1 == 0:
        return "split"
    if n1 % n2 == 0:
        return "merge"
    return None


def _rates(rng: random.Random, spec: RandomTopologySpec, parallelism: int) -> list[float]:
    if spec.workload == "uniform":
        return [1.0] * parallelism
    weights = [1.0 / (rank + 1) ** spec.zipf_s for rank in range(parallelism)]
    rng.shuffle(weights)
    total = sum(weights)
    return [round(parallelism * w / total, 6) for w in weights]
