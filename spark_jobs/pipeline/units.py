"""The recovery units of a pipeline: which units exist, which upstream units each one reads, the queries and
the partitions they need, and the recovery problem after a failure (paper 003, Definitions 1 and 2).

Problem: incremental recovery restarts *parts* of a pipeline, so ftops can deploy any pipeline as recovery
units (:mod:`spark_jobs.recovery_units`): one streaming query per task ``op[k]``, chained through durable
tables. Which units exist, what each reads, which are queries and with which priority must be one truth for
the Spark queries, the topology document and the recovery problem; :class:`UnitTopology` is that truth,
derived from the workload alone (no Spark).

Method: a unit of a source operator reads the sources (restricted to its key group); a unit ``op[k]`` of a
downstream operator reads, per input operator ``up``, the tables of the ``up`` units whose rows can reach
key group ``k`` (:mod:`.keys`): for ``one_to_one`` and ``merge`` streams the tasks mapped onto ``k``, for
``split`` the one task ``k`` was split from, for ``full`` every task. A query (``Workload.queries``: the
output operator's tasks and those of operators marked ``query=True``) needs its upstream closure (Def. 1);
after a failure, a query is failed when its closure holds a failed unit, and the recovery problem lists
those failed units per query with the query's priority (the explicit form of :mod:`ft_core.recovery.problem`).
Complexity: O(units x inputs) per closure.

    >>> from spark_jobs.workloads.smartcity import pipeline
    >>> units = UnitTopology(pipeline.bind(["p1=2", "p2=1"]))
    >>> units.unit_ids(), units.inputs("O3[0]")
    (['O1[0]', 'O1[1]', 'O2[0]', 'O3[0]'], {'O1': ['O1[0]', 'O1[1]'], 'O2': ['O2[0]']})
    >>> units.problem(["O1[1]", "O3[0]"], units.declared_cost(0.4))["queries"]["O3[0]"]
    {'priority': 4.0, 'partitions': ['O1[1]', 'O3[0]']}
"""

from __future__ import annotations

from typing import Any

from ft_core.errors import InputError
from ft_core.topology.document import split_task_id
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.keys import downstream_group


class UnitTopology:
    """The units of a workload (its tasks), their inputs, closures and queries."""

    def __init__(self, workload: Workload):
        self.workload = workload
        self._ids = workload.task_ids()

    def unit_ids(self) -> list[str]:
        """Every unit, upstream first."""
        return list(self._ids)

    def check(self, units: list[str], where: str) -> list[str]:
        """``units`` validated (InputError naming ``where`` and the bad id), in topological order."""
        for unit in units:
            if unit not in self._ids:
                raise InputError(f"{where}: unknown unit {unit!r} (units: {', '.join(self._ids)})")
        if len(set(units)) != len(units):
            dup = next(u for u in units if units.count(u) > 1)
            raise InputError(f"{where}: unit {dup!r} is listed twice")
        return sorted(units, key=self._ids.index)

    def inputs(self, unit: str) -> dict[str, list[str]]:
        """Per upstream operator, the units whose tables ``unit`` reads (empty for a source operator's unit)."""
        op, k = split_task_id(unit)
        down = self.workload.operator(op)
        out: dict[str, list[str]] = {}
        for up in self.workload.upstream(op):
            pu, pd = self.workload.parallelism(up), down.parallelism
            kind = self.workload.partitioning(up, op)
            if kind == "full":
                groups = range(pu)
            elif kind == "split":
                groups = [k * pu // pd]
            else:  # one_to_one, merge
                groups = [j for j in range(pu) if downstream_group(j, pu, pd) == k]
            out[up] = [f"{up}[{j}]" for j in groups]
        return out

    def upstream_units(self, unit: str) -> list[str]:
        """The upstream closure of ``unit`` without itself, upstream first."""
        seen: set[str] = set()
        frontier = [unit]
        while frontier:
            for ups in self.inputs(frontier.pop()).values():
                for up in ups:
                    if up not in seen:
                        seen.add(up)
                        frontier.append(up)
        return [u for u in self._ids if u in seen]

    def stream_sources(self, unit: str) -> list[str]:
        """The stream sources whose records reach ``unit`` (through its closure)."""
        ops = {split_task_id(u)[0] for u in [*self.upstream_units(unit), unit]}
        return [s.name for s in self.workload.stream_sources()
                if any(s.name in self.workload.operator(op).inputs for op in ops)]

    def queries(self) -> dict[str, float]:
        """Query id (its output unit) -> priority."""
        return self.workload.queries()

    def query_units(self, query: str) -> list[str]:
        """Def. 1: the query's partitions, its upstream closure and its output unit."""
        return [*self.upstream_units(query), query]

    def failed_queries(self, failed: list[str]) -> list[str]:
        """Queries whose closure holds a unit of ``failed``."""
        down = set(failed)
        return [q for q in self.queries() if down & set(self.query_units(q))]

    def declared_cost(self, per_unit: float) -> dict[str, float]:
        """Every unit costs ``per_unit`` of a node (a declared cost when none was measured)."""
        return {u: float(per_unit) for u in self._ids}

    def problem(self, failed: list[str], cost: dict[str, float]) -> dict[str, Any]:
        """The recovery problem after ``failed`` units fail: one query per output unit whose closure holds a
        failed unit, with its failed units (upstream first) and priority; ``cost`` in fractions of a node."""
        failed = self.check(list(failed), "failed")
        if not failed:
            raise InputError("failed: at least one failed unit is needed")
        missing = [u for u in failed if u not in cost]
        if missing:
            raise InputError(f"cost: no cost for failed unit {missing[0]!r}")
        queries = {}
        for q, priority in self.queries().items():
            parts = [u for u in self.query_units(q) if u in failed]
            if parts:
                queries[q] = {"priority": priority, "partitions": parts}
        return {"name": f"{self.workload.name}-units", "queries": queries,
                "cost": {u: round(cost[u], 6) for u in failed}}

    def topology_document(self) -> dict[str, Any]:
        """The topology document (units are its tasks) from the same workload as the Spark queries."""
        return self.workload.topology(name=f"{self.workload.name}-units").to_document()
