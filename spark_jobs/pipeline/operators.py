"""Operators: the steps of a pipeline, each a DataFrame transform with a key and a parallelism.

An operator is what paper 000 calls an operator: ``parallelism`` tasks, task ``k`` handling the rows
whose key falls in key group ``k`` (:mod:`spark_jobs.pipeline.keys`). The user writes the transform
(plain PySpark: a window aggregation, a join, a filter); ftops wraps it: rows entering the operator
are tagged with their key group, counted per task (the metrics), and, in a replica, kept only for the
plan's tasks, before the transform sees them without any ftops column.

The streams between operators follow from the keys (no declaration needed):

- the same key, parallelisms dividing each other: ``one_to_one``, ``merge`` (``p_up = m p_down``)
  or ``split`` (``p_down = m p_up``); a key kept with parallelisms that do not divide is refused;
- a single downstream task: ``merge`` (everything meets there);
- a different key (a shuffle by another column): ``full``.

An operator with several inputs is a union of them (``input_model`` independent) unless
``join=True`` (correlated: a join needs matching rows from every input, paper 000's correlated
model). Inputs are source names (a static table included) or operator names.

Queries (paper 003's recovery unit of value) are the partitions of the output operator and of every
operator marked ``query=True`` (an intermediate result someone reads, like a dashboard's); each
weighs its operator's ``priority`` when a staged recovery chooses what to restart first.

    >>> from pyspark.sql import functions as F  # doctest: +SKIP
    >>> Operator("O2", inputs=("O1",), key="server", parallelism=2,
    ...          transform=lambda df: df.groupBy("window", "page").agg(F.sum("n").alias("n")))  # doctest: +SKIP
    >>> stream_partitioning(Operator("A", ("s",), lambda d: d, key="u", parallelism=4),
    ...                     Operator("B", ("A",), lambda d: d, key="u", parallelism=2))
    'merge'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ft_core.errors import InputError

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
MAX_PARALLELISM = 4096  # key groups are counted per task in every micro-batch's observed metrics


@dataclass(frozen=True)
class Operator:
    """One step of a pipeline. ``transform(*inputs)`` gets one DataFrame per input, in order."""

    name: str
    inputs: tuple[str, ...]
    transform: Callable
    key: str | tuple[str, ...] | None = None
    parallelism: int = 1
    join: bool = False
    priority: float = 1.0
    query: bool = False
    description: str = ""

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise InputError(f"operator {self.name!r}: a name is a letter then letters, digits or _ (up to 64)")
        if isinstance(self.inputs, str):
            object.__setattr__(self, "inputs", (self.inputs,))
        if not self.inputs:
            raise InputError(f"operator {self.name}: needs at least one input (a source or an operator)")
        if isinstance(self.key, list):
            object.__setattr__(self, "key", tuple(self.key))
        if isinstance(self.parallelism, bool) or not isinstance(self.parallelism, int) or \
                not 1 <= self.parallelism <= MAX_PARALLELISM:
            raise InputError(f"operator {self.name}: parallelism must be an integer in [1, {MAX_PARALLELISM}], "
                             f"got {self.parallelism!r}")
        if self.key is None and self.parallelism != 1:
            raise InputError(f"operator {self.name}: a key is needed for a parallelism above 1")
        if self.join and len(self.inputs) < 2:
            raise InputError(f"operator {self.name}: a join needs at least two inputs")
        if not (self.priority >= 0):
            raise InputError(f"operator {self.name}: priority must be >= 0")

    @property
    def input_model(self) -> str:
        return "correlated" if self.join else "independent"

    def task_ids(self) -> list[str]:
        return [f"{self.name}[{k}]" for k in range(self.parallelism)]


def _key(op: Operator) -> tuple[str, ...] | None:
    return None if op.key is None else ((op.key,) if isinstance(op.key, str) else tuple(op.key))


def stream_partitioning(up: Operator, down: Operator) -> str:
    """The partitioning of the stream ``up -> down`` (see the module docstring)."""
    pu, pd = up.parallelism, down.parallelism
    if pd == 1:
        return "one_to_one" if pu == 1 else "merge"
    if _key(up) != _key(down):
        return "full"
    if pu == pd:
        return "one_to_one"
    if pu % pd == 0:
        return "merge"
    if pd % pu == 0:
        return "split"
    raise InputError(f"operators {up.name} ({pu} tasks) and {down.name} ({pd} tasks) share the key {down.key!r}: "
                     "their parallelisms must divide each other (or key them differently)")


def topological_order(operators: Sequence[Operator], sources: set[str]) -> list[Operator]:
    """Operators in an order where every input comes first; InputError on unknown inputs or a cycle."""
    by_name: dict[str, Operator] = {}
    for op in operators:
        if op.name in by_name or op.name in sources:
            raise InputError(f"operator {op.name}: the name is used twice")
        by_name[op.name] = op
    for op in operators:
        for name in op.inputs:
            if name not in by_name and name not in sources:
                raise InputError(f"operator {op.name}: input {name!r} is neither a source nor an operator")
    order: list[Operator] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(op: Operator, path: tuple[str, ...]) -> None:
        if state.get(op.name) == 2:
            return
        if state.get(op.name) == 1:
            raise InputError(f"operators form a cycle: {' -> '.join((*path, op.name))}")
        state[op.name] = 1
        for name in op.inputs:
            if name in by_name:
                visit(by_name[name], (*path, op.name))
        state[op.name] = 2
        order.append(op)

    for op in operators:
        visit(op, ())
    return order
