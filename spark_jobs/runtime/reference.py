"""The failure-free answer: a pipeline's batch reference job over a (final) input folder.

Drills and profiling runs judge a streaming job's output against what the same pipeline computes in
batch over the same input (``run_pipeline --role reference``): every window, no watermark, nothing
lost or repeated. This submits that job with spark-submit (a local master by default, so it never
takes the cluster's cores) and reads back its rows and the watermark a streaming run reaches after
reading the whole input (``closed_until_ms``); :func:`run_reference` is the job itself.

A drill on a job that has run for days checks only the windows from just before its fault on
(``since_ms``): for a window-local pipeline (:class:`~spark_jobs.pipeline.definition.Output`) those need
only the events from ``since_ms`` on, and :mod:`spark_jobs.pipeline.event_index` says which files hold
them, so a drill's reference costs the input since the previous drill, not the job's age.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ft_core.errors import ExternalError
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.sink import read_output
from spark_jobs.runtime.launch import launch_run, run_args


def reference_argv(workload: Workload, input_dir: Path, out_dir: Path, master: str = "local[2]",
                   since_ms: int | None = None, event_index: Path | None = None) -> list:
    """``ftops workload run`` arguments of the batch reference (no Spark UI); with ``since_ms`` and
    ``event_index``, of the windows from ``since_ms`` on only."""
    # the driver lists explicitly named files itself: Spark's default starts a listing job above 32 paths (10 s
    # for the 200 files of a drill's reference on a loaded two-core machine, against milliseconds)
    argv = ["--pipeline", workload.ref, "--role", "reference", "--input", input_dir, "--output", out_dir,
            "--master", master, "--conf", "spark.ui.enabled=false",
            "--conf", "spark.sql.sources.parallelPartitionDiscovery.threshold=100000"]
    for item in workload.param_args():
        argv += ["--param", item]
    if since_ms is not None:
        argv += ["--since-ms", str(since_ms), "--event-index", event_index]
    return argv


def read_reference(out_dir: Path) -> tuple[list[dict], dict]:
    """(rows, meta) a finished reference run wrote."""
    return read_output(out_dir), json.loads((Path(out_dir) / "reference.meta.json").read_text())


def batch_reference(workload: Workload, input_dir: Path, out_dir: Path, master: str = "local[2]",
                    timeout_s: float = 900.0, since_ms: int | None = None,
                    event_index: Path | None = None) -> tuple[list[dict], dict]:
    """Run the reference to completion; ExternalError naming its log when it fails."""
    proc, log = launch_run(run_args(reference_argv(workload, input_dir, out_dir, master, since_ms, event_index)))
    try:
        code = proc.wait(timeout=timeout_s)
    except TimeoutError:
        proc.kill()
        raise ExternalError(f"the batch reference of {workload.name} did not finish in {timeout_s:.0f} s; see {log}") from None
    if code != 0:
        raise ExternalError(f"the batch reference of {workload.name} failed (exit {code}); see {log}")
    return read_reference(out_dir)


def run_reference(spark, workload: Workload, input_dir: Path, out_dir: Path, since_ms: int | None = None,
                  event_index: Path | None = None) -> dict[str, Any]:
    """The job: batch over the input (with ``since_ms``: the files holding events from then on, those
    events only, and the windows starting from then on); writes reference.jsonl and reference.meta.json."""
    from pyspark.sql import functions as F

    from spark_jobs.pipeline.frames import build_frame, read_sources
    from spark_jobs.pipeline.sink import REFERENCE_FILE, write_rows

    streams = workload.stream_sources()
    if since_ms is None:
        sources = read_sources(workload, spark, input_dir, streaming=False)
        maxima = {s.name: sources[s.name].agg(F.max(F.unix_millis(s.event_time)).alias("m")).collect()[0]["m"]
                  for s in streams}
        files_read = None
    else:
        sources, maxima, files_read = _sources_since(spark, workload, input_dir, since_ms, Path(event_index))
    rows = [r.asDict(recursive=True) for r in build_frame(workload, sources).collect()]
    if since_ms is not None:
        rows = [r for r in rows if r["window_start"] >= since_ms]
    write_rows(out_dir, REFERENCE_FILE, rows)
    # a streaming run that read everything: per source its max event time less its delay; several: the minimum
    closed = None if any(m is None for m in maxima.values()) else \
        min(maxima[s.name] - int(round(s.watermark_s * 1000)) for s in streams)
    meta = {"rows": len(rows), "max_event_ms": maxima, "closed_until_ms": closed, "since_ms": since_ms,
            "files_read": files_read}
    (Path(out_dir) / "reference.meta.json").write_text(json.dumps(meta, indent=2))
    return meta


def _sources_since(spark, workload: Workload, input_dir: Path, since_ms: int, index_path: Path):
    """(frames, newest event per stream source, files read per source): each stream source's files
    holding events from ``since_ms`` on, filtered to those events; static tables read whole."""
    from pyspark.sql import functions as F

    from spark_jobs.pipeline import event_index

    index = event_index.load(index_path)
    frames, maxima, files_read = {}, {}, {}
    for source in workload.sources():
        if source.static:
            frames[source.name] = source.read(spark, input_dir, streaming=False)
            continue
        index[source.name] = files = event_index.refresh(spark, source, input_dir, index.get(source.name, {}))
        wanted = event_index.files_from(files, since_ms)
        frames[source.name] = source.read_files(spark, input_dir, wanted).filter(
            F.unix_millis(F.col(source.event_time)) >= since_ms)
        maxima[source.name] = event_index.latest_event_ms(files)
        files_read[source.name] = {"read": len(wanted), "of": len(files)}
    event_index.save(index_path, index)
    return frames, maxima, files_read
