"""The measured topology document of a running Structured Streaming query, from Spark's REST API alone.

Problem: plan for a job ftops has never seen (not written with its pipeline API, no ftops listener):
what would a rack failure do to it, which tasks deserve a replica? The planners take a topology
document (:mod:`ft_core.topology.document`); the job's driver UI (or a History Server) shows enough
to measure one.

Algorithm: choose the application (:mod:`~spark_jobs.discovery.rest_client`) and the query's last N
completed micro-batches (:mod:`~spark_jobs.discovery.micro_batches`); cut each batch's plan into
operators and read its stages' task lists (:mod:`~spark_jobs.discovery.stage_tasks`); merge the
batches' operators by plan position (:mod:`~spark_jobs.discovery.stage_operators`); rates are records
read per second per task over the window, hosts where each task ran last
(:mod:`~spark_jobs.discovery.task_rates`). Spark may plan micro-batches differently (a batch with no
new input reads an empty local relation; a small batch may be broadcast): the operators are those of
the newest batch that ran every stage of its plan (looking back before the window when none did), and
the batches planned like it give parallelism and links; the others count only for the operators they
share. Batches are read four at a time. Cost: about 2 requests per stage of each batch read, so
O(N * stages) requests of a few milliseconds each.

What the REST API cannot tell, and the document therefore does not claim: key groups (which keys a
task holds: Spark hashes keys to partitions and never reports the mapping), per-pair substream rates
of a shuffle (only per-task totals are reported, so a ``full`` stream's rate is split evenly), which
outputs are queries with which priority (every sink task weighs by its rate), failure domains (the
hosts are reported beside the document; mapping hosts to racks is the user's), and operators inside a
stage (Spark runs them as one task, so they fail together and are one operator here).

    >>> from spark_jobs.discovery.stage_operators import QueryOperator
    >>> ops = [QueryOperator("a", "source", False, [], name="source", parallelism=2),
    ...        QueryOperator("b", "aggregate", False, [], name="aggregate", parallelism=3, inputs=[("source", "full")])]
    >>> doc = topology_document("demo", ops, {"source[0]": 1.5})
    >>> [(o["name"], o["parallelism"]) for o in doc["operators"]], doc["streams"], doc["tasks"]["source[0]"]
    ([('source', 2), ('aggregate', 3)], [{'from': 'source', 'to': 'aggregate', 'partitioning': 'full'}], {'rate': 1.5})
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, Field

from ft_core.errors import ExternalError, InputError
from ft_core.topology.document import parse_topology
from spark_jobs.discovery.micro_batches import last_completed, query_batches
from spark_jobs.discovery.rest_client import ApplicationApi, SparkRestApi, select_application
from spark_jobs.discovery.stage_operators import QueryOperator, merge_operators
from spark_jobs.discovery.stage_tasks import ObservedBatch, observe_batch
from spark_jobs.discovery.task_rates import rate_window, task_hosts, task_rates

DEFAULT_LAST_BATCHES = 10
CONCURRENT_REQUESTS = 4


class DiscoveredOperator(BaseModel):
    name: str
    kind: str
    parallelism: int
    input_model: str
    inputs: list[tuple[str, str]] = Field(description="(upstream operator, partitioning)")
    stage_ids: list[int] = Field(description="the Spark stages it was in the batches read")
    plan_nodes: list[str] = Field(description="its SQL plan nodes ('read:'/'write:' an exchange's sides)")


class DiscoveredTopology(BaseModel):
    """A discovery: where from, which batches, the operators as found, the document and the hosts."""

    spark_ui: str
    app_id: str
    app_name: str
    query: str
    query_id: str
    run_id: str
    batches: list[int] = Field(description="the micro-batches whose records the rates count")
    span_s: float = Field(description="seconds over which those records arrived")
    operators: list[DiscoveredOperator]
    hosts: dict[str, str] = Field(description="task -> host it ran on last (a placement document: "
                                              "`ftops simulate --domains`)")
    topology: dict[str, Any]

    def source(self) -> str:
        first, last = self.batches[0], self.batches[-1]
        return (f"Spark UI {self.spark_ui}, application {self.app_id}, query {self.query}: "
                f"{len(self.batches)} micro-batch(es) ({first}..{last}) over {self.span_s:.1f} s")

    def profile(self, app_id_given: str | None = None, query_given: str | None = None) -> dict[str, Any]:
        """The ``rates`` profile stored for a discovered job; ``rediscover`` holds the arguments that find
        it again (the application id only when it was given: a restarted driver gets a new one)."""
        return {"rates": {t: v["rate"] for t, v in self.topology["tasks"].items()}, "source": self.source(),
                "spark_ui": self.spark_ui, "app_id": self.app_id, "query": self.query, "batches": self.batches,
                "span_s": self.span_s, "hosts": self.hosts,
                "rediscover": {"spark_ui": self.spark_ui, "app_id": app_id_given, "query": query_given}}


def discover(api: SparkRestApi, app_id: str | None = None, query: str | None = None,
             last_batches: int = DEFAULT_LAST_BATCHES, name: str | None = None) -> DiscoveredTopology:
    """Discover the query's topology through ``api``; InputError or ExternalError (one line) when the
    UI does not answer, shows no streaming query, or the query has no completed micro-batch."""
    if last_batches < 1:
        raise InputError(f"--last-batches: must be at least 1, got {last_batches}")
    app = select_application(api, app_id)
    rest = ApplicationApi(api, app)
    batches = query_batches(rest.executions(), app.id, query)
    window, before = last_completed(batches, last_batches)
    rated, span_s = rate_window(window, before)
    with ThreadPoolExecutor(max_workers=CONCURRENT_REQUESTS) as pool:  # the UI answers slowly under load
        observed = list(pool.map(lambda b: observe_batch(rest, b), window))
    shaped = _shaped_like_newest_complete(rest, observed, len(window), max(DEFAULT_LAST_BATCHES, last_batches),
                                          [b for b in batches if b.completed and b.batch_id < window[0].batch_id])
    operators = merge_operators([(plan, o.task_counts(p)) for o in shaped for p, plan in enumerate(o.plans)])
    rated_ids = {b.batch_id for b in rated}
    rates = task_rates(operators, [o for o in observed if o.batch.batch_id in rated_ids], span_s)
    first = window[0]
    doc = topology_document(name or f"{app.name}: {first.query}", operators, rates)
    return DiscoveredTopology(
        spark_ui=api.api.removesuffix("/api/v1"), app_id=app.id, app_name=app.name, query=first.query,
        query_id=first.query_id, run_id=first.run_id, batches=sorted(rated_ids), span_s=round(span_s, 3),
        operators=[DiscoveredOperator.model_validate(op, from_attributes=True) for op in operators],
        hosts=task_hosts(operators, shaped + observed), topology=doc)


def _shaped_like_newest_complete(rest: ApplicationApi, observed: list[ObservedBatch], window: int, limit: int,
                                 older: list) -> list[ObservedBatch]:
    """The batches whose plan has the shape of the newest batch that ran every stage of its plan (looking
    back up to ``limit`` older batches when none of the window did): they define the operators."""
    complete = [o for o in observed if o.complete()]
    looked = 0
    for batch in reversed(older[-limit:] if not complete else []):
        looked += 1
        try:
            found = observe_batch(rest, batch)
        except ExternalError:  # an old batch whose stages the UI no longer retains (spark.ui.retainedStages)
            continue
        if found.complete():
            complete = [found]
            break
    if not complete:
        raise InputError(f"no completed micro-batch with data yet: none of the last {window + looked} completed "
                         "micro-batch(es) ran every stage of the query (skipped stages: no new input); try again "
                         "once data flows")
    shape = complete[-1].operator_keys()
    return [o for o in sorted({id(o): o for o in [*observed, *complete]}.values(), key=lambda o: o.batch.batch_id)
            if o.operator_keys() == shape]


def topology_document(name: str, operators: list[QueryOperator], rates: dict[str, float]) -> dict[str, Any]:
    """The validated topology document (ft_core's format) of the merged operators."""
    doc = {"name": name,
           "operators": [{"name": op.name, "parallelism": op.parallelism, "input_model": op.input_model} for op in operators],
           "streams": [{"from": up, "to": op.name, "partitioning": p} for op in operators for up, p in op.inputs],
           "tasks": {t: {"rate": r} for t, r in rates.items()}}
    return parse_topology(doc).to_document()
