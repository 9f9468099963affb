"""The smart-city recovery-units workload: one spec for its Spark queries, its topology and its recovery problem.

Problem: incremental recovery (paper 003) restarts *parts* of a pipeline, so the pipeline is deployed as
recovery units: one Structured Streaming query per operator partition (key group of the road segment),
chained through durable Parquet tables, each with its own checkpoint. Which units exist, what they read,
which of them are queries (output partitions) and their priorities must be one truth for the Spark code,
the topology document and the recovery problem; :class:`SmartCitySpec` is that truth.

The pipeline (paper 003's Fig. 1 with the sources being the durable input files, like Kafka topics):

- ``O1[g]`` segment speed: average speed per road segment and event-time window, for the segments of
  key group ``g`` (reads the ``locations`` input) -> table ``O1[g]``. Output operator ("speed").
- ``O2[h]`` incidents: distinct incidents per segment and window for key group ``h`` (reads the
  ``incidents`` input) -> table ``O2[h]``. Output operator ("incidents").
- ``O3[h]`` jams: joins the ``O1`` tables that merge into ``h`` with table ``O2[h]`` on (window, segment);
  an incident on a segment whose window average speed is below ``jam_speed`` is a jam. Output operator
  ("jams"), correlated input.

Every partition of an output operator is a query (paper 003, Def. 1): its failed partitions are the
failed units of its upstream closure. So ``O3[h]`` shares ``O1`` and ``O2`` partitions with the speed
and incident queries. Priorities are per output operator (``priority_speed`` ...).

The input generator is the incidents workload's (this spec extends :class:`IncidentsSpec`), so the
input, its seeds and its event times are the same as for paper 000's Q2.

Example::

    >>> spec = SmartCitySpec(p1=2, p2=1)
    >>> spec.unit_ids()
    ['O1[0]', 'O1[1]', 'O2[0]', 'O3[0]']
    >>> spec.upstream_units("O3[0]")
    ['O1[0]', 'O1[1]', 'O2[0]']
    >>> problem_document(spec, ["O1[1]", "O3[0]"], declared_cost(spec, 0.4))["queries"]["O3[0]"]
    {'priority': 4.0, 'partitions': ['O1[1]', 'O3[0]']}
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, ValidationError

from ft_core.errors import InputError
from ft_core.topology.document import split_task_id
from spark_jobs.workloads.spec import IncidentsSpec, OperatorDef, downstream_group, parse_params

WORKLOAD = "smartcity"
OUTPUTS = {"O1": "speed", "O2": "incidents", "O3": "jams"}


class SmartCitySpec(IncidentsSpec):
    """Parameters of the smart-city units workload (generator parameters are IncidentsSpec's)."""

    workload: ClassVar[str] = WORKLOAD
    priority_speed: float = Field(default=1.0, ge=0, description="priority of each O1 (speed) query")
    priority_incidents: float = Field(default=2.0, ge=0, description="priority of each O2 (incidents) query")
    priority_jams: float = Field(default=4.0, ge=0, description="priority of each O3 (jams) query")

    def operators(self) -> list[OperatorDef]:
        p = self.join_parallelism
        return [OperatorDef("O1", self.p1, "segment average speed per window", "segment", param="p1"),
                OperatorDef("O2", p, "distinct incidents per segment and window", "segment", param="p2"),
                OperatorDef("O3", p, "join: incidents on jammed segments", "segment", "correlated", param="p2")]

    def stream_pairs(self) -> list[tuple[str, str]]:
        return [("O1", "O3"), ("O2", "O3")]

    # units and queries
    def unit_ids(self) -> list[str]:
        """Every recovery unit (= logical task), upstream first."""
        return self.task_ids()

    def check_units(self, units: list[str], where: str) -> list[str]:
        """``units`` validated against the workload (InputError names ``where`` and the bad id)."""
        known = self.unit_ids()
        for unit in units:
            if unit not in known:
                raise InputError(f"{where}: unknown unit {unit!r} (units: {', '.join(known)})")
        if len(set(units)) != len(units):
            dup = next(u for u in units if units.count(u) > 1)
            raise InputError(f"{where}: unit {dup!r} is listed twice")
        return sorted(units, key=known.index)

    def inputs(self, unit: str) -> list[str]:
        """The units whose tables ``unit`` reads (empty for a unit reading the input files)."""
        op, k = split_task_id(unit)
        out = []
        for up, down in self.stream_pairs():
            if down == op:
                pu, pd = self.parallelism(up), self.parallelism(down)
                out += [f"{up}[{j}]" for j in range(pu) if downstream_group(j, pu, pd) == k]
        return out

    def upstream_units(self, unit: str) -> list[str]:
        """The upstream closure of ``unit`` without itself (topological order)."""
        seen: set[str] = set()
        frontier = [unit]
        while frontier:
            for up in self.inputs(frontier.pop()):
                if up not in seen:
                    seen.add(up)
                    frontier.append(up)
        return [u for u in self.unit_ids() if u in seen]

    def query_ids(self) -> list[str]:
        """Queries are the output partitions: every unit of an output operator."""
        return [u for u in self.unit_ids() if split_task_id(u)[0] in OUTPUTS]

    def priority(self, query: str) -> float:
        return {"O1": self.priority_speed, "O2": self.priority_incidents, "O3": self.priority_jams}[split_task_id(query)[0]]

    def query_units(self, query: str) -> list[str]:
        """Def. 1: the query's partitions, its output partition and its upstream closure."""
        return self.upstream_units(query) + [query]


def make_units_spec(params: dict[str, Any] | list[str] | None = None) -> SmartCitySpec:
    """A validated spec from ``key=value`` strings or a dict; InputError names the bad parameter."""
    values = parse_params(params) if isinstance(params, list) else dict(params or {})
    try:
        return SmartCitySpec.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        raise InputError(f"--param {field}: {msg}" if field else f"--param {msg}") from None


def check_workload(name: str) -> None:
    if name != WORKLOAD:
        raise InputError(f"--workload: recovery units exist for {WORKLOAD!r} only, got {name!r}")


def declared_cost(spec: SmartCitySpec, per_unit: float) -> dict[str, float]:
    """Every unit costs ``per_unit`` of a node (a declared cost when none was measured)."""
    return {u: float(per_unit) for u in spec.unit_ids()}


def problem_document(spec: SmartCitySpec, failed: list[str], cost: dict[str, float]) -> dict[str, Any]:
    """The recovery problem (explicit form of :mod:`ft_core.recovery.problem`) after ``failed`` units
    fail: one query per output partition whose closure holds a failed unit, with its failed units
    (upstream first) and priority; ``cost`` in fractions of a node's CPU, in topological order."""
    failed = spec.check_units(list(failed), "failed")
    if not failed:
        raise InputError("failed: at least one failed unit is needed")
    missing = [u for u in failed if u not in cost]
    if missing:
        raise InputError(f"cost: no cost for failed unit {missing[0]!r}")
    queries = {}
    for q in spec.query_ids():
        parts = [u for u in spec.query_units(q) if u in failed]
        if parts:
            queries[q] = {"priority": spec.priority(q), "partitions": parts}
    return {"name": f"{WORKLOAD}-p{spec.p1}", "queries": queries, "cost": {u: round(cost[u], 6) for u in failed}}


def topology_document(spec: SmartCitySpec, rates: dict[str, float] | None = None) -> dict[str, Any]:
    """The topology document (units as tasks) from the same spec as the Spark queries."""
    return spec.topology(rates, name=f"{WORKLOAD}-p{spec.p1}").to_document()
