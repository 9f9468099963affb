"""Task rates and task hosts of a discovered query, from its last N micro-batches' task lists.

Problem: the topology's per-task rates are records per second. A micro-batch processes the records
that arrived since the previous batch started, so N batches' records arrived between the start of
the batch before them and the start of the last one.

Algorithm: rate of task ``op[k]`` = records task index k of op's stage read, summed over the window's
batches, divided by the window's span: from the start of the batch just before the window (when the
UI still retains it) to the start of the window's last batch. Without that batch, the window's first
batch serves as the start and its own records are left out; with a single batch in all, its records
are divided by its own duration (a processing rate, the only time the UI shows). A task index an
operator's stage did not have in a batch (fewer partitions) adds nothing. The host of a task is
where its index ran in the newest batch that ran it. Linear in the tasks of the window's stages.

    >>> from spark_jobs.discovery.micro_batches import MicroBatch
    >>> b = [MicroBatch("q", "i", "r", k, start_ms=1000 * k, end_ms=1000 * k + 300) for k in range(4)]
    >>> [x.batch_id for x in rate_window(b[1:], b[0])[0]], rate_window(b[1:], b[0])[1]
    ([1, 2, 3], 3.0)
    >>> [x.batch_id for x in rate_window(b[1:], None)[0]], rate_window(b[1:], None)[1]
    ([2, 3], 2.0)
"""

from __future__ import annotations

from spark_jobs.discovery.micro_batches import MicroBatch
from spark_jobs.discovery.stage_operators import QueryOperator
from spark_jobs.discovery.stage_tasks import ObservedBatch

MIN_SPAN_S = 0.001


def rate_window(window: list[MicroBatch], before: MicroBatch | None) -> tuple[list[MicroBatch], float]:
    """The batches whose records count and the seconds over which they arrived."""
    if before is not None:
        return window, max(MIN_SPAN_S, (window[-1].start_ms - before.start_ms) / 1000)
    if len(window) >= 2:
        return window[1:], max(MIN_SPAN_S, (window[-1].start_ms - window[0].start_ms) / 1000)
    return window, max(MIN_SPAN_S, (window[0].end_ms - window[0].start_ms) / 1000)


def task_rates(operators: list[QueryOperator], rated: list[ObservedBatch], span_s: float) -> dict[str, float]:
    """Records per second of every task ``name[k]`` (0 for a task index that read nothing)."""
    totals: dict[tuple[str, int], float] = {}
    for observed in rated:
        for key, run in observed.operator_runs():
            for index, records in run.records.items():
                totals[(key, index)] = totals.get((key, index), 0.0) + records
    return {f"{op.name}[{k}]": round(totals.get((op.key, k), 0.0) / span_s, 3)
            for op in operators for k in range(op.parallelism)}


def task_hosts(operators: list[QueryOperator], observed: list[ObservedBatch]) -> dict[str, str]:
    """The host each task ran on in the newest of the batches (given oldest first) that ran it."""
    hosts: dict[tuple[str, int], str] = {}
    for batch in sorted(observed, key=lambda o: o.batch.batch_id):
        for key, run in batch.operator_runs():
            hosts.update({(key, index): host for index, host in run.hosts.items() if host})
    return {f"{op.name}[{k}]": hosts[(op.key, k)] for op in operators for k in range(op.parallelism) if (op.key, k) in hosts}
