"""The state of a recovery-units deployment: one JSON document in the deployment folder.

Problem: deploy, status, start, stop, kill and recover are separate commands (and separate Airflow
tasks), so what runs where must live outside any one process. ``<root>/deployment.json`` holds the
pipeline (its ``--pipeline`` reference and parameters), the layout of every operator's table (derived at
deploy time, :mod:`.shapes`), the folders, the Spark master, the input feed and every application ever
started (its units, process group, log, and when it stopped or was killed), plus the failures injected.
Applications' live state is in ``<root>/apps/<name>/status.json``, written by the application itself
(:mod:`.app`), and per-unit progress events in ``<root>/units/<unit>/progress.jsonl``.

Layout of ``<root>``: ``deployment.json``, ``input/`` (unless given), ``tables/<unit>``,
``checkpoints/<unit>``, ``apps/<name>/{status.json,driver.log}``, ``units/<unit>/progress.jsonl``,
``feed.log``.
"""

from __future__ import annotations

import fcntl
import json
import time
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, Field

from ft_core.errors import InputError
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.units import UnitTopology
from spark_jobs.recovery_units.tables import TableLayout, folder_name
from spark_jobs.runtime.processes import same_process


class AppRecord(BaseModel):
    """One application (a "node" of units) started by ftops."""

    name: str
    units: list[str]
    pid: int
    log: str
    started_at: float
    ui_port: int
    stopped_at: float | None = None
    killed: bool = False
    stage: int | None = None
    process_started: float | None = None  # the driver's start time: a pid reused by another process is not it

    def alive(self) -> bool:
        """Whether its driver still runs (not a later process that was given its pid)."""
        return same_process(self.pid, self.process_started)


class Failure(BaseModel):
    """An injected correlated failure: the domain, when, and the units and applications it took."""

    time: float
    domain: str | None
    apps: list[str]
    units: list[str]
    workers: list[str] = Field(default_factory=list)
    survivor_workers: list[str] = Field(default_factory=list, description="master worker ids alive after the failure")
    failed_workers: list[str] = Field(default_factory=list, description="master worker ids of the failed workers (a "
                                      "cut-off or killed worker stays ALIVE to the master until its worker timeout)")

    def known_workers(self) -> list[str]:
        """The workers that existed at the failure: recovery counts only the others as new capacity."""
        return [*self.survivor_workers, *self.failed_workers]


class Deployment(BaseModel):
    root: str
    pipeline: str
    params: dict
    input: str
    master: str
    master_ui: str | None = Field(default=None, description="the master's web UI, where capacity is polled (None: "
                                  "the cluster state's, or the Airflow connection's)")
    layouts: dict[str, TableLayout] = Field(default_factory=dict)
    cluster_state: str | None = None
    trigger_s: float = 2.0
    ui_port_base: int = 23400
    driver_memory: str = "512m"
    executor_memory: str = "512m"
    feed_pid: int | None = None
    feed_started: float | None = None  # the feed's start time (its pid may be reused once it exits)
    feed_speedup: float = 1.0
    apps: dict[str, AppRecord] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)

    @property
    def workload(self) -> Workload:
        """The deployed pipeline with its parameters."""
        return load_workload(self.pipeline, self.params)

    @property
    def units(self) -> UnitTopology:
        return UnitTopology(self.workload)

    @property
    def root_path(self) -> Path:
        return Path(self.root)

    def running_apps(self) -> list[AppRecord]:
        """Applications started and neither stopped nor killed, whose driver is alive."""
        return [a for a in self.apps.values() if a.stopped_at is None and a.alive()]

    def unit_apps(self) -> dict[str, str]:
        """Which running application holds each unit."""
        return {u: a.name for a in self.running_apps() for u in a.units}

    def next_ui_port(self) -> int:
        return self.ui_port_base + len(self.apps) % 100

    def save(self) -> None:
        path = self.root_path / "deployment.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.model_dump_json(indent=2))
        tmp.replace(path)


def load(root: Path | str) -> Deployment:
    path = Path(root).resolve() / "deployment.json"
    if not path.exists():
        raise InputError(f"--deployment-dir: no recovery-units deployment in {Path(root).resolve()} (run `ftops units deploy` first)")
    return Deployment.model_validate_json(path.read_text())


@contextmanager
def locked(root: Path | str):
    """Load, let the caller change, and save the deployment under an exclusive file lock (the CLI, a
    recovery and a test thread may update it at once)."""
    lock = Path(root).resolve() / ".deployment.lock"
    with lock.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        dep = load(root)
        yield dep
        dep.save()


def app_dir(root: Path | str, app: str) -> Path:
    return Path(root) / "apps" / app


def unit_dir(root: Path | str, unit: str) -> Path:
    return Path(root) / "units" / folder_name(unit)


def unit_stream(root: Path | str, unit: str) -> str:
    """The unit's stream in the history store's progress rows: its deployment's absolute folder and the unit
    (its query name alone repeats across deployments)."""
    return f"{Path(root).resolve()}#{unit}"


def read_status(root: Path | str, app: str) -> dict | None:
    path = app_dir(root, app) / "status.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def read_progress(root: Path | str, unit: str) -> list[dict]:
    path = unit_dir(root, unit) / "progress.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line being written
    return out


def now() -> float:
    return time.time()
