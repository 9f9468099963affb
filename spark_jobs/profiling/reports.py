"""The samples a profiling copy records and the reports built from them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ft_core.checkpoint.tuning import CheckpointPlan
from ft_core.checkpoint.variant_choice import VariantChoice
from spark_jobs.profiling.vector import CheckpointVector, LineageCheck
from spark_jobs.pipeline.feed import FeedMark


class BatchSample(BaseModel):
    """One completed micro-batch of a copy (``run`` 0 is the first launch, ``run`` i the restart after
    failure i)."""

    run: int
    batch_id: int
    start: float
    end: float
    rows: int
    watermark_ms: int | None
    lag_s: float | None = None

    @property
    def duration_s(self) -> float:
        return self.end - self.start


class FailureSample(BaseModel):
    """One injected failure of a copy, with the times that define T, R, W and the recovery time."""

    index: int
    t_kill: float
    killed_after_batch: int
    since_last_trigger_s: float = Field(description="kill time minus the start of the last committed batch (~E)")
    overrunning: bool = Field(description="batches ran back to back (duration >= trigger interval)")
    t_restart: float
    detection_s: float
    resumed_batch_id: int
    restore_s: float
    first_batch_s: float
    first_batch_rows: int
    warmup_s: float
    catch_up_batches: int
    catch_up_rate: float
    baseline_lag_s: float
    recovered_at: float
    recovery_time_s: float
    lineage_unchanged: bool


class OutputCheck(BaseModel):
    equals_reference: bool
    final_watermark_ms: int | None
    windows: int
    lost_windows: int
    duplicated_windows: int


class CopyResult(BaseModel):
    """Everything measured on one copy (the raw samples) and its per-copy figures."""

    copy_id: str
    repetition: int
    vector: CheckpointVector
    avg_ingress_rate: float
    max_ingress_rate: float
    avg_latency_ms: float
    latency_windows: int
    restore_s: float
    warmup_s: float
    detection_s: float
    recovery_time_s: float = Field(description="mean measured TRT over the failures")
    checkpoint_duration_ms: float | None
    steady_periods: list[tuple[float, float]]
    failures: list[FailureSample]
    latency_samples_ms: list[float]
    batches: list[BatchSample]
    output: OutputCheck | None = None
    final_exit_code: int | None
    started_at: float
    finished_at: float
    output_dir: str
    load_1m: float | None = Field(default=None, description="the machine's mean 1-minute load average while the "
                                  "copy ran (other copies and other programs compete for its cores)")


class IntervalRow(BaseModel):
    """The per-interval summary a CLI prints (means over the interval's copies)."""

    checkpoint_interval_ms: float
    copies: int
    avg_ingress_rate: float
    max_ingress_rate: float
    utilisation: float
    avg_latency_ms: float
    restore_s: float
    warmup_s: float
    measured_recovery_s: float
    checkpoint_duration_ms: float | None
    outputs_equal_reference: bool
    lost_windows: int
    duplicated_windows: int
    load_1m: float | None = None


class ProfileRaw(BaseModel):
    """The raw file written next to the profiles document."""

    kind: Literal["profile", "validate"]
    settings: dict
    vector: CheckpointVector
    params: dict
    started_at: float
    finished_at: float
    feed: list[FeedMark]
    copies: list[CopyResult]


class ProfileReport(BaseModel):
    """What ``ftops profile checkpoint --json`` prints."""

    workload: str
    profiles: str
    raw: str
    vector: CheckpointVector
    intervals: list[IntervalRow]
    warnings: list[str]
    elapsed_s: float


class VariantError(BaseModel):
    predicted_recovery_s: float | None
    recovery_error: float | None


class RunConditions(BaseModel):
    """What competed with a profile's or a validation's copies for the machine."""

    copies_at_once: int
    cores: int
    load_1m: float | None = Field(description="mean 1-minute load average over the copies")

    def describe(self) -> str:
        load = "load not measured" if self.load_1m is None else f"load average {self.load_1m:.1f}"
        return f"{self.copies_at_once} cop{'y' if self.copies_at_once == 1 else 'ies'} at once on {self.cores} cores, {load}"


class ValidationReport(BaseModel):
    """What ``ftops profile validate --json`` prints: Chiron's prediction against a measured run."""

    workload: str
    profiles: str
    raw: str
    plan: CheckpointPlan
    validated_interval_ms: float
    predicted_latency_ms: float
    predicted_recovery_s: float
    measured_latency_ms: float
    measured_recovery_s: float
    measured_recovery_per_failure_s: list[float]
    latency_error: float
    recovery_error: float
    recovery_error_per_failure: list[float]
    recovery_target: float
    target_met: bool = Field(description="the predicted recovery is within recovery_target of the measured one")
    validated: bool = Field(description="target_met, and every copy's output equals the reference")
    validated_case: str = Field(description="the case the injected failures realise (a kill just before a "
                                "checkpoint: max); the prediction is the recovery model of this case")
    reason: str = Field(description="why the prediction validated or not, in numbers")
    variant_choice: VariantChoice | None = Field(description="how the variant was chosen (None: it was given)")
    profile_conditions: RunConditions | None
    conditions: RunConditions
    by_variant: dict[str, VariantError]
    lineage: LineageCheck
    copies: list[IntervalRow]
    outputs_equal_reference: bool
    lost_windows: int
    duplicated_windows: int
    elapsed_s: float


