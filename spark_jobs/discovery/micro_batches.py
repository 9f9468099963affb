"""The micro-batches of one streaming query, recognised among an application's SQL executions.

Problem: Spark's REST API has no Structured Streaming endpoint (``/streaming`` is for DStreams), but
every SQL execution a micro-batch runs is described as ``<query name>\\nid = <query id>\\nrunId =
<run id>\\nbatch = <batch id>``. From the list of executions, find the streaming queries, the one to
discover, and its last N completed micro-batches.

Algorithm: parse each execution's description; group executions by (run id, batch id); a batch is
*completed* when all of its executions completed, at least one ran a Spark job and none failed. The
query is the one named by ``--query`` (name or id), else the only one; its newest run (a restarted
query gets a new run id) is discovered. A batch starts at its first execution's submission and ends
at its last execution's completion. Linear in the number of executions.

    >>> execs = [{"id": 0, "status": "COMPLETED", "description": "q\\nid = a\\nrunId = r\\nbatch = 0",
    ...           "submissionTime": "2026-01-01T00:00:00.000GMT", "duration": 500, "successJobIds": [0]},
    ...          {"id": 1, "status": "COMPLETED", "description": "count at x.py:1", "successJobIds": [1]}]
    >>> [(b.query, b.batch_id, b.start_ms % 1000, b.end_ms - b.start_ms) for b in streaming_batches(execs)]
    [('q', 0, 0, 500)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from ft_core.errors import InputError

_DESCRIPTION = re.compile(r"^(?:(?P<name>.*)\n)?id = (?P<id>\S+)\nrunId = (?P<run>\S+)\nbatch = (?P<batch>\d+)\s*$",
                          re.DOTALL)


@dataclass
class MicroBatch:
    """One micro-batch of a query run: its executions (ids), the jobs they ran, start and end (epoch ms)."""

    query: str
    query_id: str
    run_id: str
    batch_id: int
    start_ms: int
    end_ms: int
    execution_ids: list[int] = field(default_factory=list)
    plan_execution_ids: list[int] = field(default_factory=list)  # those that ran jobs (and hold the plan)
    job_ids: list[int] = field(default_factory=list)
    completed: bool = True


def spark_time_ms(text: str) -> int:
    """``2026-11-24T21:20:49.582GMT`` (the REST API's timestamps) as epoch milliseconds."""
    return int(datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000)


def streaming_batches(executions: list[dict]) -> list[MicroBatch]:
    """Every micro-batch the executions belong to, oldest first (by run, then batch id)."""
    batches: dict[tuple[str, int], MicroBatch] = {}
    for e in sorted(executions, key=lambda e: e["id"]):
        match = _DESCRIPTION.match(e.get("description") or "")
        if match is None:
            continue
        start = spark_time_ms(e["submissionTime"]) if e.get("submissionTime") else 0
        end = start + int(e.get("duration") or 0)
        key = (match["run"], int(match["batch"]))
        batch = batches.get(key)
        if batch is None:
            batch = batches[key] = MicroBatch(query=(match["name"] or match["id"]).strip(), query_id=match["id"],
                                              run_id=match["run"], batch_id=int(match["batch"]), start_ms=start, end_ms=end)
        batch.start_ms, batch.end_ms = min(batch.start_ms, start), max(batch.end_ms, end)
        batch.execution_ids.append(e["id"])
        if e.get("successJobIds"):
            batch.plan_execution_ids.append(e["id"])
            batch.job_ids.extend(e["successJobIds"])
        if e.get("status") != "COMPLETED" or e.get("failedJobIds") or e.get("runningJobIds"):
            batch.completed = False
    for batch in batches.values():
        batch.completed = batch.completed and bool(batch.job_ids)
    return list(batches.values())


def query_batches(executions: list[dict], app: str, query: str | None) -> list[MicroBatch]:
    """The micro-batches of the query to discover (its newest run), oldest first.

    InputError when the application shows no micro-batch (not a streaming application, or its first
    micro-batch has not started), when several queries run and ``query`` does not choose one, or
    when no micro-batch of the query has completed yet."""
    batches = streaming_batches(executions)
    if not batches:
        ran = (f"ran {len(executions)} SQL execution(s), none of a streaming query" if executions
               else "has run no SQL execution yet")
        raise InputError(f"application {app} is not a Structured Streaming application: it {ran} "
                         "(a micro-batch query's executions are described 'name / id = / runId = / batch =')")
    queries = {b.query_id: b.query for b in batches}
    if query is not None:
        chosen = [q for q, name in queries.items() if query in (q, name)]
        if not chosen:
            raise InputError(f"--query: application {app} has no streaming query {query!r} (its queries: "
                             f"{', '.join(sorted(set(queries.values())))})")
        query_id = chosen[0]
    elif len(queries) > 1:
        raise InputError(f"--query: application {app} runs {len(queries)} streaming queries "
                         f"({', '.join(sorted(set(queries.values())))}): choose one")
    else:
        query_id = next(iter(queries))
    mine = [b for b in batches if b.query_id == query_id]
    newest_run = max(mine, key=lambda b: max(b.execution_ids)).run_id
    mine = sorted((b for b in mine if b.run_id == newest_run), key=lambda b: b.batch_id)
    if not any(b.completed for b in mine):
        running = ", ".join(str(b.batch_id) for b in mine)
        raise InputError(f"application {app}: query {queries[query_id]} has no completed micro-batch yet "
                         f"(batch {running} still running): try again after its first micro-batch")
    return mine


def last_completed(batches: list[MicroBatch], count: int) -> tuple[list[MicroBatch], MicroBatch | None]:
    """The last ``count`` completed batches (oldest first) and the batch just before them, if retained
    (its start is when the window's first records began to arrive)."""
    done = [b for b in batches if b.completed]
    window = done[-count:]
    before = [b for b in done if b.batch_id < window[0].batch_id]
    return window, (before[-1] if before and before[-1].batch_id == window[0].batch_id - 1 else None)
