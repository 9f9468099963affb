"""Profiling and validation settings, and the checks run before anything starts."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ft_core.checkpoint.recovery_time import Case, Variant
from ft_core.checkpoint.recovery_time import DEFAULT_CASE
from ft_core.errors import ExternalError, InputError
from spark_jobs.profiling.vector import CheckpointVector
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.loading import load_workload

Progress = Callable[[str], None]


DEFAULT_MASTER = "local[1]"
DEFAULT_MAX_RECOVERY_ERROR = 0.2  # issue 15: predicted recovery within 20% of the measured one


class ProfilingError(ExternalError):
    """A profiling run could not complete a step; the message names the copy, the step and the logs."""


class RunSettings(BaseModel):
    """How copies run and fail (shared by profiling and validation)."""

    model_config = ConfigDict(extra="forbid")

    pipeline: str = Field(description="the pipeline: a sample's name, module:attribute or a .py file")
    params: list[str] = Field(default_factory=list, description="pipeline parameters key=value")
    failures: int = Field(default=3, ge=1, description="failures injected per copy")
    duration_s: float = Field(gt=0, description="seconds of steady operation per copy, split around the failures")
    repetitions: int = Field(default=1, ge=1, description="copies per interval")
    parallel: int = Field(default=1, ge=1, description="copies at once (1: no copy competes with another for "
                          "cores, as Chiron's isolated deployments; validation reruns the profile's value)")
    work_dir: Path
    master: str = DEFAULT_MASTER
    detection_timeout_s: float = Field(default=5.0, ge=0, description="T: kill to relaunch")
    min_deltas_for_snapshot: int | None = Field(default=None, ge=1)
    shuffle_partitions: int = Field(default=2, ge=1)
    state_store: Literal["hdfs", "rocksdb"] = "hdfs"
    changelog_checkpointing: bool = False
    event_log: bool = Field(default=True, description="Spark event logs (checkpoint cost per batch)")
    ui_port_base: int | None = Field(default=None, ge=1024, le=65000, description="copy i's Spark UI on BASE+i "
                                     "(None: no UI)")
    driver_memory: str = "512m"
    spark_conf: dict[str, str] = Field(default_factory=dict, description="the job's own Spark confs (its deployment's)")
    mtbf_s: float | None = Field(default=None, gt=0, description="recorded in the document (Young/Daly baselines)")
    timeout_s: float = Field(default=600.0, gt=0, description="deadline of each wait")

    def vector(self, trigger_s: float) -> CheckpointVector:
        return CheckpointVector(trigger_s=trigger_s, min_deltas_for_snapshot=self.min_deltas_for_snapshot,
                                shuffle_partitions=self.shuffle_partitions, state_store=self.state_store,
                                changelog_checkpointing=self.changelog_checkpointing)


class ProfileConfig(RunSettings):
    intervals_s: list[float] = Field(description="candidate trigger intervals, seconds")
    out: Path | None = Field(default=None, description="profiles document (default <work_dir>/profiles.json)")

    @property
    def out_path(self) -> Path:
        return (self.out or self.work_dir / "profiles.json").resolve()


class ValidateConfig(RunSettings):
    profiles: Path
    max_recovery_s: float = Field(gt=0)
    case: Case = DEFAULT_CASE
    variant: Variant | Literal["auto"] = Field(default="auto", description="auto: the variant closest to the "
                                                "profiled recovery times (ft_core.checkpoint.variant_choice)")
    max_recovery_error: float = Field(default=DEFAULT_MAX_RECOVERY_ERROR, ge=0, description="the prediction "
                                      "validates when |predicted - measured| / measured is at most this")
    against_checkpoint: Path | None = Field(default=None, description="a running job's checkpoint: may the "
                                            "recommended vector restart on it?")


def raw_path(profiles: Path) -> Path:
    """The raw samples file next to a profiles document: ``profiles.json`` -> ``profiles.raw.json``."""
    return profiles.with_name(f"{profiles.stem}.raw.json")


def check_intervals(intervals_s: list[float]) -> list[float]:
    """At least one interval, each positive and a whole number of milliseconds (Spark's trigger
    unit), no two equal; returned sorted."""
    if not intervals_s:
        raise InputError("--intervals: at least 1 interval is needed")
    seen: set[int] = set()
    for value in intervals_s:
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"--intervals: every interval must be a positive number of seconds, got {value:g}")
        ms = round(value * 1000)
        if ms < 1 or abs(ms - value * 1000) > 1e-6:
            raise InputError(f"--intervals: {value:g} s is not a whole number of milliseconds (Spark triggers are in ms)")
        if ms in seen:
            raise InputError(f"--intervals: {value:g} s is listed twice")
        seen.add(ms)
    return sorted(intervals_s)


def check_settings(settings: RunSettings) -> Workload:
    """Validate what a run needs before anything starts (InputError names the option)."""
    from spark_jobs.cluster.standalone import HOST

    workload = load_workload(settings.pipeline, settings.params)
    workload.require_sample("profiling (every copy reads one seeded input fed in real time)")
    if not (settings.master.startswith("local") or settings.master.startswith("spark://")):
        raise InputError(f"--master: expected local[N] or spark://HOST:PORT, got {settings.master!r}")
    work = settings.work_dir.resolve()
    if work.exists() and (not work.is_dir() or any(work.iterdir())):
        raise InputError(f"--work-dir: {work} is not an empty folder; a profiling run needs a fresh one")
    if settings.ui_port_base is not None:
        _check_ports_free(HOST, range(settings.ui_port_base, settings.ui_port_base + settings.parallel))
    try:
        settings.vector(1.0)
    except ValidationError as exc:
        raise InputError(f"--changelog: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    return workload


def _check_ports_free(host: str, ports: range) -> None:
    from ft_core.local_ports import port_taken

    for port in ports:
        if port_taken(host, port):
            raise InputError(f"--ui-port-base: port {port} on {host} is in use; choose another base")


