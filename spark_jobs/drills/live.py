"""What a drill on a running job measures, and the context its steps share (:mod:`spark_jobs.drills.engine`
runs the steps).

:func:`measure` compares the primary's output with the failure-free reference over the input so far (the
pipeline's batch reference job, run locally), scores the replica's tentative output per failure window with the
pipeline's accuracy function, and times the recovery, in seconds from the fault, from file modification times
and the jobs' own progress records. :func:`query_failures` lists the streams' query failures since the fault.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from ft_core.errors import ExternalError
from spark_jobs.runtime.job_streams import JobDeployment


class DrillContext(BaseModel):
    """What the steps pass on (an XCom between Airflow tasks)."""

    job: str
    plan_id: int | None
    plan_tasks: list[str]
    predicted_output_fidelity: float
    predicted_accuracy: float | None = None  # the plan's estimate (issue 15), None: not estimated
    domain: str
    kill_driver: bool
    survivor_executors: int = 0  # the primary's executors outside ``domain`` before the fault: it may go on there
    free_cores_outside: int | None = None  # cores free outside ``domain`` before the fault (None: not known)
    replica_output: str | None
    replica_stream: str | None = None  # the replica's query name: its progress in the history store
    t_fail: float | None = None
    failure_end_ms: int | None = None
    verify_from_ms: int | None = None  # the first window the drill checks (None: every window of the input)
    killed: list[str] = []
    t_capacity: float | None = None
    backlog_ms: int | None = None
    engine_native: bool = False  # a cluster ftops did not start: the job loses its own executors (executor_faults)
    # an attached job (spark_jobs.attach): per query, its checkpoint and last batch committed before the fault
    queries_before: dict[str, dict] = {}
    steady_lag_s: float | None = None  # the lag the drill started from


def master_apps(ui: str) -> list[dict]:
    """The active applications a Spark master lists (its ``/json/``); ExternalError when it does not answer."""
    from spark_jobs.cluster.web_ui import master_state

    return master_state(ui).get("activeapps", [])


def running_app(master_ui: str, name: str, what: str, master: str) -> str:
    """The id of the running application ``name`` on a master; ExternalError naming ``what`` otherwise."""
    apps = {a["name"]: a["id"] for a in master_apps(master_ui) if a.get("state") == "RUNNING"}
    if name not in apps:
        raise ExternalError(f"{what} ({name}) is not running on {master}")
    return apps[name]


def delivered_until(output: Path, files: list[tuple[float, list[dict]]] | None = None) -> int:
    """The latest window end the run has written (0: none); ``files``: its output files, when already read."""
    from spark_jobs.drills.progress import watermark_of, window_files

    files = window_files(output) if files is None else files
    written = max((int(r["window_end"]) for _, rows in files for r in rows), default=0)
    return max(written, watermark_of(output) or 0)


def verification_start(files: list[tuple[float, list[dict]]], batches: int = 5) -> int | None:
    """The first window a drill checks: the earliest window start in the run's last ``batches`` output files
    (``spark_jobs.drills.progress.window_files``) before the fault. A query restarted from its checkpoint
    replays at most its uncommitted micro-batch, so every window a fault can lose or repeat starts there or
    later; None when the run has written nothing."""
    return min((int(r["window_start"]) for _, rows in files[-batches:] for r in rows), default=None)


def input_watermark(dep: JobDeployment) -> int | None:
    """The input's event-time watermark now (every source's newest event time, minus its watermark delay)."""
    from spark_jobs.pipeline.input_files import input_watermark as watermark_of_input

    return watermark_of_input(dep.workload(), dep.input)


def measure(dep: JobDeployment, ctx: DrillContext, work_dir: Path) -> dict:
    """The drill report (the fields of ``ftops drill run --json`` that a live job can measure); the
    batch reference runs in ``work_dir``."""
    from spark_jobs.drills.progress import first_batch_reaching, watermark_of
    from spark_jobs.pipeline.sink import closed_rows, compare_output
    from spark_jobs.runtime.reference import batch_reference

    workload = dep.workload()
    until = watermark_of(dep.primary_output) or 0
    since = ctx.verify_from_ms
    reference, _meta = batch_reference(workload, dep.input, Path(work_dir), since_ms=since,
                                       event_index=None if since is None else dep.path / "drills" / "event-index.json")
    expected = closed_rows(reference, until)
    comparison = compare_output(dep.primary_output, expected, until_ms=until, from_ms=since)
    replica = Path(ctx.replica_output) if ctx.replica_output else None
    per_window = failure_window_accuracy(workload, expected, replica, ctx.failure_end_ms, ctx.backlog_ms or 0)
    values = [per_window[w] for w in sorted(per_window)]
    caught = first_batch_reaching(dep.primary_output, ctx.backlog_ms, ctx.t_fail) if ctx.backlog_ms else None
    return {
        "workload": workload.name, "plan_tasks": ctx.plan_tasks, "predicted_output_fidelity": ctx.predicted_output_fidelity,
        "predicted_accuracy": ctx.predicted_accuracy,
        "tentative_accuracy": sum(values) / len(values) if values else None,
        "tentative_accuracy_per_window": values, "failure_window_starts_ms": [w[0] for w in sorted(per_window)],
        "time_to_first_tentative_s": first_tentative_s(replica, ctx.t_fail, ctx.failure_end_ms) if replica else None,
        "time_to_caught_up_s": None if caught is None else caught - ctx.t_fail,
        "lost_windows": len(comparison.lost_windows), "duplicated_windows": len(comparison.duplicated_windows),
        "output_equals_reference": comparison.equal, "windows_compared": comparison.expected_windows,
        "compared_from_ms": since, "compared_until_ms": until, "fail_domain": ctx.domain, "killed": ctx.killed, "kill_driver": ctx.kill_driver,
        "capacity_alive_s": None if ctx.t_capacity is None else ctx.t_capacity - ctx.t_fail,
        "query_failures": query_failures(dep, ctx),
    }


def query_failures(dep: JobDeployment, ctx: DrillContext) -> dict[str, list[dict]]:
    """Per stream, the times its query failed since the failure (started again from its checkpoint, or the
    failure that ended it: :mod:`spark_jobs.runtime.query_restarts`); a lost executor can fail a
    micro-batch on Spark 4.3."""
    from spark_jobs.runtime.query_restarts import failures_since

    return failures_since({"primary": dep.primary_output, "replica": Path(ctx.replica_output) if ctx.replica_output else None},
                          ctx.t_fail or 0.0)


def failure_window_accuracy(workload, expected: list[dict], replica_output: Path | None, failure_end_ms: int,
                            backlog_ms: int) -> dict:
    """Per failure window (the reference's windows ending after the primary's last output before the fault and no
    later than the input's watermark when capacity came back), the replica's accuracy with the pipeline's accuracy
    function; a window the replica lacks (or no replica) scores 0. One rule for every drill."""
    from spark_jobs.drills.progress import window_files
    from spark_jobs.pipeline.accuracy import window_of

    windows = sorted({window_of(r) for r in expected if failure_end_ms < r["window_end"] <= backlog_ms})
    tentative = [r for _, rows in window_files(replica_output) for r in rows] if replica_output else []
    return workload.accuracy(tentative, expected, windows)


def first_tentative_s(replica_output: Path, t_fail: float, failure_end_ms: int) -> float | None:
    """Seconds from the fault to the replica's first output file holding a window the primary had not delivered."""
    from spark_jobs.drills.progress import window_files

    times = [mtime for mtime, rows in window_files(replica_output)
             if mtime >= t_fail and any(r["window_end"] > failure_end_ms for r in rows)]
    return min(times) - t_fail if times else None
