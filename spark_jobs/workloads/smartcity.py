"""The smart-city pipeline of paper 003's Fig. 1 on the pipeline API: the incidents sample without its last
step, with its three operators as queries of different priority, for recovery units and staged recovery.

Users on road segments report their locations and the incidents they see (the incidents sample's sources
and seeded input, :mod:`spark_jobs.workloads.incidents`):

- ``O1`` (key ``segment``, ``p1`` tasks): average speed per segment and window (speed summed in
  hundredths, exact); a query of priority ``priority_speed`` (a speed dashboard);
- ``O2`` (key ``segment``, ``p2`` tasks): distinct incidents per segment and window; a query of priority
  ``priority_incidents``;
- ``O3`` (key ``segment``, ``p2`` tasks, a join): incidents on jammed segments (window average speed
  below ``jam_speed``), the output; priority ``priority_jams``.

Every task of the three operators is a query (paper 003, Def. 1): ``O3[h]`` shares the ``O1`` and ``O2``
tasks of its upstream closure with the speed and incident queries, which is what makes the recovery
order matter. Accuracy: the overlap of the jam incidents per window.

    >>> w = pipeline.bind(["p1=2", "p2=1"])
    >>> w.task_ids(), w.queries()
    (['O1[0]', 'O1[1]', 'O2[0]', 'O3[0]'], {'O1[0]': 1.0, 'O1[1]': 1.0, 'O2[0]': 2.0, 'O3[0]': 4.0})
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field

from spark_jobs.pipeline import Operator, Output, Pipeline, SampleInput, SetOverlap
from spark_jobs.workloads import incidents


class SmartCityParams(incidents.IncidentsParams):
    priority_speed: float = Field(default=1.0, ge=0, description="priority of each O1 (speed) query")
    priority_incidents: float = Field(default=2.0, ge=0, description="priority of each O2 (incidents) query")
    priority_jams: float = Field(default=4.0, ge=0, description="priority of each O3 (jams) query")


def _sources(p: SmartCityParams):
    return incidents.pipeline.bind(p).sources()


def _operators(p: SmartCityParams) -> list[Operator]:
    """The incidents pipeline's O1, O2 and O3 (its transforms, keys and parallelisms), as queries."""
    ops = {op.name: op for op in incidents.pipeline.bind(p).operators()}
    return [replace(ops["O1"], query=True, priority=p.priority_speed),
            replace(ops["O2"], query=True, priority=p.priority_incidents),
            replace(ops["O3"], query=True, priority=p.priority_jams)]


pipeline = Pipeline(
    "smartcity", params=SmartCityParams, sources=_sources, operators=_operators,
    output=Output(window="window", key=("segment", "incident")), accuracy=SetOverlap(columns=("incident",)),
    sample_input=SampleInput(records=incidents.records, file_s=lambda p: p.file_s, start_ms=lambda p: p.start_ms,
                             expected_rates=incidents.expected_rates),
    description="paper 003's smart city: segment speeds, incidents and jams, each a query with its priority")
