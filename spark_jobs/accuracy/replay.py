"""The replay behind predicted tentative accuracy: one Spark application that runs a pipeline over an
input sample once whole (the accurate answer) and once per replication plan restricted to the plan's
tasks, exactly as the replica runs (:func:`spark_jobs.pipeline.frames.build_frame` with ``tasks``),
and scores each plan's output with the pipeline's accuracy function per window.

Algorithm: read the sources in batch (stream sources cached: every plan reads them again), collect
the whole output, keep the windows that are complete in the sample (:mod:`.replay_input`: inside the
span, given or the event-time range the stream sources share), then per plan collect the restricted
output and score it on those windows (a window the plan's output lacks scores 0, as in a drill). An
empty plan runs no job: like a drill with R = 0, it has no tentative output, so every window scores
0. Cost: one batch job per distinct plan, plus the whole pipeline once; one JVM start.

Run on its own with spark-submit (what :mod:`.estimator` does)::

    spark-submit --master local[2] spark_jobs/accuracy/replay.py --request REQUEST.json

where the request names the pipeline, its parameters, the input folder, the plans, the span, the
sample's description and the result file (:class:`ReplayRequest`); the result is a JSON list of
:class:`~ft_core.replication.predicted_accuracy.AccuracyEstimate`, one per plan, in request order.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import BaseModel

from ft_core.replication.predicted_accuracy import AccuracyEstimate, summarize
from spark_jobs.pipeline.accuracy import window_of
from spark_jobs.pipeline.definition import Workload
from spark_jobs.runtime.driver_address import use_driver_address


class ReplayRequest(BaseModel):
    pipeline: str
    params: list[str]
    input_dir: Path
    plans: list[list[str]]
    span_ms: tuple[int, int] | None
    sample: str
    result: Path


def _rows(df) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.collect()]


def _shared_span(workload: Workload, sources: dict) -> tuple[int, int] | None:
    """``[lo, hi)``: the event-time range every stream source covers (None: a source is empty)."""
    from pyspark.sql import functions as F

    bounds = []
    for s in workload.stream_sources():
        row = sources[s.name].agg(F.min(F.unix_millis(s.event_time)).alias("lo"),
                                  F.max(F.unix_millis(s.event_time)).alias("hi")).collect()[0]
        if row["lo"] is None:
            return None
        bounds.append((row["lo"], row["hi"] + 1))
    return max(b[0] for b in bounds), min(b[1] for b in bounds)


def complete_windows(accurate: list[dict], span_ms: tuple[int, int] | None) -> list[tuple[int, int]]:
    """The windows of the accurate rows that lie inside the sample's span, in order."""
    if span_ms is None:
        return []
    lo, hi = span_ms
    return sorted({window_of(r) for r in accurate if int(r["window_start"]) >= lo and int(r["window_end"]) <= hi})


def replay_estimates(spark, workload: Workload, input_dir: Path, plans: list[list[str]],
                     span_ms: tuple[int, int] | None, sample: str) -> list[AccuracyEstimate]:
    """Every plan's estimate over one replay of ``input_dir`` (see the module docstring)."""
    from spark_jobs.pipeline.frames import build_frame, read_sources

    sources = read_sources(workload, spark, Path(input_dir), streaming=False)
    for s in workload.stream_sources():
        sources[s.name] = sources[s.name].cache()
    accurate = _rows(build_frame(workload, sources))
    windows = complete_windows(accurate, span_ms if span_ms is not None else _shared_span(workload, sources))
    whole = frozenset(workload.task_ids())
    outputs: dict[frozenset[str], list[dict]] = {whole: accurate}
    estimates = []
    for plan in plans:
        tasks = workload.check_tasks(plan, "plan")
        if tasks not in outputs:
            outputs[tasks] = _rows(build_frame(workload, sources, tasks=tasks)) if tasks else []
        scores = workload.accuracy(outputs[tasks], accurate, windows)
        estimates.append(summarize(sorted(tasks), [scores[w] for w in sorted(scores)], sample))
    return estimates


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry point: run a :class:`ReplayRequest`, write its estimates."""
    from pyspark.sql import SparkSession

    from spark_jobs.pipeline.loading import load_workload

    parser = argparse.ArgumentParser(prog="replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--request", type=Path, required=True)
    args = parser.parse_args(argv)
    request = ReplayRequest.model_validate_json(args.request.read_text())
    workload = load_workload(request.pipeline, request.params)
    use_driver_address()  # the one rule for drivers ftops starts: loopback unless SPARK_LOCAL_HOSTNAME names the host
    spark = SparkSession.builder.appName(f"ftops-{workload.name}-accuracy").getOrCreate()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        estimates = replay_estimates(spark, workload, request.input_dir, request.plans, request.span_ms, request.sample)
    finally:
        spark.stop()
    tmp = request.result.with_name(f".{request.result.name}.tmp")
    tmp.write_text(json.dumps([e.model_dump(mode="json") for e in estimates]))
    tmp.replace(request.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
