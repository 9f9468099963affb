"""Workload parameters: one model that builds the Spark plan, drives the generator and emits the topology.

Problem: a streaming job's declared topology (operators, parallelism, partitionings, per-task rates;
the document of :mod:`ft_core.topology.document`) must be *true of the job*. Here it cannot drift, because the
same :class:`WorkloadSpec` object is used to build the DataFrame plan (``topk.py``,
``incidents.py``), to generate the input (``generator.py``) and to emit the document
(:meth:`WorkloadSpec.topology`).

Logical tasks are key groups. Every operator ``O`` of parallelism ``p`` assigns a record with key
``x`` to task ``O[g]`` with::

    g = pmod(xxhash64(x), B) * p div B        B = lcm of the workload's parallelisms

computed identically in Python (:func:`key_group`, a port of Spark's seeded XXH64 for ``bigint``)
and in Spark (:func:`key_group_column`). For the operator with the largest parallelism
(``p == B``) this is exactly ``pmod(xxhash64(x), p)``. Because the groups are ranges of the same
buckets, a downstream group is a function of the upstream one: ``merge`` (``p_up = m * p_down``)
maps ``O1[k] -> O2[k div m]`` and ``one_to_one`` maps ``k -> k``, exactly the partitionings of the
topology contract, so the declared streams hold for every record (:func:`downstream_group`).

Task rates (default): the generator's *expected* records per second whose key falls into the task's
key group (the input records the task summarises), computed exactly from the Zipf distributions and
the key-group function (:meth:`WorkloadSpec.expected_rates`); measured rates can be passed instead.

Example::

    >>> spec = TopkSpec(p1=4)
    >>> [op.name for op in spec.operators()], spec.partitioning("O1", "O2")
    (['O1', 'O2', 'O3'], 'merge')
    >>> key_group(5, 4, 4) == (6251837290343458373 % 4)   # Spark: pmod(xxhash64(5L), 4)
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.quantities import AtMost, PositiveSeconds, Seconds
from ft_core.topology.document import Topology, parse_topology, split_task_id

# --- the key-group function -------------------------------------------------------------------

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
    """The task index of ``key`` in an operator of ``parallelism`` tasks (``base`` = lcm of the
    workload's parallelisms): ``pmod(xxhash64(key), base) * parallelism div base``."""
    return (xxhash64_long(key) % base) * parallelism // base


def key_group_column(col: Any, parallelism: int, base: int) -> Any:
    """The same function as a Spark column (``col`` a bigint column or column name)."""
    from pyspark.sql import functions as F

    c = F.col(col) if isinstance(col, str) else col
    return F.floor(F.pmod(F.xxhash64(c.cast("bigint")), F.lit(base)) * F.lit(parallelism) / F.lit(base)).cast("int")


def downstream_group(group: int, p_up: int, p_down: int) -> int:
    """The downstream task that upstream task ``group`` feeds (merge or one_to_one)."""
    return group * p_down // p_up


def zipf_probabilities(n: int, s: float) -> list[float]:
    """P(rank r) proportional to 1 / r^s, r = 1..n."""
    weights = [1.0 / (r ** s) for r in range(1, n + 1)]
    total = sum(weights)
    return [w / total for w in weights]


def apportion(total: int, probs: list[float]) -> list[int]:
    """Largest-remainder apportionment of ``total`` items by ``probs`` (deterministic, exact sum)."""
    quotas = [total * p for p in probs]
    counts = [int(q) for q in quotas]
    order = sorted(range(len(probs)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


# --- the parameter models ---------------------------------------------------------------------

@dataclass(frozen=True)
class OperatorDef:
    name: str
    parallelism: int
    role: str                      # what the operator computes (for tables and docs)
    key: str                       # the record key whose key group is the task
    input_model: Literal["independent", "correlated"] = "independent"
    param: str | None = None       # the spec parameter that sets the parallelism


@dataclass(frozen=True)
class SourceDef:
    name: str                      # sub-folder of the input folder
    fields: tuple[tuple[str, str], ...]  # (column, spark type)
    operator: str                  # the source operator that reads it

    def schema_ddl(self) -> str:
        """The source's schema as Spark DDL (``"ts long, page string"``), for its JSON reader."""
        return ", ".join(f"{name} {kind}" for name, kind in self.fields)


class WorkloadSpec(BaseModel):
    """Parameters shared by every workload (event time, windows, generator pacing)."""

    # finite numbers; durations, key spaces, rates and parallelism within ft_core's input limits
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    workload: ClassVar[str] = ""

    seed: int = 7
    rate: Annotated[float, AtMost("max_elements")] = Field(default=200.0, gt=0, description="input records per second of event time")
    file_s: PositiveSeconds = Field(default=1.0, description="event-time seconds per input file")
    start_ms: int = Field(default=1_700_000_000_000, ge=0, le=2**62, description="event time of the first record (epoch ms)")
    window_s: Annotated[int, AtMost("max_duration_s")] = Field(default=10, ge=1)
    slide_s: Annotated[int, AtMost("max_duration_s")] | None = Field(default=None, ge=1, description="sliding step (default: tumbling)")
    watermark_s: Seconds = 2.0

    @model_validator(mode="after")
    def _check_common(self):
        slide = self.slide_s or self.window_s
        if self.window_s % slide:
            raise ValueError(f"window_s ({self.window_s}) must be a multiple of slide_s ({slide})")
        self.check_parallelism()
        return self

    # subclasses
    def operators(self) -> list[OperatorDef]:  # pragma: no cover - abstract
        raise NotImplementedError

    def stream_pairs(self) -> list[tuple[str, str]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def sources(self) -> list[SourceDef]:  # pragma: no cover - abstract
        raise NotImplementedError

    def expected_source_rates(self) -> dict[str, dict[int, float]]:  # pragma: no cover - abstract
        """Per source operator: expected input records/s per key group."""
        raise NotImplementedError

    def check_parallelism(self) -> None:
        for a, b in self.stream_pairs():
            self.partitioning(a, b)

    # derived
    @property
    def slide(self) -> int:
        return self.slide_s or self.window_s

    @property
    def window_ms(self) -> int:
        return self.window_s * 1000

    def operator(self, name: str) -> OperatorDef:
        return {op.name: op for op in self.operators()}[name]

    def parallelism(self, name: str) -> int:
        return self.operator(name).parallelism

    @property
    def key_base(self) -> int:
        return math.lcm(*(op.parallelism for op in self.operators()))

    def group(self, operator: str, key: int) -> int:
        return key_group(int(key), self.parallelism(operator), self.key_base)

    def group_column(self, operator: str, col: Any) -> Any:
        return key_group_column(col, self.parallelism(operator), self.key_base)

    def partitioning(self, up: str, down: str) -> str:
        pu, pd = self.parallelism(up), self.parallelism(down)
        if pu == pd:
            return "one_to_one"
        if pu % pd == 0:
            return "merge"
        names = " and ".join(f"{self.operator(o).param}={self.parallelism(o)}" for o in (up, down) if self.operator(o).param)
        raise ValueError(f"{names}: the parallelism of {up} ({pu}) must equal or be a multiple of that of {down} ({pd})")

    def task_ids(self) -> list[str]:
        return [f"{op.name}[{k}]" for op in self.operators() for k in range(op.parallelism)]

    def upstream(self, operator: str) -> list[str]:
        return [a for a, b in self.stream_pairs() if b == operator]

    def source_operators(self) -> list[str]:
        return [op.name for op in self.operators() if not self.upstream(op.name)]

    def feeds(self, source_task: str) -> set[str]:
        """Every task the records of a source task reach (its key group's path through the DAG)."""
        op, k = split_task_id(source_task)
        out, frontier = {source_task}, [(op, k)]
        while frontier:
            name, g = frontier.pop()
            for a, b in self.stream_pairs():
                if a == name:
                    g2 = downstream_group(g, self.parallelism(a), self.parallelism(b))
                    out.add(f"{b}[{g2}]")
                    frontier.append((b, g2))
        return out

    def expected_rates(self) -> dict[str, float]:
        """Expected records/s represented by each task: a source task's input rate; a downstream
        task's rate is the sum over the source tasks that feed it."""
        rates = {t: 0.0 for t in self.task_ids()}
        for op, groups in self.expected_source_rates().items():
            for g, r in groups.items():
                for task in self.feeds(f"{op}[{g}]"):
                    rates[task] += r
        return rates

    def topology(self, rates: dict[str, float] | None = None, name: str | None = None) -> Topology:
        """The topology document of this workload, validated by :func:`ft_core.topology.document.parse_topology`."""
        rates = self.expected_rates() if rates is None else rates
        doc = {
            "name": name or f"{self.workload}-p{self.parallelism('O1')}",
            "operators": [{"name": op.name, "parallelism": op.parallelism, "input_model": op.input_model}
                          for op in self.operators()],
            "streams": [{"from": a, "to": b, "partitioning": self.partitioning(a, b)} for a, b in self.stream_pairs()],
            "tasks": {t: {"rate": round(float(rates.get(t, 0.0)), 6)} for t in self.task_ids()},
        }
        return parse_topology(doc)

    def params(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class TopkSpec(WorkloadSpec):
    """Paper 000's Q1: a web access log (Zipf page popularity over Zipf-loaded servers, like the
    World Cup 1998 log) -> O1 per-server-group window aggregates -> O2 merge -> O3 global top-k."""

    workload: ClassVar[str] = "topk"
    n_servers: Annotated[int, AtMost("max_elements")] = Field(default=32, ge=1)
    n_pages: Annotated[int, AtMost("max_elements")] = Field(default=200, ge=1)
    server_zipf: float = Field(default=1.0, ge=0)
    page_zipf: float = Field(default=1.0, ge=0)
    page_affinity: float = Field(default=0.0, ge=0, le=1, description="share of requests whose page popularity "
                                 "is the server's own (its Zipf ranking rotated by server); 0: one popularity for all")
    k: Annotated[int, AtMost("max_elements")] = Field(default=10, ge=1)
    p1: Annotated[int, AtMost("max_tasks")] = Field(default=4, ge=1)
    p2: Annotated[int, AtMost("max_tasks")] | None = Field(default=None, ge=1, description="merge parallelism (default p1 // 2, at least 1)")

    @property
    def merge_parallelism(self) -> int:
        return self.p2 if self.p2 is not None else max(1, self.p1 // 2)

    def operators(self) -> list[OperatorDef]:
        return [OperatorDef("O1", self.p1, "per-server-group window page counts", "server", param="p1"),
                OperatorDef("O2", self.merge_parallelism, "merge of O1 partial counts", "server", param="p2"),
                OperatorDef("O3", 1, "global top-k pages per window", "server")]

    def stream_pairs(self) -> list[tuple[str, str]]:
        return [("O1", "O2"), ("O2", "O3")]

    def sources(self) -> list[SourceDef]:
        return [SourceDef("requests", (("ts", "bigint"), ("server", "bigint"), ("page", "bigint")), "O1")]

    def server_probabilities(self) -> list[float]:
        return zipf_probabilities(self.n_servers, self.server_zipf)

    def page_probabilities(self) -> list[float]:
        return zipf_probabilities(self.n_pages, self.page_zipf)

    def expected_source_rates(self) -> dict[str, dict[int, float]]:
        groups = {g: 0.0 for g in range(self.p1)}
        for server, p in enumerate(self.server_probabilities()):
            groups[self.group("O1", server)] += self.rate * p
        return {"O1": groups}


class IncidentsSpec(WorkloadSpec):
    """Paper 000's Q2: users on road segments (Zipf s=0.5) report locations and incidents ->
    O1 segment speed, O2 distinct incidents, O3 their join (jams), O4 jams per window."""

    workload: ClassVar[str] = "incidents"
    n_users: Annotated[int, AtMost("max_elements")] = Field(default=1000, ge=1)
    n_segments: Annotated[int, AtMost("max_elements")] = Field(default=100, ge=1)
    segment_zipf: float = Field(default=0.5, ge=0)
    incident_interval_s: Annotated[float, AtMost("max_duration_s")] = Field(default=2.0, gt=0)
    report_spread_s: Annotated[float, AtMost("max_duration_s")] = Field(default=3.0, ge=0, description="reports arrive within this delay after the incident")
    jam_prob: float = Field(default=0.5, ge=0, le=1, description="share of incidents that slow their segment down")
    jam_duration_s: Annotated[float, AtMost("max_duration_s")] = Field(default=20.0, ge=0)
    jam_speed: float = Field(default=50.0, gt=0, description="a window's average speed below this is a jam")
    p1: Annotated[int, AtMost("max_tasks")] = Field(default=4, ge=1)
    p2: Annotated[int, AtMost("max_tasks")] | None = Field(default=None, ge=1, description="distinct-incident and join parallelism (default p1 // 2)")

    @property
    def join_parallelism(self) -> int:
        return self.p2 if self.p2 is not None else max(1, self.p1 // 2)

    def operators(self) -> list[OperatorDef]:
        p = self.join_parallelism
        return [OperatorDef("O1", self.p1, "segment average speed per window", "segment", param="p1"),
                OperatorDef("O2", p, "distinct incidents per window", "segment", param="p2"),
                OperatorDef("O3", p, "join: incidents on jammed segments", "segment", "correlated", param="p2"),
                OperatorDef("O4", 1, "jam incidents per window", "segment")]

    def stream_pairs(self) -> list[tuple[str, str]]:
        return [("O1", "O3"), ("O2", "O3"), ("O3", "O4")]

    def sources(self) -> list[SourceDef]:
        return [SourceDef("locations", (("ts", "bigint"), ("user", "bigint"), ("segment", "bigint"), ("speed", "double")), "O1"),
                SourceDef("incidents", (("ts", "bigint"), ("incident", "bigint"), ("segment", "bigint"), ("user", "bigint")), "O2")]

    def users_per_segment(self) -> list[int]:
        return apportion(self.n_users, zipf_probabilities(self.n_segments, self.segment_zipf))

    def expected_source_rates(self) -> dict[str, dict[int, float]]:
        users = self.users_per_segment()
        o1 = {g: 0.0 for g in range(self.parallelism("O1"))}
        o2 = {g: 0.0 for g in range(self.parallelism("O2"))}
        for seg, n in enumerate(users):
            share = n / self.n_users
            o1[self.group("O1", seg)] += self.rate * share                          # uniform user per record
            o2[self.group("O2", seg)] += share * n / self.incident_interval_s       # all n users report
        return {"O1": o1, "O2": o2}


SPECS: dict[str, type[WorkloadSpec]] = {"topk": TopkSpec, "incidents": IncidentsSpec}


def make_spec(workload: str, params: dict[str, Any] | list[str] | None = None) -> WorkloadSpec:
    """A validated spec from ``key=value`` strings or a dict; InputError names the bad parameter."""
    if workload not in SPECS:
        raise InputError(f"workload {workload!r}: expected one of {', '.join(SPECS)}")
    values = parse_params(params) if isinstance(params, list) else dict(params or {})
    try:
        return SPECS[workload].model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        raise InputError(f"--param {field}: {msg}" if field else f"--param {msg}") from None


def parse_params(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--param {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


def load_plan_tasks(path: str | Path, spec: WorkloadSpec) -> frozenset[str]:
    """The tasks of a replication plan (``ftops plan replication --json``) checked against the
    workload's topology; a task the workload does not have is an InputError naming it."""
    doc = read_document(path, "--plan")
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
        raise InputError(f"--plan: {str(path)!r} has no 'tasks' list of task ids")
    known = set(spec.task_ids())
    unknown = [t for t in tasks if t not in known]
    if unknown:
        raise InputError(f"--plan: task {unknown[0]!r} is not in the {spec.workload} topology "
                         f"(tasks: {', '.join(spec.task_ids())})")
    return frozenset(tasks)


def plan_groups(tasks: frozenset[str] | None, spec: WorkloadSpec, operator: str) -> list[int] | None:
    """The key groups of ``operator`` kept by a replica plan (None: no restriction)."""
    if tasks is None:
        return None
    return sorted(k for k in range(spec.parallelism(operator)) if f"{operator}[{k}]" in tasks)
