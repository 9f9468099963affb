"""The limits every input is held to: how large, how deep, how long, how many.

Why: a document or flag that is valid in form can still ask for more memory or time than any machine
has (a parallelism of 10^18, a fault every 1e-300 s, a schedule of 10^18 s). Each limit below is named
in the message that rejects a value, with the environment variable that raises it, because a real
deployment may need more than the defaults (which cover the papers' largest experiments with room to
spare). Limits are read from the environment at the moment a value is checked, so a test or an
operator can change one without restarting anything.

Example::

    >>> current_limits({"FTOPS_MAX_TASKS": "500"}).max_tasks
    500
    >>> LIMITS["max_tasks"].env
    'FTOPS_MAX_TASKS'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ft_core.errors import InputError


@dataclass(frozen=True, slots=True)
class Limit:
    """One limit: its environment variable, default, unit and what it bounds (for messages and --help)."""

    env: str
    default: int | float
    unit: str
    bounds: str


LIMITS: dict[str, Limit] = {
    "max_document_bytes": Limit("FTOPS_MAX_DOCUMENT_BYTES", 16 * 1024 * 1024, "bytes", "size of a document file"),
    "max_depth": Limit("FTOPS_MAX_DEPTH", 64, "levels", "nesting of objects and lists in a document"),
    "max_elements": Limit("FTOPS_MAX_ELEMENTS", 2_000_000, "values",
                          "values in a document, YAML aliases expanded"),
    "max_tasks": Limit("FTOPS_MAX_TASKS", 100_000, "tasks",
                       "tasks of a topology (sum of parallelism), partitions and queries of a recovery problem, "
                       "instances and budgets"),
    "max_substreams": Limit("FTOPS_MAX_SUBSTREAMS", 2_000_000, "substreams", "task-to-task substreams of a topology"),
    "max_duration_s": Limit("FTOPS_MAX_DURATION_S", 30 * 24 * 3600, "s",
                            "durations, intervals, times and time limits (30 days)"),
    "max_nodes": Limit("FTOPS_MAX_NODES", 10_000, "nodes",
                       "capacities and node sizes (1.0 = one node), arriving nodes, replicas per task, workers"),
    "max_fault_rate_per_s": Limit("FTOPS_MAX_FAULT_RATE_PER_S", 100, "faults/s",
                                  "fault rate of one fault process (a mean gap of at least 1/this seconds)"),
    "max_fault_events": Limit("FTOPS_MAX_FAULT_EVENTS", 100_000, "faults", "faults in one schedule"),
}


class Limits(BaseModel):
    """The limits in force (see :data:`LIMITS` for what each bounds)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    max_document_bytes: int = Field(gt=0)
    max_depth: int = Field(ge=2, le=10_000)  # a document needs two levels; Python's stack bounds the top
    max_elements: int = Field(gt=0)
    max_tasks: int = Field(gt=0)
    max_substreams: int = Field(gt=0)
    max_duration_s: float = Field(gt=0)
    max_nodes: float = Field(gt=0)
    max_fault_rate_per_s: float = Field(gt=0)
    max_fault_events: int = Field(gt=0)


def current_limits(environ: Mapping[str, str] | None = None) -> Limits:
    """The limits from the environment (``FTOPS_MAX_*``), defaults for the variables not set."""
    env = os.environ if environ is None else environ
    values = {name: env.get(limit.env, limit.default) for name, limit in LIMITS.items()}
    try:
        return Limits.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        limit = LIMITS[str(err["loc"][0])]
        raise InputError(f"{limit.env}: {err['msg']}, got {env.get(limit.env)!r}", field=limit.env) from None


def exceeds(name: str, value: object, limits: Limits | None = None) -> str:
    """The message for a value over limit ``name``: the limit, its unit and how to raise it.

    >>> exceeds("max_tasks", 10**7, current_limits({}))
    'exceeds the limit of 100000 tasks (10000000 given; set FTOPS_MAX_TASKS to raise it)'
    """
    limit = LIMITS[name]
    allowed = getattr(limits or current_limits(), name)
    return f"exceeds the limit of {_show(allowed)} {limit.unit} ({_show(value)} given; set {limit.env} to raise it)"


def limits_help(limits: Limits | None = None) -> str:
    """One line per limit, for ``--help`` and the README."""
    limits = limits or current_limits()
    return "\n".join(f"  {limit.env}={_show(getattr(limits, name))} {limit.unit}: {limit.bounds}"
                     for name, limit in LIMITS.items())


def _show(value: object) -> str:
    """Whole numbers as integers (16777216, not 1.67772e+07), other floats short."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return f"{value:g}" if isinstance(value, float) else str(value)
