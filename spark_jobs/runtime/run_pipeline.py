"""The spark-submit entry point of a pipeline's roles: primary, replica and batch reference.

    python -m spark_jobs.runtime.run_pipeline --pipeline REF --role primary|replica|reference \\
        --input DIR --output DIR --checkpoint DIR [--plan PLAN.json] [--trigger-s N | --available-now] \\
        [--param k=v ...] [--duration-s S] [--master URL] [--metrics FILE]

``REF`` names the pipeline (:mod:`spark_jobs.pipeline.loading`: ``module:attribute``, a ``.py`` file, or a
sample's name).

- ``primary``: the streaming job over ``--input`` (each file source in its sub-folder), event-time
  windows with watermarks in append mode, one output file per micro-batch in ``--output``
  (:mod:`spark_jobs.pipeline.sink`), per-task counts per micro-batch in ``--metrics`` (default
  ``<output>/_metrics/metrics.jsonl``). The checkpoint interval is ``--trigger-s`` (processingTime)
  plus ``--min-deltas-for-snapshot`` (state-store snapshots).
- ``replica``: the same job restricted to ``--plan``'s tasks (``ftops plan replication --json``),
  writing tentative outputs to its own ``--output``.
- ``reference``: the batch job over the same input (:mod:`spark_jobs.runtime.reference`):
  ``<output>/reference.jsonl`` with every window (with ``--since-ms``: every window from then on) and
  ``<output>/reference.meta.json`` with the watermark a streaming run reaches after reading all of the
  input (``closed_until_ms``: windows ending by then are final in a streaming run).

Every run writes ``<output>/_run.json`` (pipeline, role, parameters, topology, plan tasks, pid,
application id), so a drill can find what ran where. Invalid arguments (an unknown parameter, a plan
task the topology does not have) print one line and exit 2 before Spark starts. SIGTERM or SIGINT stop
the query between micro-batches and exit 0. A query that fails (an executor lost mid-batch can fail it
on Spark 4.3) starts again from its checkpoint, at most ``--max-restarts`` times per
``--restart-window-s`` (:mod:`spark_jobs.runtime.query_restarts`); each restart is listed in ``_run.json``.
With ``FTOPS_DATABASE_URL`` in its environment, a streaming role also writes each micro-batch's progress to
the history store (:mod:`spark_jobs.runtime.progress_store`), where the triggers read it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ft_core.errors import FtopsError, InputError
from ft_core.input.documents import read_document
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.loading import load_workload, pipeline_label
from spark_jobs.pipeline.sources import FileSource
from spark_jobs.runtime.atomic_json import write_json

ROLES = ("primary", "replica", "reference")


@dataclass
class JobConfig:
    pipeline: str
    role: str
    input: Path
    output: Path
    checkpoint: Path | None = None
    plan: Path | None = None
    params: list[str] = field(default_factory=list)
    trigger_s: float = 2.0
    available_now: bool = False
    duration_s: float | None = None
    master: str | None = None
    metrics: Path | None = None
    shuffle_partitions: int = 2
    min_deltas_for_snapshot: int | None = None
    max_files_per_trigger: int | None = None
    query_name: str | None = None
    live_redundancy: bool = False
    max_restarts: int = 3
    restart_window_s: float = 600.0
    since_ms: int | None = None
    event_index: Path | None = None

    @property
    def metrics_path(self) -> Path:
        return self.metrics or self.output / "_metrics" / "metrics.jsonl"

    @property
    def name(self) -> str:
        return self.query_name or f"ftops-{pipeline_label(self.pipeline)}-{self.role}"


def prepare(config: JobConfig) -> tuple[Workload, frozenset[str] | None]:
    """Validate everything that can be checked without Spark."""
    if config.role not in ROLES:
        raise InputError(f"--role: expected one of {', '.join(ROLES)}, got {config.role!r}")
    workload = load_workload(config.pipeline, config.params)
    tasks = None
    if config.role == "replica":
        if config.plan is None:
            raise InputError("--plan: the replica role needs a replication plan (ftops plan replication --json)")
        tasks = load_plan_tasks(config.plan, workload)
    elif config.role == "reference" and not all(s.replayable for s in workload.stream_sources()):
        raise InputError(f"--role reference: pipeline {workload.name} reads a source that cannot be replayed "
                         "(the rate source), so it has no batch reference")
    _check_since(config, workload)
    if config.role != "replica" and config.plan is not None:
        raise InputError(f"--plan: only the replica role takes a plan (role is {config.role!r})")
    if config.role != "reference" and config.checkpoint is None:
        raise InputError("--checkpoint: a streaming role needs a checkpoint folder")
    if config.max_restarts < 0 or config.restart_window_s <= 0:
        raise InputError("--max-restarts must be >= 0 and --restart-window-s positive")
    if config.trigger_s <= 0 and not config.available_now:
        raise InputError("--trigger-s: must be positive (or use --available-now)")
    return workload, tasks


def _check_since(config: JobConfig, workload: Workload) -> None:
    """A reference of the windows since a moment needs the index, a window-local pipeline and file sources."""
    if config.since_ms is None and config.event_index is None:
        return
    if config.since_ms is None or config.event_index is None or config.role != "reference":
        raise InputError("--since-ms and --event-index go together, with the reference role only")
    if not workload.pipeline.output.window_local:
        raise InputError(f"--since-ms: pipeline {workload.name} is not window-local (Output(window_local=False)); "
                         "its reference reads the whole input")
    if not all(isinstance(s, FileSource) for s in workload.stream_sources()):
        raise InputError("--since-ms: every stream source must be a file source (the index is of files)")


def load_plan_tasks(path: str | Path, workload: Workload) -> frozenset[str]:
    """The tasks of a replication plan (``ftops plan replication --json``) checked against the
    pipeline's topology; a task it does not have is an InputError naming it."""
    path = Path(path)
    doc = read_document(path, "--plan")
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
        raise InputError(f"--plan: {str(path)!r} has no 'tasks' list of task ids")
    return workload.check_tasks(tasks)



def make_session(config: JobConfig):
    from pyspark.sql import SparkSession

    from spark_jobs.runtime.driver_address import use_driver_address

    use_driver_address()
    builder = SparkSession.builder.appName(config.name)
    master = config.master or (None if "PYSPARK_GATEWAY_PORT" in os.environ else "local[2]")
    if master:
        builder = builder.master(master)
    return builder.getOrCreate()


def configure(spark, config: JobConfig) -> None:
    spark.conf.set("spark.sql.shuffle.partitions", str(config.shuffle_partitions))
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    if config.min_deltas_for_snapshot is not None:
        spark.conf.set("spark.sql.streaming.stateStore.minDeltasForSnapshot", str(config.min_deltas_for_snapshot))


def write_descriptor(config: JobConfig, workload: Workload, tasks: frozenset[str] | None, spark) -> None:
    config.output.mkdir(parents=True, exist_ok=True)
    doc = {
        "pipeline": workload.ref, "name": workload.name, "role": config.role, "params": workload.params_dict(),
        "topology": workload.topology().to_document(), "plan_tasks": sorted(tasks) if tasks is not None else None,
        "input": str(config.input), "output": str(config.output),
        "checkpoint": str(config.checkpoint) if config.checkpoint else None,
        "metrics": str(config.metrics_path), "query_name": config.name,
        "trigger_s": None if config.available_now else config.trigger_s,
        "pid": os.getpid(), "app_id": spark.sparkContext.applicationId, "ui": spark.sparkContext.uiWebUrl,
        "master": spark.sparkContext.master, "started_at": time.time(),
    }
    write_json(config.output / "_run.json", doc)


def run_stream(spark, workload: Workload, tasks: frozenset[str] | None, config: JobConfig,
               stop_event: threading.Event | None = None) -> dict[str, Any]:
    """Run the streaming query until it finishes (available-now), ``duration_s`` passes or
    ``stop_event`` is set; returns a summary."""
    from spark_jobs.pipeline.frames import build_frame, read_sources
    from spark_jobs.pipeline.metrics import TaskMetricsListener
    from spark_jobs.pipeline.sink import BatchWriter
    from spark_jobs.runtime.executor_faults import ExecutorFaultWatcher
    from spark_jobs.pipeline.input_files import input_watermark
    from spark_jobs.runtime.progress_store import store_listener
    from spark_jobs.runtime.query_restarts import RestartPolicy, error_summary, record_failure, record_restart

    stop_event = stop_event or threading.Event()
    sources = read_sources(workload, spark, config.input, streaming=True,
                           max_files_per_trigger=config.max_files_per_trigger)
    plan = build_frame(workload, sources, tasks, observe=True)
    listener = TaskMetricsListener(config.metrics_path, workload.task_ids(), config.name,
                                   {"role": config.role, "pipeline": workload.name, "app_id": spark.sparkContext.applicationId})
    spark.streams.addListener(listener)
    sink = BatchWriter(config.output)
    live = _live_redundancy(spark, config)
    writer = (plan.writeStream.outputMode("append").queryName(config.name)
              .foreachBatch(sink)
              .option("checkpointLocation", str(config.checkpoint)))
    writer = writer.trigger(availableNow=True) if config.available_now else \
        writer.trigger(processingTime=f"{int(round(config.trigger_s * 1000))} milliseconds")
    faults = ExecutorFaultWatcher(spark, config.output).start()  # drills on clusters ftops did not start
    restarts = RestartPolicy(config.max_restarts, config.restart_window_s)
    deadline = None if config.duration_s is None else time.monotonic() + config.duration_s
    reporter = store_listener(spark, config.name, role=config.role, output_rows=sink.rows_of,
                              checkpoint=config.checkpoint, input_dir=config.input,
                              input_watermark=lambda: input_watermark(workload, config.input))
    query = None
    try:
        while True:
            query = writer.start()
            _await(query, stop_event, deadline)
            error = query.exception()
            if error is None:
                break
            why = _no_restart(config, restarts, stop_event, deadline)
            if why is not None:
                record_failure(config.output, error, why)
                raise RuntimeError(f"streaming query {config.name} failed ({why}): {error_summary(error)}") from error
            count = record_restart(config.output, error)
            print(f"run_pipeline: streaming query {config.name} failed ({error_summary(error)}); started again from "
                  f"its checkpoint (restart {count})", file=sys.stderr, flush=True)
        progress = query.lastProgress
    finally:
        if query is not None and query.isActive:
            query.stop()
        last = query.lastProgress if query is not None else None
        listener.wait_heard(last.batchId if last else None, timeout_s=5.0)  # the bus delivers it after the stop
        spark.streams.removeListener(listener)
        if reporter is not None:
            reporter.close(last_batch=last.batchId if last else None)
            spark.streams.removeListener(reporter)
        faults.stop()
        if live is not None:
            spark.streams.removeListener(live)
    return {"query": config.name, "last_batch": progress.batchId if progress else None,
            "watermark": (progress.eventTime or {}).get("watermark") if progress else None}


def _no_restart(config: JobConfig, restarts, stop_event: threading.Event, deadline: float | None) -> str | None:
    """Why a failed query is not started again (None: it is, after the policy's delay)."""
    over = lambda: deadline is not None and time.monotonic() >= deadline  # noqa: E731
    if stop_event.is_set() or over():
        return "the run was ending"
    if not restarts.allow():
        return f"{config.max_restarts + 1} times within {config.restart_window_s:g} s, --max-restarts " \
               f"{config.max_restarts}" if config.max_restarts else "--max-restarts 0"
    delay = restarts.delay_s if deadline is None else min(restarts.delay_s, max(0.0, deadline - time.monotonic()))
    return "the run was ending" if stop_event.wait(delay) or over() else None


def _await(query, stop_event: threading.Event, deadline: float | None) -> None:
    """Until the query ends by itself (finished or failed), ``stop_event`` is set or ``deadline`` passes."""
    from pyspark.errors import StreamingQueryException

    while query.isActive:
        if stop_event.is_set() or (deadline is not None and time.monotonic() >= deadline):
            _stop_between_batches(query)
            return
        try:
            query.awaitTermination(0.25)
        except StreamingQueryException:  # the caller reads it from query.exception()
            return


def _live_redundancy(spark, config: JobConfig):
    """With ``--live-redundancy``: the listener that applies the level file after every micro-batch."""
    if not config.live_redundancy:
        return None
    from spark_jobs.redundancy.live import LiveRedundancyListener

    live = LiveRedundancyListener(spark, config.output, config.name)
    live.apply(after_batch=-1)
    spark.streams.addListener(live)
    return live


def _stop_between_batches(query, wait_s: float = 15.0) -> None:
    """Stop when no trigger is running (a stop inside a foreachBatch logs harmless noise)."""
    from spark_jobs.runtime.waiting import wait_while

    wait_while(lambda: query.status.get("isTriggerActive"), timeout_s=wait_s, interval_s=0.05)
    query.stop()


def run(config: JobConfig, spark=None, stop_event: threading.Event | None = None) -> dict[str, Any]:
    """Validate, start (or reuse) a Spark session, run the role; returns a summary."""
    workload, tasks = prepare(config)
    own = spark is None
    spark = spark or make_session(config)
    try:
        configure(spark, config)
        write_descriptor(config, workload, tasks, spark)
        if config.role == "reference":
            from spark_jobs.runtime.reference import run_reference

            return run_reference(spark, workload, config.input, config.output, config.since_ms, config.event_index)
        return run_stream(spark, workload, tasks, config, stop_event)
    finally:
        if own:
            spark.stop()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_pipeline", description=__doc__.split("\n\n")[0])
    p.add_argument("--pipeline", required=True, help="module:attribute, a .py file, or a sample's name")
    p.add_argument("--role", required=True, choices=ROLES)
    p.add_argument("--input", required=True, type=Path)
    p.add_argument("--output", required=True, type=Path)
    p.add_argument("--checkpoint", type=Path)
    p.add_argument("--plan", type=Path, help="replica role: the replication plan JSON")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="pipeline parameter (repeatable)")
    p.add_argument("--trigger-s", type=float, default=2.0, help="micro-batch (and checkpoint) interval (default 2)")
    p.add_argument("--available-now", action="store_true", help="process the input present, then stop")
    p.add_argument("--duration-s", type=float, help="stop after this many seconds")
    p.add_argument("--master", help="Spark master (default: spark-submit's, else local[2])")
    p.add_argument("--metrics", type=Path, help="per-batch task metrics (default <output>/_metrics/metrics.jsonl)")
    p.add_argument("--shuffle-partitions", type=int, default=2)
    p.add_argument("--min-deltas-for-snapshot", type=int, help="spark.sql.streaming.stateStore.minDeltasForSnapshot")
    p.add_argument("--max-files-per-trigger", type=int)
    p.add_argument("--query-name")
    p.add_argument("--live-redundancy", action="store_true",
                   help="apply <output>/_redundancy/level.json after every micro-batch (spark_jobs.redundancy.live)")
    p.add_argument("--max-restarts", type=int, default=3,
                   help="start a failed query again from its checkpoint at most this often per window (default 3; "
                        "0: a failure ends the run)")
    p.add_argument("--restart-window-s", type=float, default=600.0, help="the restart window (default 600)")
    p.add_argument("--since-ms", type=int, help="reference role: only the windows starting at or after this event time "
                   "(a window-local pipeline); needs --event-index")
    p.add_argument("--event-index", type=Path, help="reference role: the per-file event-time index to read and update")
    return p


def config_from_args(args: argparse.Namespace) -> JobConfig:
    return JobConfig(pipeline=args.pipeline, role=args.role, input=args.input, output=args.output,
                     checkpoint=args.checkpoint, plan=args.plan, params=list(args.param), trigger_s=args.trigger_s,
                     available_now=args.available_now, duration_s=args.duration_s, master=args.master,
                     metrics=args.metrics, shuffle_partitions=args.shuffle_partitions,
                     min_deltas_for_snapshot=args.min_deltas_for_snapshot,
                     max_files_per_trigger=args.max_files_per_trigger, query_name=args.query_name,
                     live_redundancy=args.live_redundancy, max_restarts=args.max_restarts,
                     restart_window_s=args.restart_window_s, since_ms=args.since_ms, event_index=args.event_index)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = config_from_args(args)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        summary = run(config, stop_event=stop)
    except FtopsError as exc:
        print(f"run_pipeline: {exc.label}: {exc}", file=sys.stderr)
        return exc.exit_code
    print(json.dumps({"role": config.role, **summary}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

