"""The failure-free answer: a pipeline's batch reference job over a (final) input folder.

Drills and profiling runs judge a streaming job's output against what the same pipeline computes in
batch over the same input (``run_pipeline --role reference``): every window, no watermark, nothing
lost or repeated. This submits that job with spark-submit (a local master by default, so it never
takes the cluster's cores) and reads back its rows and the watermark a streaming run reaches after
reading the whole input (``closed_until_ms``).
"""

from __future__ import annotations

import json
from pathlib import Path

from ft_core.errors import ExternalError
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.sink import read_output
from spark_jobs.runtime.launch import launch_run, run_args


def reference_argv(workload: Workload, input_dir: Path, out_dir: Path, master: str = "local[2]") -> list:
    """``ftops workload run`` arguments of the batch reference (no Spark UI)."""
    argv = ["--pipeline", workload.ref, "--role", "reference", "--input", input_dir, "--output", out_dir,
            "--master", master, "--conf", "spark.ui.enabled=false"]
    for item in workload.param_args():
        argv += ["--param", item]
    return argv


def read_reference(out_dir: Path) -> tuple[list[dict], dict]:
    """(rows, meta) a finished reference run wrote."""
    return read_output(out_dir), json.loads((Path(out_dir) / "reference.meta.json").read_text())


def batch_reference(workload: Workload, input_dir: Path, out_dir: Path, master: str = "local[2]",
                    timeout_s: float = 900.0) -> tuple[list[dict], dict]:
    """Run the reference to completion; ExternalError naming its log when it fails."""
    proc, log = launch_run(run_args(reference_argv(workload, input_dir, out_dir, master)))
    try:
        code = proc.wait(timeout=timeout_s)
    except TimeoutError:
        proc.kill()
        raise ExternalError(f"the batch reference of {workload.name} did not finish in {timeout_s:.0f} s; see {log}") from None
    if code != 0:
        raise ExternalError(f"the batch reference of {workload.name} failed (exit {code}); see {log}")
    return read_reference(out_dir)
