"""What one micro-batch ran: its plan's operators and, per stage, the records and host of every task.

Problem: a micro-batch's plan (:mod:`spark_jobs.discovery.plan_fragments`) names the stage of each
fragment; the stage's task list (``/stages/{id}/{attempt}/taskList``) says, per task (= partition
index), how many records it read and on which host it ran. Together they give each operator's
parallelism, per-task load and placement in that batch.

Algorithm: for every execution of the batch that ran jobs, cut its plan into operators; for each
fragment with a stage, read the stage's newest completed attempt (a skipped stage, e.g. a source
with no new data, contributes nothing) and its successful tasks. A task's *records* are what it
read: input records plus shuffle records read. A stage whose tasks read nothing that Spark counts
(a scan of an in-memory table, the collect behind a broadcast) counts what it wrote instead, and
failing that the rows its plan's leaf scans output, spread evenly over its tasks (the SQL metrics
have no per-task split). A fragment whose metrics name no stage (a plan without timing metrics) is
paired with the batch's only unclaimed stage when there is exactly one of each. Cost: two requests
per stage (attempts, task list) plus one per execution.

    >>> records_per_task([{"index": 0, "status": "SUCCESS", "host": "h1", "taskMetrics": {
    ...     "inputMetrics": {"recordsRead": 0}, "shuffleReadMetrics": {"recordsRead": 0},
    ...     "shuffleWriteMetrics": {"recordsWritten": 8}, "outputMetrics": {"recordsWritten": 0}}}], None)
    ({0: 8.0}, {0: 'h1'})
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_jobs.discovery.micro_batches import MicroBatch
from spark_jobs.discovery.plan_fragments import BatchPlan, batch_plan
from spark_jobs.discovery.rest_client import ApplicationApi


@dataclass
class StageRun:
    """One stage attempt as its task list shows it: records and host per task index."""

    stage_id: int
    num_tasks: int
    records: dict[int, float]
    hosts: dict[int, str]


@dataclass
class ObservedBatch:
    """A micro-batch's plans and the stage run of each of their fragments ``(plan index, fragment)``."""

    batch: MicroBatch
    plans: list[BatchPlan]
    runs: dict[tuple[int, int], StageRun] = field(default_factory=dict)

    def operator_runs(self) -> list[tuple[str, StageRun]]:
        """``(operator key, stage run)`` for every operator whose stage ran in this batch."""
        return [(op.key, self.runs[(p, op.fragment)]) for p, plan in enumerate(self.plans)
                for op in plan.operators if (p, op.fragment) in self.runs]

    def operator_keys(self) -> frozenset[str]:
        """The plan's shape: the labels of its operators (a no-data batch may be planned differently)."""
        return frozenset(op.key for plan in self.plans for op in plan.operators)

    def complete(self) -> bool:
        """Whether every fragment of the batch's plans ran a stage (none skipped for want of data)."""
        return all((p, op.fragment) in self.runs for p, plan in enumerate(self.plans) for op in plan.operators)

    def task_counts(self, plan_index: int) -> dict[int, int]:
        """``{fragment: numTasks}`` of one plan's fragments that ran."""
        return {f: run.num_tasks for (p, f), run in self.runs.items() if p == plan_index}


def observe_batch(rest: ApplicationApi, batch: MicroBatch) -> ObservedBatch:
    """Fetch the batch's plans and the task lists of the stages that ran them."""
    plans = [batch_plan(rest.execution(e)) for e in batch.plan_execution_ids]
    observed = ObservedBatch(batch, plans)
    stages = {(p, f): s for p, plan in enumerate(plans) for f, s in plan.fragment_stage.items()}
    unmapped = [(p, f) for p, plan in enumerate(plans) for f in {op.fragment for op in plan.operators}
                if (p, f) not in stages]
    if len(unmapped) == 1:
        claimed = set(stages.values())
        ran = [s for j in batch.job_ids for s in rest.job(j).get("stageIds", []) if s not in claimed]
        ran = [s for s in ran if _completed_attempt(rest, s) is not None]
        if len(ran) == 1:
            stages[unmapped[0]] = plans[unmapped[0][0]].fragment_stage[unmapped[0][1]] = ran[0]
    for (p, f), stage in stages.items():
        run = stage_run(rest, stage, plans[p].fragment_scan_rows.get(f))
        if run is not None:
            observed.runs[(p, f)] = run
    return observed


def _completed_attempt(rest: ApplicationApi, stage_id: int) -> dict | None:
    attempts = [a for a in rest.stage_attempts(stage_id) if a.get("status") == "COMPLETE"]
    return max(attempts, key=lambda a: a.get("attemptId", 0)) if attempts else None


def stage_run(rest: ApplicationApi, stage_id: int, scan_rows: int | None) -> StageRun | None:
    """The stage's newest completed attempt with per-task records and hosts; None when it did not run."""
    attempt = _completed_attempt(rest, stage_id)
    if attempt is None or not attempt.get("numTasks"):
        return None
    tasks = rest.tasks(stage_id, attempt.get("attemptId", 0), attempt["numTasks"])
    records, hosts = records_per_task(tasks, scan_rows)
    return StageRun(stage_id=stage_id, num_tasks=int(attempt["numTasks"]), records=records, hosts=hosts)


def records_per_task(tasks: list[dict], scan_rows: int | None) -> tuple[dict[int, float], dict[int, str]]:
    """Records per task index of a stage's successful tasks (read; else written; else the leaf scans'
    rows spread evenly) and the host each index ran on."""
    done = [t for t in tasks if t.get("status") == "SUCCESS"]
    read = {t["index"]: float(_metric(t, "inputMetrics", "recordsRead") + _metric(t, "shuffleReadMetrics", "recordsRead"))
            for t in done}
    if done and not any(read.values()):
        written = {t["index"]: float(_metric(t, "shuffleWriteMetrics", "recordsWritten")
                                     + _metric(t, "outputMetrics", "recordsWritten")) for t in done}
        if any(written.values()):
            read = written
        elif scan_rows:
            read = {i: scan_rows / len(read) for i in read}
    return read, {t["index"]: t.get("host", "") for t in done}


def _metric(task: dict, group: str, name: str) -> int:
    return int(((task.get("taskMetrics") or {}).get(group) or {}).get(name) or 0)
