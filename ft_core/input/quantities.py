"""The kinds of numbers ftops reads, as pydantic types shared by documents, flags, DAG Params and operators.

Why: "finite, positive, at most the limit" must mean the same in a topology document, on the command
line, in an Airflow trigger form and in an operator's arguments, with the same message. Each kind is
an ``Annotated`` pydantic type: document models use it as a field type, :func:`flag` turns it into an
argparse ``type=``, :func:`param_schema` into the JSON-schema bounds of a DAG ``Param``, and
:func:`check` validates one value (an operator's argument). Upper bounds come from
:mod:`ft_core.input.limits` at the moment of the check (:class:`AtMost`), so the message names the
limit and the environment variable that raises it.

Example::

    >>> check(PositiveSeconds, "2.5", "--detection-s")
    2.5
    >>> check(PositiveSeconds, "nan", "--detection-s")
    Traceback (most recent call last):
    ...
    ft_core.errors.InputError: --detection-s: Input should be a finite number (got 'nan')
    >>> param_schema(TaskCount)["maximum"]
    100000
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter, ValidationError
from pydantic_core import core_schema

from ft_core.errors import InputError
from ft_core.input.limits import current_limits, exceeds
from ft_core.input.validation import describe, value_error


@dataclass(frozen=True, slots=True)
class AtMost:
    """Pydantic metadata: the value (with ``length``: the number of items) must not exceed limit ``limit``
    (times ``scale``, e.g. 1000 for ms).

    The limit is read when a value is checked (and when a JSON schema is made), not at import."""

    limit: str
    scale: float = 1.0
    length: bool = False

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> dict:
        json_schema = handler(schema)
        allowed = self.allowed()
        json_schema["maxItems" if self.length else "maximum"] = int(allowed) if float(allowed).is_integer() else allowed
        return json_schema

    def allowed(self) -> float:
        allowed = getattr(current_limits(), self.limit)
        return allowed if self.scale == 1 else allowed * self.scale

    def check(self, value: Any) -> Any:
        size = len(value) if self.length else value
        if size > self.allowed():
            raise ValueError(f"{size} items {exceeds(self.limit, size)}" if self.length else exceeds(self.limit, size / self.scale))
        return value


def _finite(**bounds: float) -> Any:
    return Field(allow_inf_nan=False, **bounds)


FiniteNumber = Annotated[float, _finite()]
NonNegative = Annotated[float, _finite(ge=0)]
Positive = Annotated[float, _finite(gt=0)]
Fraction = Annotated[float, _finite(ge=0, le=1)]
PositiveFraction = Annotated[float, _finite(gt=0, le=1)]  # a usable share of a node
# times after an event, or durations that may be zero (instant detection, stateless restore)
Seconds = Annotated[float, _finite(ge=0), AtMost("max_duration_s")]
# durations, intervals and time limits that must pass
PositiveSeconds = Annotated[float, _finite(gt=0), AtMost("max_duration_s")]
# whole seconds that must pass (window lengths and slides)
WholeSeconds = Annotated[int, Field(ge=1), AtMost("max_duration_s")]
Milliseconds = Annotated[float, _finite(ge=0), AtMost("max_duration_s", 1000.0)]
PositiveMilliseconds = Annotated[float, _finite(gt=0), AtMost("max_duration_s", 1000.0)]
# capacities in nodes (1.0 = one node at 100 % CPU) and node sizes
Nodes = Annotated[float, _finite(ge=0), AtMost("max_nodes")]
PositiveNodes = Annotated[float, _finite(gt=0), AtMost("max_nodes")]
# counts of tasks (parallelism, instances) and replication budgets in tasks
TaskCount = Annotated[int, Field(ge=1), AtMost("max_tasks")]
TaskBudget = Annotated[int, Field(ge=0), AtMost("max_tasks")]
# counts of nodes, workers and replicas per task
NodeCount = Annotated[int, Field(ge=0), AtMost("max_nodes")]
PositiveNodeCount = Annotated[int, Field(ge=1), AtMost("max_nodes")]
# how often a failed streaming query may start again per window
RestartCount = Annotated[int, Field(ge=0, le=1000)]
# a port ftops listens on: unprivileged (ftops never runs as root, so a port below 1024 would only fail later)
Port = Annotated[int, Field(ge=1024, le=65535)]
# the first of the ports a command counts up from (masters, UIs, workers, drivers: up to 500 above it)
PortBase = Annotated[int, Field(ge=1024, le=65000)]
# a namespace network's subnet: 198.18.<subnet>.0/24 (spark_jobs.cluster.netns)
Subnet = Annotated[int, Field(ge=1, le=250)]
# a job's weight in fleet-wide staged recovery (ftops job set --priority; paper 003's query priority, for jobs)
Priority = Annotated[float, _finite(gt=0, le=1_000_000)]
# an event time, epoch milliseconds (a window's start, say)
EpochMs = Annotated[int, Field(ge=0, le=2**63 - 1)]
# days the history store keeps its most written rows (ft_core.store.retention)
RetentionDays = Annotated[float, _finite(ge=1, le=3650)]


def _memory_size(text: str) -> str:
    if not re.fullmatch(r"[1-9][0-9]{0,5}[kKmMgGtT]?", text):
        raise ValueError("expected a memory size like 512m or 2g (a whole number of at most 6 digits, then k, m, g or t)")
    return text


# a JVM memory size as Spark takes it (512m, 1g, 2048k): refused here rather than by a worker that never starts
MemorySize = Annotated[str, AfterValidator(_memory_size)]
# the JSON-schema pattern of a comma-separated list of non-negative decimals (a trigger form's text field;
# the values themselves are then checked with check_list)
# A pipeline reference in a trigger form: empty, a sample's name, module.path:attribute or a .py file path.
PIPELINE_REF_PATTERN = r"^$|^(topk|incidents|smartcity)$|^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$|^[^\s:]+\.py(:[A-Za-z_][A-Za-z0-9_]*)?$"
NUMBER_LIST_PATTERN = r"^\s*[0-9]+(\.[0-9]+)?(\s*,\s*[0-9]+(\.[0-9]+)?)*\s*$"
Seed = Annotated[int, Field(ge=-(2**63), le=2**64 - 1)]


@cache
def _adapter(kind: Any) -> TypeAdapter:
    return TypeAdapter(kind)


def field_kind(model: type[BaseModel], name: str) -> Any:
    """The type of a model's field with its constraints, so a flag for that field checks the same rules.

    >>> from pydantic import BaseModel
    >>> class Params(BaseModel):
    ...     delay_s: Seconds = 10.0
    >>> flag(field_kind(Params, "delay_s"))("1e18")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: exceeds the limit of 2592000 s (1e+18 given; set FTOPS_MAX_DURATION_S to raise it)
    """
    info = model.model_fields[name]
    return Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation


def check(kind: Any, value: Any, field: str) -> Any:
    """``value`` validated as ``kind``; :class:`InputError` ``<field>: <reason>`` otherwise."""
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError as exc:
        raise value_error(exc, field) from None


def flag(kind: Any):
    """An argparse ``type=`` for ``kind``: the flag's text validated with the same rules and messages."""

    def parse(text: str) -> Any:
        try:
            return _adapter(kind).validate_python(text)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(describe(exc.errors()[0])) from None

    parse.__name__ = getattr(kind, "__name__", "value")
    return parse


def check_list(kind: Any, text: str, field: str, *, max_items: str | None = None, allow_empty: bool = True) -> list:
    """``'a,b,c'`` with every item validated as ``kind``, at most limit ``max_items`` items;
    :class:`InputError` naming the field and the item otherwise.

    >>> check_list(PositiveNodes, "1, 0.5", "--arrivals")
    [1.0, 0.5]
    """
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items and not allow_empty:
        raise InputError(f"{field}: expected a comma-separated list, got {text!r}", field=field)
    if max_items is not None and len(items) > getattr(current_limits(), max_items):
        raise InputError(f"{field}: {len(items)} items {exceeds(max_items, len(items))}", field=field)
    out = []
    for i, item in enumerate(items):
        try:
            out.append(_adapter(kind).validate_python(item))
        except ValidationError as exc:
            raise InputError(f"{field}: item {i + 1} ({item!r}): {describe(exc.errors()[0])}", field=field) from None
    return out


def comma_list(kind: Any, *, max_items: str | None = None, allow_empty: bool = True):
    """An argparse ``type=`` for ``'a,b,c'`` (:func:`check_list`'s rules and messages)."""

    def parse(text: str) -> list:
        try:
            return check_list(kind, text, "", max_items=max_items, allow_empty=allow_empty)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(": ")) from None

    return parse


def param_schema(kind: Any) -> dict[str, Any]:
    """The JSON-schema bounds of ``kind`` (type, minimum, maximum, ...) for an Airflow ``Param``."""
    return _adapter(kind).json_schema()

