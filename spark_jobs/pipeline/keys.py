"""Key groups: how a record's key picks the logical task of an operator, identically in Spark and Python.

Problem: the planners reason about *tasks* (``O1[0]``, ``O1[1]``, ...); Spark knows nothing of them.
ftops makes every operator's tasks key groups: an operator of parallelism ``p`` keyed by column(s)
``key`` assigns a row to task ``O[g]`` with::

    g = pmod(xxhash64(key), B) * p div B        B = lcm of the pipeline's parallelisms

computed in Spark by :func:`key_group_column` and in Python by :func:`key_group` (a port of Spark's
seeded XXH64 for one ``bigint``, for generators and pure-Python references). Because the groups are
ranges of the same ``B`` buckets, two operators keyed by the same column nest: ``p_up = m * p_down``
sends ``O_up[k]`` to ``O_down[k div m]`` (merge), ``p_down = m * p_up`` spreads ``O_up[k]`` over
``O_down[k*m .. k*m+m-1]`` (split), equal parallelism maps ``k -> k``; so the topology ftops declares
is true of every record (:func:`downstream_group`).

    >>> key_group(5, 4, 4) == (6251837290343458373 % 4)   # Spark: pmod(xxhash64(5L), 4)
    True
    >>> downstream_group(3, 4, 2)
    1
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

_MASK = (1 << 64) - 1
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
SPARK_HASH_SEED = 42  # the seed of Spark SQL's xxhash64()


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def xxhash64_long(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark SQL's ``xxhash64(CAST(value AS BIGINT))`` (XXH64 of the 8 little-endian bytes), signed."""
    h = (seed + _P5 + 8) & _MASK
    h ^= (_rotl((value & _MASK) * _P2 & _MASK, 31) * _P1) & _MASK
    h = (_rotl(h, 27) * _P1 + _P4) & _MASK
    h ^= h >> 33
    h = (h * _P2) & _MASK
    h ^= h >> 29
    h = (h * _P3) & _MASK
    h ^= h >> 32
    return h - (1 << 64) if h >> 63 else h


@lru_cache(maxsize=1 << 16)
def key_group(key: int, parallelism: int, base: int) -> int:
    """The task index of a ``bigint`` key in an operator of ``parallelism`` tasks (``base`` = lcm of
    the pipeline's parallelisms): ``pmod(xxhash64(key), base) * parallelism div base``."""
    return (xxhash64_long(key) % base) * parallelism // base


def key_group_column(key: str | Sequence[str] | None, parallelism: int, base: int) -> Any:
    """The same function as a Spark column over the key column(s); a single task (no key) is group 0."""
    from pyspark.sql import functions as F

    if key is None or parallelism == 1:
        return F.lit(0)
    cols = [F.col(key)] if isinstance(key, str) else [F.col(k) for k in key]
    return F.floor(F.pmod(F.xxhash64(*cols), F.lit(base)) * F.lit(parallelism) / F.lit(base)).cast("int")


def downstream_group(group: int, p_up: int, p_down: int) -> int:
    """The first downstream task that upstream task ``group`` feeds when both operators keep the key
    (merge, one_to_one; for split, the first of its ``p_down // p_up`` targets)."""
    return group * p_down // p_up
