"""A pipeline definition and a *workload*: the definition bound to parameter values.

A :class:`Pipeline` is what a user writes once (see the package docstring for a whole example):
its parameters (a pydantic model, so ``--param k=v`` is validated), its sources, its operators (a
function of the parameters), how its output names windows, its accuracy function and, optionally,
a seeded sample input for demos, drills and benchmarks. :meth:`Pipeline.bind` checks the parameters
and returns a :class:`Workload`: the one object every part of ftops works with; it derives the
topology document, the task ids, the queries and their priorities, and builds the Spark job of each
role (:mod:`spark_jobs.pipeline.frames`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ft_core.errors import InputError
from ft_core.topology.document import Topology, parse_topology, split_task_id
from spark_jobs.pipeline.accuracy import Accuracy, SetOverlap, column_names
from spark_jobs.pipeline.operators import Operator, stream_partitioning, topological_order
from spark_jobs.pipeline.sources import Source


class Params(BaseModel):
    """Base of a pipeline's parameter model: unknown parameters are refused, values are frozen, and numbers
    are finite (``inf``/``nan`` refused). Type parallelism and durations with ``ft_core.input.quantities``
    (``TaskCount``, ``WholeSeconds``, ``Seconds``...) so the limits every ftops command enforces apply."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class NoParams(Params):
    """A pipeline without parameters."""


@dataclass(frozen=True)
class Output:
    """How the pipeline's output rows name their event-time window: ``window`` is a struct column
    (``F.window(...)``) turned into ``window_start``/``window_end`` epoch ms, or None when the rows
    already have those two columns. ``key``: the columns that identify a row within its window (the
    serving view merges the primary's and the replica's rows on them); empty when a window has one row.
    ``window_local``: a window's rows depend only on the events whose event time lies in that window
    (windowed aggregations, joins on the window). A drill on a running job then checks only the windows
    from just before its fault on, reading only the input that holds them; set False for a pipeline that
    carries state across windows, and drills run the reference over the whole input.
    ``window_s`` and ``slide_s``: the windows' length and step in event seconds (numbers, or functions of
    the params; ``slide_s`` None: tumbling), which ``ftops drill run`` checks its outage against before it
    starts; left None, they are read from the parameters ``window_s`` and ``slide_s`` when the pipeline
    has them (:meth:`Workload.windowing`)."""

    window: str | None = "window"
    key: tuple[str, ...] = ()
    window_local: bool = True
    window_s: float | Callable[[Any], float] | None = None
    slide_s: float | Callable[[Any], float] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", column_names(self.key, "Output(key)"))


@dataclass(frozen=True)
class SampleInput:
    """A seeded, replayable input for the pipeline's file sources: ``records(params, source, index)``
    returns the records of input file ``index`` of ``source`` (event times in
    ``[start_ms + index * file_s, start_ms + (index + 1) * file_s)``, epoch ms); the same arguments
    must always give the same records. ``file_s`` and ``start_ms`` may be parameters' values
    (functions of the params). ``expected_rates(params)`` may give, per source operator, the
    expected records per second of each task, for planning before anything was measured;
    ``tables(params)`` the rows of each static table (written once, before any stream file)."""

    records: Callable[[Any, str, int], list[dict]]
    file_s: float | Callable[[Any], float] = 1.0
    start_ms: int | Callable[[Any], int] = 1_700_000_000_000
    expected_rates: Callable[[Any], dict[str, dict[int, float]]] | None = None
    tables: Callable[[Any], dict[str, list[dict]]] | None = None


def parse_params(items: Sequence[str], flag: str = "--param") -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}`` (InputError naming ``flag`` and a malformed item)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise InputError(f"{flag} {item!r}: expected key=value", field=flag)
        out[key.strip()] = value.strip()
    return out


class Pipeline:
    """A streaming pipeline ftops can plan, replicate, drill, profile and recover.

    ``sources`` and ``operators`` may be lists or functions of the parameters; ``accuracy`` compares
    tentative with accurate rows per window (:mod:`spark_jobs.pipeline.accuracy`)."""

    def __init__(self, name: str, *, operators: Callable[[Any], list[Operator]] | list[Operator],
                 sources: Callable[[Any], list[Source]] | list[Source], params: type[Params] = NoParams,
                 output: Output = Output(), accuracy: Accuracy = SetOverlap(), sample_input: SampleInput | None = None,
                 description: str = ""):
        if not name or not all(c.isalnum() or c in "-_." for c in name):
            raise InputError(f"pipeline name {name!r}: letters, digits, '-', '_' or '.' only")
        self.name, self.params_model, self.output, self.accuracy = name, params, output, accuracy
        self.sample_input, self.description = sample_input, description
        self._operators, self._sources = operators, sources
        self.ref: str | None = None  # how to load it again (module:attribute or file path), set by the loader

    def bind(self, params: Params | dict[str, Any] | Sequence[str] | None = None) -> Workload:
        """The pipeline with these parameter values (``key=value`` strings, a dict or a model)."""
        if isinstance(params, self.params_model):
            model = params
        else:
            values = parse_params(params) if isinstance(params, (list, tuple)) else dict(params or {})
            try:
                model = self.params_model.model_validate(values)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                msg = err["msg"].removeprefix("Value error, ")
                raise InputError(f"--param {where}: {msg}" if where else f"--param {msg}", field="--param") from None
        return Workload(self, model)

    def __repr__(self) -> str:
        return f"Pipeline({self.name!r}, ref={self.ref!r})"


class Workload:
    """A pipeline with its parameters: the topology, the tasks, the sources of one deployment."""

    def __init__(self, pipeline: Pipeline, params: Params):
        self.pipeline, self.params = pipeline, params
        sources = pipeline._sources(params) if callable(pipeline._sources) else pipeline._sources
        self._sources = {s.name: s for s in sources}
        if len(self._sources) != len(sources):
            raise InputError(f"pipeline {pipeline.name}: two sources share a name")
        ops = pipeline._operators(params) if callable(pipeline._operators) else pipeline._operators
        self._order = topological_order(ops, set(self._sources))
        self._ops = {op.name: op for op in self._order}
        for op in self._order:
            for name in op.inputs:
                if name in self._sources and self._sources[name].static and len(op.inputs) == 1:
                    raise InputError(f"operator {op.name}: a static table must be joined with a stream input")
        for up, down in self.stream_pairs():
            stream_partitioning(self._ops[up], self._ops[down])  # refuses keys with non-dividing parallelisms
        sinks = self.sink_operators()
        if len(sinks) != 1:
            raise InputError(f"pipeline {pipeline.name}: exactly one operator must be the output (no operator "
                             f"reads it), found {', '.join(sinks) or 'none'}")

    # -- identity -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.pipeline.name

    @property
    def ref(self) -> str | None:
        return self.pipeline.ref

    def params_dict(self) -> dict[str, Any]:
        return self.params.model_dump(mode="json")

    def param_args(self) -> list[str]:
        """The parameters as ``key=value`` strings (what ``--param`` takes back; unset ones left out)."""
        return [f"{k}={v}" for k, v in self.params_dict().items() if v is not None]

    # -- structure ------------------------------------------------------------------------------
    def operators(self) -> list[Operator]:
        return list(self._order)

    def operator(self, name: str) -> Operator:
        if name not in self._ops:
            raise InputError(f"pipeline {self.name} has no operator {name!r} (operators: {', '.join(self._ops)})")
        return self._ops[name]

    def parallelism(self, name: str) -> int:
        return self.operator(name).parallelism

    def sources(self) -> list[Source]:
        return list(self._sources.values())

    def stream_sources(self) -> list[Source]:
        return [s for s in self._sources.values() if not s.static]

    def source(self, name: str) -> Source:
        return self._sources[name]

    @property
    def key_base(self) -> int:
        return math.lcm(*(op.parallelism for op in self._order))

    def task_ids(self) -> list[str]:
        return [t for op in self._order for t in op.task_ids()]

    def stream_pairs(self) -> list[tuple[str, str]]:
        return [(name, op.name) for op in self._order for name in op.inputs if name in self._ops]

    def partitioning(self, up: str, down: str) -> str:
        return stream_partitioning(self.operator(up), self.operator(down))

    def upstream(self, operator: str) -> list[str]:
        return [a for a, b in self.stream_pairs() if b == operator]

    def source_operators(self) -> list[str]:
        """Operators that read a stream source."""
        return [op.name for op in self._order
                if any(n in self._sources and not self._sources[n].static for n in op.inputs)]

    def sink_operators(self) -> list[str]:
        fed = {a for a, _ in self.stream_pairs()}
        return [op.name for op in self._order if op.name not in fed]

    def queries(self) -> dict[str, float]:
        """Paper 003's queries with their priorities: the tasks of the output operator and of every
        operator marked ``query=True``, in topological order."""
        sink = self.sink_operators()[0]
        return {t: op.priority for op in self._order if op.query or op.name == sink for t in op.task_ids()}

    # -- the sample input -------------------------------------------------------------------------
    @property
    def sample(self) -> SampleInput | None:
        return self.pipeline.sample_input

    def require_sample(self, what: str) -> SampleInput:
        if self.sample is None:
            raise InputError(f"pipeline {self.name} has no sample input (SampleInput), which {what} needs; "
                             "feed its input folder yourself")
        return self.sample

    @property
    def file_s(self) -> float:
        fs = self.require_sample("a seeded input").file_s
        return float(fs(self.params) if callable(fs) else fs)

    @property
    def start_ms(self) -> int:
        start = self.require_sample("a seeded input").start_ms
        return int(start(self.params) if callable(start) else start)

    def records(self, source: str, index: int) -> list[dict]:
        return self.require_sample("a seeded input").records(self.params, source, index)

    def windowing(self) -> tuple[float, float] | None:
        """The output's (window length, slide) in event seconds: what :class:`Output` declares, else the
        parameters ``window_s`` and ``slide_s`` (a slide of None: tumbling); None when neither says.

            >>> from spark_jobs.workloads.topk import pipeline
            >>> pipeline.bind(["window_s=60"]).windowing(), pipeline.bind(["window_s=4", "slide_s=2"]).windowing()
            ((60.0, 60.0), (4.0, 2.0))
        """
        def value(declared: float | Callable[[Any], float] | None, param: str) -> float | None:
            if declared is None:
                declared = getattr(self.params, param, None)
            elif callable(declared):
                declared = declared(self.params)
            ok = isinstance(declared, (int, float)) and not isinstance(declared, bool) and math.isfinite(declared)
            return float(declared) if ok else None  # a parameter named so that holds no number says nothing

        window = value(self.pipeline.output.window_s, "window_s")
        if window is None or window <= 0:
            return None
        slide = value(self.pipeline.output.slide_s, "slide_s")
        return window, slide if slide is not None and slide > 0 else window

    # -- topology ---------------------------------------------------------------------------------
    def source_rates(self) -> dict[str, float]:
        """Expected records/s of each source operator's task: the sample's model, else 1.0 each."""
        sample = self.sample
        if sample is not None and sample.expected_rates is not None:
            by_op = sample.expected_rates(self.params)
            return {f"{op}[{g}]": float(r) for op, groups in by_op.items() for g, r in groups.items()}
        return {t: 1.0 for op in self.source_operators() for t in self.operator(op).task_ids()}

    def topology(self, rates: dict[str, float] | None = None, name: str | None = None,
                 shares: dict[str, float] | None = None) -> Topology:
        """The topology document (validated by :func:`ft_core.topology.document.parse_topology`).

        ``rates``: every task's represented records/s (default: propagated from :meth:`source_rates`);
        ``shares``: a task's share of its operator's input (measured), used for full streams."""
        from spark_jobs.pipeline.rates import full_substreams, represented_rates

        if rates is None:
            rates = represented_rates(self, self.source_rates(), shares)
        doc: dict[str, Any] = {
            "name": name or self.name,
            "operators": [{"name": op.name, "parallelism": op.parallelism, "input_model": op.input_model}
                          for op in self._order],
            "streams": [{"from": a, "to": b, "partitioning": self.partitioning(a, b)} for a, b in self.stream_pairs()],
            "tasks": {t: {"rate": round(float(rates.get(t, 0.0)), 6)} for t in self.task_ids()},
        }
        substreams = full_substreams(self, rates, shares) if shares else []
        if substreams:
            doc["substreams"] = substreams
        return parse_topology(doc)

    def check_tasks(self, tasks: Sequence[str], what: str = "--plan") -> frozenset[str]:
        """Task ids checked against the topology (InputError naming one it does not have)."""
        known = set(self.task_ids())
        unknown = [t for t in tasks if t not in known]
        if unknown:
            raise InputError(f"{what}: task {unknown[0]!r} is not in the {self.name} topology (tasks: "
                             f"{', '.join(self.task_ids())})")
        return frozenset(tasks)

    def plan_groups(self, tasks: frozenset[str] | None, operator: str) -> list[int] | None:
        """The key groups of ``operator`` a replica of ``tasks`` keeps (None: no restriction)."""
        if tasks is None:
            return None
        return sorted(k for k in range(self.parallelism(operator)) if f"{operator}[{k}]" in tasks)

    def accuracy(self, tentative: list[dict], accurate: list[dict], windows=None) -> dict[tuple[int, int], float]:
        return self.pipeline.accuracy(tentative, accurate, windows)


def task_operator(task: str) -> str:
    return split_task_id(task)[0]
