"""Adaptive redundancy on Spark: the feedback controller, applied live or by resubmission (thesis 002, Sec. 4.2).

Problem: Algorithm 2 (:mod:`ft_core.redundancy.controller`) sizes redundancy so that tail latency
stays under a bound with as little redundancy as possible. On Spark the redundancy is speculative
execution (first copy of a task wins; :func:`ft_core.redundancy.allocation.speculation_settings` maps a level
to the ``spark.speculation*`` settings). A level change is either written for the running driver
to apply (``live``, :mod:`spark_jobs.redundancy.live`), or made by stopping the job gracefully and
resubmitting it from the same checkpoint with the new settings. This module is that loop, callable
from Airflow.

Method, one call of :func:`step` per controller period:

1. read the run's per-batch progress (``metrics.jsonl``, written by the job's listener) after the
   last batch the previous step consumed (batch ids continue across resubmissions, because the
   checkpoint does), leaving out the first ``warmup_batches`` of every application run (its application id):
   a resubmitted job's first batches pay for JVM start-up and state loading. Those are caused by
   the actuation itself, and feeding them back would make the controller chase its own restarts;
2. with at least ``min_batches`` batches, the period's metric is their p90 duration (the thesis:
   p90 of 1-s windows; here the unit is the micro-batch) and the controller steps; otherwise the
   period is not over and nothing changes;
3. if the new level maps to other Spark settings than the applied level, the run is stopped
   between micro-batches (:func:`spark_jobs.runtime.launch.stop_run`) and resubmitted with the same
   arguments plus ``--redundancy-level`` (:func:`spark_jobs.runtime.launch.launch_run`); or, for a
   run started ``live``, the level is written for the running driver to apply from its next
   micro-batches (:mod:`spark_jobs.redundancy.live`: no restart, no warm-up batches).

The state (controller parameters and state, the run's ``ftops workload run`` arguments, the applied
level, the last consumed batch, the history of steps) is one JSON document (:class:`RuntimeState`),
so that each Airflow run resumes where the previous one stopped. By resubmission every change costs a
restart (about four missed deadlines on this machine, ``docs/benchmarks/redundancy.md``): prefer
``live``; otherwise use a controller period of many batches and a larger ``step_min_pct`` than the
thesis's 10 points.
"""

from __future__ import annotations

import math
import subprocess
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ft_core.errors import InputError
from ft_core.redundancy.allocation import speculation_settings
from ft_core.redundancy.controller import ControllerParams, RedundancyController


class StepRecord(BaseModel):
    """One controller period: what it saw and what it did."""

    at: float
    batches: int
    first_batch: int | None
    last_batch: int | None
    metric_ms: float | None
    redundancy_pct: float
    level: float
    action: Literal["started", "wait", "hold", "resubmit", "apply"]


class RuntimeState(BaseModel):
    """Everything the loop needs between periods (the JSON state file)."""

    run_argv: list[str] = Field(description="`ftops workload run` arguments, without --redundancy-level")
    output: str
    controller: dict
    applied_level: float
    live: bool = Field(default=False, description="level changes are applied to the running job, not by resubmission")
    last_batch_id: int = -1
    resubmissions: int = 0
    history: list[StepRecord] = Field(default_factory=list)

    def controller_object(self) -> RedundancyController:
        return RedundancyController.from_dict(self.controller)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in [0, 100]) of a non-empty list: an observed value."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


def period_batches(metrics: Path, after_batch: int, warmup_batches: int) -> list[dict]:
    """The batches after ``after_batch``, without the first ``warmup_batches`` of each run."""
    from spark_jobs.pipeline.metrics import application_run, read_metrics

    seen: dict[str, int] = {}
    chosen = []
    for rec in read_metrics(metrics):
        run = application_run(rec)
        seen[run] = seen.get(run, 0) + 1
        if rec["batch_id"] > after_batch and seen[run] > warmup_batches:
            chosen.append(rec)
    return chosen


def start(run_argv: list[str], params: ControllerParams, state_path: Path,
          live: bool = False) -> tuple[subprocess.Popen, RuntimeState]:
    """Submit the run at the controller's initial level (``live``: changeable while it runs) and
    write the state file."""
    from spark_jobs.runtime.launch import run_args

    argv = [str(a) for a in run_argv]
    if "--redundancy-level" in argv:
        raise InputError("--redundancy-level: the controller sets the level; leave it out of the run's arguments")
    args = run_args(argv)
    controller = RedundancyController(params)
    state = RuntimeState(run_argv=argv, output=str(args.output.resolve()), controller=controller.to_dict(),
                         applied_level=controller.level, live=live)
    proc = _launch(state)
    state.history.append(StepRecord(at=time.time(), batches=0, first_batch=None, last_batch=None, metric_ms=None,
                                    redundancy_pct=controller.state.redundancy_pct, level=controller.level, action="started"))
    save_state(state, state_path)
    return proc, state


def step(state_path: Path, *, min_batches: int = 5, warmup_batches: int = 2,
         stop_timeout_s: float = 60.0) -> tuple[StepRecord, subprocess.Popen | None]:
    """One controller period (see the module docstring); returns what it did and, after a
    resubmission, the new run's process."""
    state = load_state(state_path)
    batches = period_batches(_metrics_file(state), state.last_batch_id, warmup_batches)
    controller = state.controller_object()
    if len(batches) < min_batches:
        return _record(batches, None, controller, "wait"), None
    metric = percentile([b["batch_duration_ms"] for b in batches], 90)
    controller.update(metric)
    state.controller = controller.to_dict()
    state.last_batch_id = batches[-1]["batch_id"]
    action, proc = "hold", None
    if speculation_settings(controller.level, live=state.live) != speculation_settings(state.applied_level, live=state.live):
        action, proc = _actuate(state, controller.level, stop_timeout_s)
    record = _record(batches, metric, controller, action)
    state.history.append(record)
    save_state(state, state_path)
    return record, proc


def _actuate(state: RuntimeState, level: float, stop_timeout_s: float) -> tuple[str, subprocess.Popen | None]:
    """Apply a new level: written for the running driver (live), else by resubmission."""
    if not state.live:
        return "resubmit", resubmit(state, level, stop_timeout_s)
    from spark_jobs.redundancy.live import write_level

    write_level(Path(state.output), level)
    state.applied_level = level
    return "apply", None


def resubmit(state: RuntimeState, level: float, stop_timeout_s: float = 60.0) -> subprocess.Popen:
    """Stop the run between micro-batches and submit it again, from its checkpoint, at ``level``."""
    from spark_jobs.runtime.launch import stop_run

    stop_run(Path(state.output), stop_timeout_s)
    state.applied_level = level
    state.resubmissions += 1
    return _launch(state)


def load_state(path: Path) -> RuntimeState:
    path = Path(path)
    if not path.exists():
        raise InputError(f"--state-file: {str(path)!r} does not exist (start the run under the controller first)")
    try:
        return RuntimeState.model_validate_json(path.read_text())
    except ValueError as exc:
        raise InputError(f"--state-file: {str(path)!r} is not a redundancy runtime state: {str(exc).splitlines()[0]}") from None


def save_state(state: RuntimeState, path: Path) -> None:
    path = Path(path)
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(state.model_dump_json(indent=1))
    tmp.replace(path)


def _launch(state: RuntimeState) -> subprocess.Popen:
    from spark_jobs.runtime.launch import launch_run, run_args

    live = ["--live-redundancy"] if state.live else []
    proc, _log = launch_run(run_args([*state.run_argv, "--redundancy-level", f"{state.applied_level:g}", *live]))
    return proc


def _metrics_file(state: RuntimeState) -> Path:
    from spark_jobs.runtime.launch import run_args

    args = run_args(state.run_argv)
    return Path(args.metrics) if args.metrics else Path(state.output) / "_metrics" / "metrics.jsonl"


def _record(batches: list[dict], metric: float | None, controller: RedundancyController, action: str) -> StepRecord:
    return StepRecord(at=time.time(), batches=len(batches), first_batch=batches[0]["batch_id"] if batches else None,
                      last_batch=batches[-1]["batch_id"] if batches else None, metric_ms=metric,
                      redundancy_pct=controller.state.redundancy_pct, level=controller.level, action=action)
