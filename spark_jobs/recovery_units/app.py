"""One recovery-units application (a "node"): a Spark driver running some units' streaming queries.

    python -m spark_jobs.recovery_units.app --dir DEPLOYMENT --app NAME --units 'O1[0],O2[0]'

Started by :mod:`.runtime` in its own session (the Python driver and its JVM form one process group, so a
node failure can SIGKILL both). It reads the deployment (the pipeline and its parameters, the tables'
layouts, input, master, trigger), starts one query per unit from the unit's own checkpoint
(:func:`.queries.start_unit`), and until SIGTERM:

- appends every micro-batch's progress to ``units/<unit>/progress.jsonl`` (batch id, trigger start, duration,
  input rows, watermark, the wall time it was reported) and, with ``FTOPS_DATABASE_URL`` in its environment,
  writes it to the history store too, with when the input behind the watermark arrived
  (:mod:`spark_jobs.runtime.progress_store`; QueriesRecoveredTrigger reads it there);
- rewrites ``apps/<name>/status.json`` about once a second: per unit whether its query is active, its
  status (data available, trigger active), the batch its checkpoint had planned before this start
  (``restored_batch``, replayed if uncommitted) and its CPU time so far, and when its queries started
  (``queries_started_at``: the application is up, what a recovery's next stage waits for).

CPU time per unit comes from Spark's task metrics: Structured Streaming runs each micro-batch's jobs in the
job group of the query's run id, so the sum of ``executorCpuTime`` over the stages of those jobs (the
driver's REST API) is the unit's CPU; divided by wall time it is the unit's share of a one-core node,
the cost ``c_p`` of paper 003.

SIGTERM stops the queries between micro-batches and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from spark_jobs.cluster.web_ui import try_json
from spark_jobs.pipeline.loading import pipeline_file
from spark_jobs.recovery_units.deployment import app_dir, load, unit_dir
from spark_jobs.recovery_units.queries import query_name, start_unit
from spark_jobs.recovery_units.tables import last_planned_batch
from spark_jobs.runtime.atomic_json import write_json
from spark_jobs.runtime.waiting import wait_while


def _listener(units_by_query: dict[str, str], root: Path, app: str):
    from spark_jobs.runtime.progress_listener import ProgressListener
    from spark_jobs.runtime.progress_store import batch_end

    class ProgressLog(ProgressListener):
        """Appends each unit's micro-batch progress to its progress.jsonl."""

        def on_progress(self, p) -> None:
            # stamped with Spark's batch end, as the history store's rows: when the listener hears
            # the batch lags under load, and the two sources then disagreed by seconds on when a query was back
            rec = {"app": app, "run_id": str(p.runId), "batch_id": p.batchId, "timestamp": p.timestamp,
                   "batch_duration_ms": p.batchDuration, "num_input_rows": p.numInputRows,
                   "watermark": (p.eventTime or {}).get("watermark"), "reported_at": batch_end(p)}
            path = unit_dir(root, units_by_query[p.name]) / "progress.jsonl"
            with path.open("a") as fh:
                fh.write(json.dumps(rec, default=str) + "\n")

    return ProgressLog(units_by_query)


def _store_listeners(spark, root: Path, dep, units: list[str]) -> list:
    """With ``FTOPS_DATABASE_URL`` in the environment, one history-store listener per unit: its batches, each with
    when its watermark's input arrived, which QueriesRecoveredTrigger reads (none without the URL: the trigger
    then reads the progress files)."""
    from ft_core.store.url import ENV_VAR
    from spark_jobs.recovery_units.deployment import unit_stream
    from spark_jobs.recovery_units.latency import LiveArrivals
    from spark_jobs.runtime.progress_store import StoreProgressListener

    url = os.environ.get(ENV_VAR)
    if not url:
        return []
    arrivals = LiveArrivals(dep.workload, Path(dep.input))
    listeners = [StoreProgressListener(url, query_name(u), app_id=spark.sparkContext.applicationId, role="unit",
                                       output_rows=lambda _batch: 0, stream=unit_stream(root, u),
                                       watermark_arrival=lambda mark, u=u: arrivals.arrival(u, mark))
                 for u in units]
    for listener in listeners:
        spark.streams.addListener(listener)
    return listeners


def _session(dep, app: str, ui_port: int):
    from pyspark.sql import SparkSession

    from spark_jobs.runtime.driver_address import use_driver_address

    use_driver_address()
    builder = (SparkSession.builder.appName(f"ftops-units-{app}").master(dep.master)
               .config("spark.driver.memory", dep.driver_memory)
               .config("spark.executor.memory", dep.executor_memory)
               .config("spark.executor.cores", "1").config("spark.cores.max", "1")
               .config("spark.ui.port", str(ui_port)).config("spark.port.maxRetries", "64")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "10"))
    return builder.getOrCreate()


def unit_cpu_seconds(ui_url: str | None, app_id: str, run_ids: dict[str, str]) -> dict[str, float]:
    """CPU seconds of each unit's tasks so far, from the driver's REST API (jobs grouped by run id)."""
    if not ui_url:
        return {}
    base = f"{ui_url}/api/v1/applications/{app_id}"
    jobs, stages = try_json(f"{base}/jobs"), try_json(f"{base}/stages?status=complete")
    if jobs is None or stages is None:  # the driver is busy or gone: no measurement this time
        return {}
    cpu_of_stage = {}
    for s in stages:
        cpu_of_stage[s["stageId"]] = cpu_of_stage.get(s["stageId"], 0) + s.get("executorCpuTime", 0)
    unit_of_run = {rid: unit for unit, rid in run_ids.items()}
    out = {unit: 0.0 for unit in run_ids}
    for job in jobs:
        unit = unit_of_run.get(job.get("jobGroup"))
        if unit is not None:
            out[unit] += sum(cpu_of_stage.get(sid, 0) for sid in job.get("stageIds", [])) / 1e9
    return out


def run(root: Path, app: str, units: list[str], ui_port: int, stop: threading.Event) -> None:
    """Start the units' queries and keep the status file current until ``stop`` is set."""
    dep = load(root)
    workload = dep.workload
    spark = _session(dep, app, ui_port)
    sc = spark.sparkContext
    if pipeline_file(dep.pipeline) is not None:  # a pipeline file: its Python UDFs run on the executors
        sc.addPyFile(str(pipeline_file(dep.pipeline)))
    restored = {u: last_planned_batch(root, u) for u in units}
    for u in units:
        unit_dir(root, u).mkdir(parents=True, exist_ok=True)
    spark.streams.addListener(_listener({query_name(u): u for u in units}, root, app))
    to_store = _store_listeners(spark, root, dep, units)
    started_at = time.time()
    queries = {u: start_unit(spark, workload, dep.layouts, u, Path(dep.input), root, dep.trigger_s) for u in units}
    queries_at = time.time()  # the queries up: a recovery's next stage may start
    run_ids = {u: str(q.runId) for u, q in queries.items()}
    cpu: dict[str, float] = {}
    last_cpu = 0.0
    try:
        while not stop.is_set():
            if time.monotonic() - last_cpu > 5:
                cpu = unit_cpu_seconds(sc.uiWebUrl, sc.applicationId, run_ids) or cpu
                last_cpu = time.monotonic()
            _write_status(root, app, sc, started_at, queries_at, queries, run_ids, restored, cpu)
            failed = [u for u, q in queries.items() if not q.isActive]
            if failed:
                raise RuntimeError(f"unit query {failed[0]} stopped: {queries[failed[0]].exception()}")
            stop.wait(1.0)
    finally:
        for q in queries.values():
            _stop_between_batches(q)
        for listener in to_store:
            listener.close(timeout_s=5.0)
        _write_status(root, app, sc, started_at, queries_at, queries, run_ids, restored, cpu, stopped=True)
        spark.stop()


def _write_status(root, app, sc, started_at, queries_at, queries, run_ids, restored, cpu, stopped=False) -> None:
    units = {}
    for u, q in queries.items():
        status = dict(q.status) if q.isActive else {}
        units[u] = {"active": q.isActive, "run_id": run_ids[u], "restored_batch": restored[u],
                    "data_available": status.get("isDataAvailable"), "trigger_active": status.get("isTriggerActive"),
                    "message": status.get("message"), "cpu_s": cpu.get(u)}
    write_json(app_dir(root, app) / "status.json", {
        "app": app, "pid": os.getpid(), "app_id": sc.applicationId, "ui": sc.uiWebUrl, "master": sc.master,
        "started_at": started_at, "queries_started_at": queries_at, "updated_at": time.time(),
        "stopped": stopped, "units": units})


def _stop_between_batches(query, wait_s: float = 15.0) -> None:
    try:
        wait_while(lambda: query.isActive and query.status.get("isTriggerActive"), timeout_s=wait_s, interval_s=0.05)
        query.stop()
    except Exception:  # noqa: BLE001 - a query that failed already is stopped
        pass


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_jobs.recovery_units.app", description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--app", required=True)
    p.add_argument("--units", required=True)
    p.add_argument("--ui-port", type=int, default=23400)
    args = p.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    run(args.dir.resolve(), args.app, [u for u in args.units.split(",") if u], args.ui_port, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
