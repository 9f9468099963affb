"""Model-based redundancy allocation and its Spark mapping (thesis 002, Sec. 3.2.1 Eq. 3.1, Sec. 4.1 Algorithm 1).

Problem: against intermittent slowdowns (GC pauses, contention), run a fraction of the work twice
and use whichever copy finishes first. In the thesis's simplified model each operator's instances
are split into *active* ones, enough to carry the load on time, and *passive* ones that only
process duplicates; the split must follow the load, which changes with the application's mode.

Algorithm 1 (GetModelBasedAllocation): from a per-mode profile (per-instance latency of each
operator, ms per tuple) and the source's period (ms per tuple per instance) and parallelism, walk
the linear pipeline: the sender's effective period is its per-instance period divided by its
parallelism, the receiver needs ``ceil(latency / effective period)`` active instances, and it
becomes the next sender (period = its latency, parallelism = its count). The final aggregator is
always 1. The thesis's example: 1 tuple / 200 ms from 2 source instances = one per 100 ms, a
300 ms bolt needs 3 instances (the text says "parallelism of one" but divides by 2; we follow the
arithmetic, as the digest does). O(#operators).

Equation 3.1: with ``S_a``/``S_p`` active/passive sender instances and ``R_a``/``R_p`` receivers,
each sender duplicates ``f = (R_p / R_a) / (1 + S_p / S_a)`` of its output, so that every
receiver instance is equally utilised (passive senders also emit the results of the duplicates
they processed). The thesis does not cap f; we cap it at 1 by default (one extra copy per tuple),
``cap=None`` keeps the raw value.

Spark mapping (:func:`speculation_settings`): see its docstring; it is a design choice of this
project, not the thesis's.

Example (the thesis's Fig. 3.8 and Algorithm 1 examples)::

    >>> replication_fraction(active_receivers=3, passive_receivers=2, active_senders=1, passive_senders=1)
    0.3333333333333333
    >>> model_based_allocation([("detect", 300.0)], source_period_ms=200, source_parallelism=2)
    {'detect': 3}
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.limits import current_limits, exceeds
from ft_core.input.quantities import PositiveMilliseconds, TaskCount
from ft_core.input.validation import validate

# Spark 4.x defaults (read from spark-core 4.3.0's config package): the level-0 end of the mapping.
SPARK_DEFAULT_QUANTILE = 0.9
SPARK_DEFAULT_MULTIPLIER = 3.0
SPARK_DEFAULT_MIN_TASK_RUNTIME_MS = 100


def replication_fraction(
    active_receivers: int,
    passive_receivers: int,
    active_senders: int = 1,
    passive_senders: int = 0,
    *,
    cap: float | None = 1.0,
) -> float:
    """Eq. 3.1: the fraction of a sender's output to duplicate to passive receivers."""
    for name, value, low in (("active_receivers", active_receivers, 1), ("passive_receivers", passive_receivers, 0),
                             ("active_senders", active_senders, 1), ("passive_senders", passive_senders, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InputError(f"{name}: must be an integer >= {low}, got {value!r}")
    fraction = (passive_receivers / active_receivers) / (1 + passive_senders / active_senders)
    return fraction if cap is None else min(fraction, cap)


def model_based_allocation(
    latency_ms: Sequence[tuple[str, float]],
    source_period_ms: float,
    source_parallelism: int,
    *,
    aggregator: str | None = None,
) -> dict[str, int]:
    """Algorithm 1: active instances per operator of a linear pipeline (source excluded).

    ``latency_ms`` lists the operators after the source, in pipeline order, with their
    per-instance latency per tuple in the current mode; ``aggregator`` (if given) is appended with
    1 instance, as the thesis's model requires a final aggregating operator.
    """
    _positive(source_period_ms, "source_period_ms")
    if isinstance(source_parallelism, bool) or not isinstance(source_parallelism, int) or source_parallelism < 1:
        raise InputError(f"source_parallelism: must be an integer >= 1, got {source_parallelism!r}")
    allocation: dict[str, int] = {}
    sender_period, sender_parallelism = float(source_period_ms), source_parallelism
    for name, latency in latency_ms:
        _positive(latency, f"latency_ms.{name}")
        effective_period = sender_period / sender_parallelism
        # 1e-9: a latency that is an exact multiple of the period must not round up through float noise
        needed = latency / effective_period - 1e-9
        if not needed <= current_limits().max_tasks:  # also inf: a period of 1e-300 ms
            raise InputError(f"latency_ms.{name}: {latency:g} ms per tuple every {effective_period:g} ms needs "
                             f"{needed:.3g} active instances, which {exceeds('max_tasks', needed)}")
        count = max(1, math.ceil(needed))
        allocation[name] = count
        sender_period, sender_parallelism = float(latency), count
    if aggregator is not None:
        allocation[aggregator] = 1
    return allocation


def _positive(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: must be a finite number > 0, got {value!r}")


def speculation_settings(level: float, *, live: bool = False) -> dict[str, str]:
    """Spark speculative-execution settings for a redundancy level (replication fraction).

    Why speculation: Spark runs a speculative copy of a slow task and keeps whichever attempt
    finishes first (the output commit coordinator lets one attempt commit and the other is
    killed), which is the thesis's computation redundancy with "first copy wins" at task
    granularity, with the duplicate filtering done by Spark. The difference is timing: the thesis
    clones eagerly, Spark clones a task only once it looks like a straggler. The mapping therefore
    makes Spark more eager as the level rises.

    The mapping (a choice of this project; levels above 1, which the thesis uses for more than one
    copy per tuple, are capped at 1 because Spark runs at most one speculative copy per task):

    - level <= 0: ``spark.speculation=false`` and Spark 4's defaults for the rest (quantile 0.9,
      multiplier 3, minTaskRuntime 100ms), written out so that a resubmitted job is reset.
    - ``spark.speculation.quantile = 1 - level``: Spark only speculates once this fraction of a
      stage's tasks has finished, so at most ``1 - quantile = level`` of the tasks can get a copy:
      the level bounds the duplicated fraction of the work, as r does in the thesis. (Spark still
      waits for one finished task to have a median.)
    - ``spark.speculation.multiplier = 3 - 2 x level`` (3 at level 0, 1 at level 1): a task is a
      straggler when it runs longer than multiplier x the median; at level 1 any task slower than
      the median is cloned, the closest Spark gets to eager cloning.
    - ``spark.speculation.minTaskRuntime = 100ms x (1 - level)``: short micro-batch tasks are
      only cloned at high levels (a 150 ms GC pause already exceeds the default).

    ``live=True``, for a level changed while the application runs (:mod:`spark_jobs.redundancy.live`):
    Spark reads quantile and multiplier for every new task set from the driver's live SparkConf, but
    starts its speculation thread and fixes minTaskRuntime when the application starts. So speculation
    is always on, minTaskRuntime stays Spark's 100 ms, and level 0 is quantile 1: a copy would need
    every task of the stage finished first, so there is never one.

    >>> speculation_settings(0.25)
    {'spark.speculation': 'true', 'spark.speculation.quantile': '0.75', 'spark.speculation.multiplier': '2.5', 'spark.speculation.minTaskRuntime': '75ms'}
    >>> speculation_settings(0, live=True)
    {'spark.speculation': 'true', 'spark.speculation.quantile': '1', 'spark.speculation.multiplier': '3', 'spark.speculation.minTaskRuntime': '100ms'}
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not math.isfinite(level):
        raise InputError(f"level: must be a finite number, got {level!r}")
    level = min(max(float(level), 0.0), 1.0)
    eagerness = 1.0 - level
    if live:
        return _settings(True, eagerness, 1.0 + (SPARK_DEFAULT_MULTIPLIER - 1.0) * eagerness,
                         SPARK_DEFAULT_MIN_TASK_RUNTIME_MS)
    if level == 0.0:
        return _settings(False, SPARK_DEFAULT_QUANTILE, SPARK_DEFAULT_MULTIPLIER, SPARK_DEFAULT_MIN_TASK_RUNTIME_MS)
    return _settings(True, eagerness, 1.0 + (SPARK_DEFAULT_MULTIPLIER - 1.0) * eagerness,
                     SPARK_DEFAULT_MIN_TASK_RUNTIME_MS * eagerness)


def _settings(enabled: bool, quantile: float, multiplier: float, min_runtime_ms: float) -> dict[str, str]:
    return {
        "spark.speculation": "true" if enabled else "false",
        "spark.speculation.quantile": f"{round(quantile, 4):g}",
        "spark.speculation.multiplier": f"{round(multiplier, 4):g}",
        "spark.speculation.minTaskRuntime": f"{round(min_runtime_ms)}ms",
    }


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Source(_Doc):
    period_ms: PositiveMilliseconds = Field(description="ms per tuple per source instance")
    parallelism: Annotated[TaskCount, Field(strict=True)]


class RedundancyModel(_Doc):
    """A profiled pipeline (the input of ``ftops plan redundancy --model``)::

        pipeline: [detect, mark, write]     # operators after the source, in order (aggregator excluded)
        aggregator: agg                     # optional final aggregator (always 1 instance)
        source: {period_ms: 200, parallelism: 2}
        instances: {detect: 10, mark: 5, write: 2}   # optional: total instances per operator
        modes:                              # per-instance latency per tuple (ms) in each mode
          normal: {detect: 300, mark: 40, write: 30}

    ``source`` may be overridden per mode (``source_by_mode``) because the rate is what changes.
    """

    name: str = "pipeline"
    pipeline: list[str] = Field(min_length=1)
    aggregator: str | None = None
    source: Source
    source_by_mode: dict[str, Source] = Field(default_factory=dict)
    instances: dict[str, Annotated[TaskCount, Field(strict=True)]] = Field(default_factory=dict)
    modes: dict[str, dict[str, PositiveMilliseconds]] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> RedundancyModel:
        ops = set(self.pipeline)
        if len(ops) != len(self.pipeline):
            raise ValueError("pipeline: an operator is listed twice")
        for mode, latencies in self.modes.items():
            missing = [op for op in self.pipeline if op not in latencies]
            if missing:
                raise ValueError(f"modes.{mode}: no latency for {missing[0]!r}")
            extra = sorted(set(latencies) - ops)
            if extra:
                raise ValueError(f"modes.{mode}.{extra[0]}: not an operator of the pipeline")
        for op, count in self.instances.items():
            if op not in ops or isinstance(count, bool) or count < 1:
                raise ValueError(f"instances.{op}: must name a pipeline operator and be an integer >= 1")
        for mode in self.source_by_mode:
            if mode not in self.modes:
                raise ValueError(f"source_by_mode.{mode}: unknown mode")
        return self


class EdgeFraction(BaseModel):
    sender: str
    receiver: str
    fraction: float


class AllocationPlan(BaseModel):
    """Algorithm 1's active instances, the passive rest, and Eq. 3.1's fraction per edge."""

    mode: str
    active: dict[str, int]
    passive: dict[str, int]
    fractions: list[EdgeFraction]
    level: float = Field(description="the source edge's fraction: the level applied to Spark")
    warnings: list[str]


def load_redundancy_model(path: str | Path) -> RedundancyModel:
    return parse_redundancy_model(read_document(path, "redundancy model"))


def parse_redundancy_model(data: Any) -> RedundancyModel:
    return validate(RedundancyModel, data, "redundancy model")


def plan_allocation(model: RedundancyModel, mode: str | None = None) -> AllocationPlan:
    """Algorithm 1 for ``mode`` (default: the first), then Eq. 3.1 on each edge.

    Passive = total instances - active (0 when no total is given). The level applied to Spark is
    the fraction on the source's output edge: the thesis found duplicating at the source output
    the most effective placement, and Spark's speculation settings are job-wide.
    """
    mode = mode or next(iter(model.modes))
    if mode not in model.modes:
        raise InputError(f"--mode: unknown mode {mode!r} (modes: {', '.join(model.modes)})")
    source = model.source_by_mode.get(mode, model.source)
    latencies = [(op, model.modes[mode][op]) for op in model.pipeline]
    active = model_based_allocation(latencies, source.period_ms, source.parallelism)
    warnings, passive = [], {}
    for op in model.pipeline:
        total = model.instances.get(op, active[op])
        if total < active[op]:
            warnings.append(f"{op}: the model needs {active[op]} active instances but only {total} exist; no passive ones")
        passive[op] = max(0, total - active[op])
    senders = [("source", source.parallelism, 0)] + [(op, active[op], passive[op]) for op in model.pipeline[:-1]]
    fractions = [
        EdgeFraction(sender=name, receiver=op, fraction=replication_fraction(active[op], passive[op], s_active, s_passive))
        for (name, s_active, s_passive), op in zip(senders, model.pipeline)
    ]
    if model.aggregator:
        active[model.aggregator], passive[model.aggregator] = 1, 0
    return AllocationPlan(mode=mode, active=active, passive=passive, fractions=fractions,
                          level=fractions[0].fraction, warnings=warnings)
