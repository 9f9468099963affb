"""The topology document: the logical shape of a streaming job, shared by every layer of ftops.

A topology has *operators* (each parallelised into ``parallelism`` tasks ``<operator>[<index>]``),
*streams* between operators with a partitioning, optional per-task output *rates*, and optional
explicit *substreams* with their rates. It is the input model of paper 000 (Su & Zhou, PPA),
Section II-A:

- ``input_model``: ``independent`` (Eq. 3) or ``correlated`` (a join, Eq. 2).
- ``partitioning`` between an upstream operator of N1 tasks and a downstream one of N2 tasks:
  ``one_to_one`` (N1 == N2, task k -> k), ``split`` (N2 = m * N1, task k -> k*m .. k*m+m-1),
  ``merge`` (N1 = m * N2, task k -> k // m), ``full`` (every pair).

Example::

    >>> topo = parse_topology({
    ...     "name": "tiny",
    ...     "operators": [{"name": "A", "parallelism": 2}, {"name": "B", "parallelism": 1}],
    ...     "streams": [{"from": "A", "to": "B", "partitioning": "merge"}],
    ... })
    >>> [op.name for op in topo.operators], topo.task_rate("A[1]")
    (['A', 'B'], 1.0)

Every validation failure raises :class:`~ft_core.errors.InputError` naming the field and reason.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.limits import current_limits, exceeds
from ft_core.input.quantities import AtMost
from ft_core.input.validation import validate

InputModel = Literal["independent", "correlated"]
Partitioning = Literal["one_to_one", "split", "merge", "full"]
_TASK_ID = re.compile(r"^(?P<op>[^\[\]]+)\[(?P<idx>\d+)\]$")


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Operator(_Doc):
    name: str = Field(min_length=1)
    parallelism: Annotated[int, Field(ge=1, strict=True), AtMost("max_tasks")]
    input_model: InputModel = "independent"

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if "[" in value or "]" in value or "," in value:
            raise ValueError("must not contain '[', ']' or ','")
        return value


class Stream(_Doc):
    source: str = Field(alias="from")
    target: str = Field(alias="to")
    partitioning: Partitioning


class TaskSpec(_Doc):
    rate: float = Field(default=1.0, ge=0.0, allow_inf_nan=False, strict=True)


class Substream(_Doc):
    source: str = Field(alias="from")
    target: str = Field(alias="to")
    rate: float = Field(ge=0.0, allow_inf_nan=False, strict=True)


class Topology(_Doc):
    """A validated topology document (see the module docstring for the format)."""

    name: str = "topology"
    operators: list[Operator] = Field(min_length=1)
    streams: list[Stream] = Field(default_factory=list)
    tasks: dict[str, TaskSpec] = Field(default_factory=dict)
    substreams: list[Substream] = Field(default_factory=list)

    def operator(self, name: str) -> Operator:
        return self._operators_by_name()[name]

    def task_ids(self) -> list[str]:
        return [f"{op.name}[{k}]" for op in self.operators for k in range(op.parallelism)]

    def task_rate(self, task_id: str) -> float:
        spec = self.tasks.get(task_id)
        return spec.rate if spec is not None else 1.0

    def _operators_by_name(self) -> dict[str, Operator]:
        return {op.name: op for op in self.operators}

    def to_document(self) -> dict[str, Any]:
        """The JSON-ready document, with the contract's field names (``from``/``to``)."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=False)


def split_task_id(task_id: str) -> tuple[str, int]:
    """``"O1[3]" -> ("O1", 3)``; raises InputError for anything else."""
    match = _TASK_ID.match(task_id)
    if match is None:
        raise InputError(f"task id {task_id!r}: expected '<operator>[<index>]'")
    return match["op"], int(match["idx"])


def parse_topology(data: Any) -> Topology:
    """Validate a topology document given as a dict (parsed JSON or YAML)."""
    topo = validate(Topology, data, "topology")
    _check_structure(topo)
    return topo


def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology document from a ``.json``, ``.yaml`` or ``.yml`` file."""
    return parse_topology(read_document(path, "topology"))


def _check_structure(topo: Topology) -> None:
    ops = _unique_operators(topo)
    _check_size(topo)
    _check_streams(topo, ops)
    _check_acyclic(topo)
    _check_connected(topo)
    _check_tasks(topo, ops)
    _check_substreams(topo, ops)


def _unique_operators(topo: Topology) -> dict[str, Operator]:
    ops: dict[str, Operator] = {}
    for i, op in enumerate(topo.operators):
        if op.name in ops:
            raise InputError(f"topology field operators.{i}.name: duplicate operator name {op.name!r}")
        ops[op.name] = op
    return ops


def _check_size(topo: Topology) -> None:
    """Tasks and substreams within the limits, counted before any is built (a ``full`` stream between two
    operators of 10^5 tasks is 10^10 substreams)."""
    limits = current_limits()
    tasks = sum(op.parallelism for op in topo.operators)
    if tasks > limits.max_tasks:
        raise InputError(f"topology field operators: {tasks} tasks in all {exceeds('max_tasks', tasks, limits)}")
    parallelism = {op.name: op.parallelism for op in topo.operators}
    substreams = 0
    for i, s in enumerate(topo.streams):
        n1, n2 = parallelism.get(s.source, 1), parallelism.get(s.target, 1)
        substreams += n1 * n2 if s.partitioning == "full" else max(n1, n2)
        if substreams > limits.max_substreams:
            raise InputError(f"topology field streams.{i}: {substreams} substreams up to this stream "
                             f"{exceeds('max_substreams', substreams, limits)}")


def _check_streams(topo: Topology, ops: dict[str, Operator]) -> None:
    seen: set[tuple[str, str]] = set()
    for i, s in enumerate(topo.streams):
        where = f"topology field streams.{i}"
        for end, name in (("from", s.source), ("to", s.target)):
            if name not in ops:
                raise InputError(f"{where}.{end}: unknown operator {name!r}")
        if s.source == s.target:
            raise InputError(f"{where}: operator {s.source!r} cannot stream to itself")
        if (s.source, s.target) in seen:
            raise InputError(f"{where}: duplicate stream {s.source!r} -> {s.target!r}")
        seen.add((s.source, s.target))
        _check_counts(where, s, ops[s.source].parallelism, ops[s.target].parallelism)


def _check_counts(where: str, s: Stream, n1: int, n2: int) -> None:
    if s.partitioning == "one_to_one" and n1 != n2:
        raise InputError(f"{where}.partitioning: one_to_one needs equal parallelism, got {n1} -> {n2}")
    if s.partitioning == "split" and (n2 % n1 or n2 == n1):
        raise InputError(f"{where}.partitioning: split needs the downstream parallelism ({n2}) to be a multiple >1 of the upstream one ({n1})")
    if s.partitioning == "merge" and (n1 % n2 or n1 == n2):
        raise InputError(f"{where}.partitioning: merge needs the upstream parallelism ({n1}) to be a multiple >1 of the downstream one ({n2})")


def _check_acyclic(topo: Topology) -> None:
    succ: dict[str, list[str]] = {op.name: [] for op in topo.operators}
    for s in topo.streams:
        succ[s.source].append(s.target)
    state: dict[str, int] = {}  # 1 = on the DFS stack, 2 = done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in succ[node]:
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
                raise InputError(f"topology field streams: cycle {' -> '.join(cycle)}")
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for op in topo.operators:
        if op.name not in state:
            visit(op.name, [op.name])


def _check_connected(topo: Topology) -> None:
    if len(topo.operators) < 2:
        return
    touched = {s.source for s in topo.streams} | {s.target for s in topo.streams}
    for i, op in enumerate(topo.operators):
        if op.name not in touched:
            raise InputError(f"topology field operators.{i}: operator {op.name!r} is not connected by any stream")


def _check_task_id(where: str, task_id: str, ops: dict[str, Operator]) -> tuple[str, int]:
    match = _TASK_ID.match(task_id)
    if match is None:
        raise InputError(f"{where}: {task_id!r} is not a task id '<operator>[<index>]'")
    op, idx = match["op"], int(match["idx"])
    if op not in ops:
        raise InputError(f"{where}: {task_id!r} names unknown operator {op!r}")
    if idx >= ops[op].parallelism:
        raise InputError(f"{where}: {task_id!r} is out of range (operator {op!r} has {ops[op].parallelism} tasks)")
    return op, idx


def _check_tasks(topo: Topology, ops: dict[str, Operator]) -> None:
    for task_id in topo.tasks:
        _check_task_id(f"topology field tasks.{task_id}", task_id, ops)


def _check_substreams(topo: Topology, ops: dict[str, Operator]) -> None:
    streams = {(s.source, s.target) for s in topo.streams}
    seen: set[tuple[str, str]] = set()
    for i, sub in enumerate(topo.substreams):
        where = f"topology field substreams.{i}"
        op_from, _ = _check_task_id(f"{where}.from", sub.source, ops)
        op_to, _ = _check_task_id(f"{where}.to", sub.target, ops)
        if (op_from, op_to) not in streams:
            raise InputError(f"{where}: no stream {op_from!r} -> {op_to!r} is declared for substream {sub.source} -> {sub.target}")
        if (sub.source, sub.target) in seen:
            raise InputError(f"{where}: duplicate substream {sub.source} -> {sub.target}")
        if not math.isfinite(sub.rate):
            raise InputError(f"{where}.rate: must be a finite number")
        seen.add((sub.source, sub.target))
