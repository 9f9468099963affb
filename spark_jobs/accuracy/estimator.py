"""Estimate the tentative accuracy of replication plans for a pipeline: prepare the sample, submit
the replay (:mod:`.replay`) locally, read the estimates back.

Problem: every place that plans or drills a pipeline (``ftops plan accuracy``, ``ftops drill run``,
the ``ftops_profile_and_plan`` DAG, ``--objective accuracy``) needs the same number: the accuracy a
plan's tentative outputs will have, with its spread over windows
(:class:`~ft_core.replication.predicted_accuracy.AccuracyEstimate`). The replay is a batch Spark
application on a *local* master by default (``local[2]``): it never takes the job's cluster cores;
any master URL can be given. All plans share one application (one JVM start).

The sample is the job's recent input (``input_dir``: its ``recent_files`` newest files per source)
or, without one, the pipeline's seeded sample input (``sample_s`` seconds from file ``first_file``).
Bad input (a plan task the pipeline does not have, a missing folder, no sample input) raises
InputError before anything is written or started; a replay that fails raises ExternalError naming
its log.

    estimate_accuracy(load_workload("topk"), [["O1[0]", "O1[1]", "O2[0]", "O3[0]"]])[0].mean   # ~0.9
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ft_core.errors import ExternalError, InputError
from ft_core.replication.predicted_accuracy import AccuracyEstimate
from spark_jobs.accuracy.replay import ReplayRequest
from spark_jobs.accuracy.replay_input import ReplaySample, recent_sample, seeded_sample
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.loading import pipeline_file

DEFAULT_SAMPLE_S = 240.0
DEFAULT_RECENT_FILES = 240


def _sample(workload: Workload, folder: Path, input_dir: Path | None, sample_s: float, recent_files: int,
            first_file: int) -> ReplaySample:
    if input_dir is None:
        return seeded_sample(workload, folder, sample_s, first_file)
    if not Path(input_dir).is_dir():
        raise InputError(f"--input: {input_dir} is not a folder")
    return recent_sample(workload, Path(input_dir), folder, recent_files)


def _submit_command(workload: Workload, request_file: Path, master: str) -> list[str]:
    from spark_jobs.accuracy import replay
    from spark_jobs.cluster.standalone import spark_home

    cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", master, "--name", f"ftops-{workload.name}-accuracy",
           "--driver-memory", "1g", "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"]
    if pipeline_file(workload.ref) is not None:
        cmd += ["--py-files", str(pipeline_file(workload.ref))]
    return cmd + [replay.__file__, "--request", str(request_file)]


def _run(cmd: list[str], log: Path, timeout_s: float) -> None:
    from spark_jobs.cluster.standalone import spark_env
    from spark_jobs.runtime.processes import signal_group

    env = spark_env({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
    env.pop("SPARK_NO_DAEMONIZE", None)
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        import signal

        signal_group(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        raise ExternalError(f"the accuracy replay did not finish in {timeout_s:.0f} s; see {log}") from None
    except BaseException:
        import signal

        signal_group(proc.pid, signal.SIGKILL)  # Ctrl-C or SIGTERM: nothing left running
        proc.wait(timeout=30)
        raise
    if code != 0:
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-2:])
        raise ExternalError(f"the accuracy replay failed (exit {code}); see {log}: {tail}")


def estimate_accuracy(workload: Workload, plans: list[list[str]], *, input_dir: Path | None = None,
                      sample_s: float = DEFAULT_SAMPLE_S, recent_files: int = DEFAULT_RECENT_FILES, first_file: int = 0,
                      master: str = "local[2]", work_dir: Path | None = None,
                      timeout_s: float = 900.0) -> list[AccuracyEstimate]:
    """One estimate per plan (in order) from one replay (see the module docstring). ``work_dir``
    keeps the sample, the request and the log (default: a temporary folder, removed afterwards)."""
    for plan in plans:
        workload.check_tasks(plan, "plan")
    if sample_s <= 0 or recent_files < 1:
        raise InputError("--sample-s and --recent-files: must be positive")
    own = work_dir is None
    folder = Path(tempfile.mkdtemp(prefix="ftops-accuracy-")) if own else Path(work_dir).resolve()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        sample = _sample(workload, folder / "input", input_dir, sample_s, recent_files, first_file)
        request = ReplayRequest(pipeline=str(pipeline_file(workload.ref) or workload.ref), params=workload.param_args(),
                                input_dir=sample.input_dir, plans=[sorted(p) for p in plans], span_ms=sample.span_ms,
                                sample=sample.description, result=folder / "estimates.json")
        (folder / "request.json").write_text(request.model_dump_json(indent=2))
        _run(_submit_command(workload, folder / "request.json", master), folder / "replay.log", timeout_s)
        return [AccuracyEstimate.model_validate(e) for e in json.loads(request.result.read_text())]
    finally:
        if own:
            shutil.rmtree(folder, ignore_errors=True)
