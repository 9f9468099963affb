"""Task costs of a streaming run from Spark's event log: CPU per micro-batch, speculative copies included.

Problem: the cost of redundancy (thesis 002's computation overhead, P7: delta CPU time / baseline
CPU time) must count every task attempt, the speculative copies that won and those that were
killed when the original finished first. Spark's REST API aggregates per stage and forgets
finished applications; the event log (``spark.eventLog.enabled=true``, uncompressed) keeps every
attempt of every application a run had (a resubmitted job is a new application, with a new log).

Method: one pass over each log file. ``SparkListenerJobStart`` carries the job's local properties,
where Structured Streaming puts the micro-batch id (``streaming.sql.batchId``); its stage ids map
stages to batches. Each ``SparkListenerTaskEnd`` carries the attempt's ``Speculative`` flag, its end
reason and its metrics (``Executor CPU Time`` in ns, ``Executor Run Time`` in ms). Attempts are
summed per batch range. A paused (SIGSTOPped) attempt accrues run time but no CPU time, so the CPU
numbers are the work done, not the waiting.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

BATCH_PROPERTY = "streaming.sql.batchId"


class TaskCosts(BaseModel):
    """Task attempts of the micro-batches in ``[first_batch, last_batch]`` (CPU in seconds)."""

    first_batch: int
    last_batch: int
    attempts: int
    cpu_s: float
    run_s: float
    speculative_attempts: int
    speculative_won: int
    speculative_cpu_s: float
    killed_attempts: int
    applications: int


def event_log_conf(folder: Path) -> list[str]:
    """The Spark confs that make a run write one uncompressed event log file per application into
    ``folder`` (Spark 4 rolls logs into a folder per application by default)."""
    folder.mkdir(parents=True, exist_ok=True)
    return ["spark.eventLog.enabled=true", f"spark.eventLog.dir=file://{folder.resolve()}",
            "spark.eventLog.compress=false", "spark.eventLog.rolling.enabled=false"]


def log_files(folder: Path) -> list[Path]:
    """The event log files under ``folder`` (a rolled log's parts too, in order), one list."""
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and not p.name.startswith((".", "appstatus")))


def sort_by_application(folder: Path, to: dict[str, Path]) -> None:
    """Move each event log file directly in ``folder`` into ``to[its application's name]`` (streams that shared one
    ``spark.eventLog.dir``, each costed apart afterwards); a log of another application stays where it is."""
    for path in sorted(p for p in Path(folder).iterdir() if p.is_file()):
        name = next((e.get("App Name") for e in _events(path) if e.get("Event") == "SparkListenerApplicationStart"), None)
        if name in to:
            to[name].mkdir(parents=True, exist_ok=True)
            path.rename(to[name] / path.name)


def task_costs(folder: Path, first_batch: int, last_batch: int) -> TaskCosts:
    """Sum the task attempts of the batches in range over every event log in ``folder``."""
    totals = dict(attempts=0, cpu_ns=0, run_ms=0, speculative_attempts=0, speculative_won=0, speculative_cpu_ns=0,
                  killed_attempts=0)
    logs = log_files(folder)
    for path in logs:
        _add_log(path, first_batch, last_batch, totals)
    return TaskCosts(first_batch=first_batch, last_batch=last_batch, attempts=totals["attempts"],
                     cpu_s=totals["cpu_ns"] / 1e9, run_s=totals["run_ms"] / 1e3,
                     speculative_attempts=totals["speculative_attempts"], speculative_won=totals["speculative_won"],
                     speculative_cpu_s=totals["speculative_cpu_ns"] / 1e9, killed_attempts=totals["killed_attempts"],
                     applications=len(logs))


def speculative_attempts(folder: Path) -> list[dict]:
    """Every speculative task attempt in the logs of ``folder``: stage, batch, end reason."""
    found = []
    for path in log_files(folder):
        batch_of: dict[int, int | None] = {}
        for event in _events(path):
            if event["Event"] == "SparkListenerJobStart":
                _map_stages(event, batch_of)
            elif event["Event"] == "SparkListenerTaskEnd" and event["Task Info"].get("Speculative"):
                found.append({"stage": event["Stage ID"], "batch": batch_of.get(event["Stage ID"]),
                              "reason": event["Task End Reason"]["Reason"], "executor": event["Task Info"].get("Executor ID")})
    return found


def _add_log(path: Path, first: int, last: int, totals: dict) -> None:
    batch_of: dict[int, int | None] = {}
    for event in _events(path):
        if event["Event"] == "SparkListenerJobStart":
            _map_stages(event, batch_of)
        elif event["Event"] == "SparkListenerTaskEnd":
            batch = batch_of.get(event["Stage ID"])
            if batch is None or not first <= batch <= last:
                continue
            metrics = event.get("Task Metrics") or {}
            cpu = metrics.get("Executor CPU Time", 0)
            speculative = bool(event["Task Info"].get("Speculative"))
            reason = event["Task End Reason"]["Reason"]
            totals["attempts"] += 1
            totals["cpu_ns"] += cpu
            totals["run_ms"] += metrics.get("Executor Run Time", 0)
            totals["killed_attempts"] += reason == "TaskKilled"
            if speculative:
                totals["speculative_attempts"] += 1
                totals["speculative_cpu_ns"] += cpu
                totals["speculative_won"] += reason == "Success"


def _map_stages(event: dict, batch_of: dict[int, int | None]) -> None:
    value = (event.get("Properties") or {}).get(BATCH_PROPERTY)
    for stage in event.get("Stage IDs", []):
        batch_of.setdefault(stage, int(value) if value is not None else None)


def _events(path: Path):
    with path.open() as fh:
        for line in fh:
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:  # the last line of a log still being written
                    return
