"""A chaos drill's documents: what to drill (:class:`DrillConfig`), the ports it takes (:class:`DrillPorts`)
and what it measured (:class:`DrillReport`, the CLI contract of ``ftops drill run --json``).

The drill itself is :mod:`spark_jobs.drills.local` (its steps the drill engine's, :mod:`spark_jobs.drills.engine`); the benchmarks (``bench drills``, ``bench partitions``,
``bench redundancy``) build these configurations and read these reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from ft_core.replication.predicted_accuracy import AccuracyEstimate
from spark_jobs.drills.ports import DEFAULT_PORT_BASE
from spark_jobs.drills.replica_cost import ReplicaCost


class DrillConfig(BaseModel):
    """What to drill and how (ports: see :class:`DrillPorts`)."""

    model_config = ConfigDict(extra="forbid")

    pipeline: str = Field(description="the pipeline: a sample's name, module:attribute or a .py file")
    work_dir: Path
    params: list[str] = Field(default_factory=list, description="pipeline parameters key=value")
    plan: Path | None = Field(default=None, description="a replication plan (ftops plan replication --json)")
    budget: int | None = Field(default=None, ge=0, description="without --plan: plan R replicas with `algorithm`")
    algorithm: Literal["exact", "structure-aware", "greedy"] = "structure-aware"
    fail_domain: str = "rack-a"
    fault: Literal["host-down", "partition"] = Field(default="host-down", description="host-down kills the domain; "
                                                     "partition cuts it off the network (namespaces only)")
    network: Literal["loopback", "namespaces"] = Field(default="loopback", description="namespaces: a host per daemon "
                                                       "on a private bridge (root)")
    subnet: int | None = Field(default=None, ge=1, le=250, description="namespaces: 198.18.<subnet>.0/24 (default: free one)")
    primary_workers: int = Field(default=2, ge=1, description="workers (one core each) in the failure domain")
    standby_workers: int = Field(default=1, ge=1)
    kill_driver: bool = False
    new_capacity_after_s: float = Field(default=30.0, ge=0)
    trigger_s: float = Field(default=1.0, gt=0)
    speedup: float = Field(default=1.0, gt=0, description="event seconds generated per wall second")
    steady_windows: int = Field(default=1, ge=1, description="windows the primary must have delivered before the failure")
    steady_lag_s: float = Field(default=8.0, gt=0, description="steady: watermarks within this many wall seconds "
                                "(plus three recent batch durations) of the input's")
    worker_timeout_s: int = Field(default=5, ge=1, description="the master declares a silent worker dead after this")
    port_base: int = Field(default=DEFAULT_PORT_BASE, ge=1024, le=65000)
    timeout_s: float = Field(default=600.0, gt=0, description="deadline of each wait")
    serve: bool = Field(default=False, description="run the serving view (spark_jobs.serving_view) over the primary "
                        "and replica sinks and report what its consumers saw")
    predict_accuracy: bool = Field(default=True, description="estimate the plan's tentative accuracy before the failure")
    objective: Literal["output-fidelity", "accuracy"] = Field(default="output-fidelity", description="with --budget")
    accuracy_sample_s: float = Field(default=240.0, gt=0, description="event seconds the accuracy replay reads")


class DrillPorts(BaseModel):
    """Every port a drill uses, as offsets from one base (so parallel drills can coexist)."""

    primary_port: int
    standby_port: int
    primary_ui: int
    standby_ui: int
    worker_port_base: int
    worker_ui_base: int
    primary_driver_ui: int
    replica_driver_ui: int

    @classmethod
    def from_base(cls, base: int) -> DrillPorts:
        return cls(primary_port=base + 77, standby_port=base + 78, primary_ui=base + 90, standby_ui=base + 91,
                   worker_port_base=base + 100, worker_ui_base=base + 200, primary_driver_ui=base + 40,
                   replica_driver_ui=base + 41)

    @staticmethod
    def role(offset: int) -> str:
        """What a drill runs on port BASE+``offset``.

            >>> DrillPorts.role(77), DrillPorts.role(201)
            ('the primary master', "a worker's UI")
        """
        named = {77: "the primary master", 78: "the standby master", 90: "the primary master's UI",
                 91: "the standby master's UI", 40: "the primary driver's UI", 41: "the replica driver's UI"}
        ranges = {100: "a worker", 150: "a worker", 200: "a worker's UI", 250: "a worker's UI"}  # given back too
        low = offset - offset % 50
        return named.get(offset) or ranges.get(low, "none of the drill's ports")


class DrillReport(BaseModel):
    """The result of one drill (the first eleven fields are the CLI contract of issues 4 and 15)."""

    workload: str = Field(description="the pipeline's name")
    plan_tasks: list[str]
    predicted_output_fidelity: float
    predicted_accuracy: float | None = Field(default=None, description="the replay's mean (None: not estimated)")
    tentative_accuracy: float | None = Field(description="mean over the failure windows (None: no failure window)")
    tentative_accuracy_per_window: list[float]
    time_to_first_tentative_s: float | None
    time_to_caught_up_s: float | None
    lost_windows: int
    duplicated_windows: int
    output_equals_reference: bool
    predicted_internal_completeness: float
    failure_window_starts_ms: list[int]
    lost_window_starts_ms: list[int]
    duplicated_window_starts_ms: list[int]
    windows_expected: int
    fail_domain: str
    fault: str = "host-down"
    network: str = "loopback"
    subnet: int | None = Field(default=None, description="namespaces: the network's 198.18.<subnet>.0/24")
    killed: list[str]
    kill_driver: bool
    recovery: str
    primary_driver_restarts: int
    detection_s: float | None
    new_capacity_after_s: float
    capacity_alive_s: float | None
    params: dict
    budget: int | None
    algorithm: str | None
    replica_cost: ReplicaCost | None = Field(default=None, description="the replica's executor CPU per input record "
                                              "against the primary's, before the failure (event logs)")
    work_dir: str
    elapsed_s: float
    serve: bool = False
    serve_windows_per_s: float | None = Field(default=None, description="failure windows the view first served per "
                                              "second, from the kill to the primary's catch-up")
    serve_expected_windows_per_s: float | None = Field(default=None, description="the input's window rate (speedup / slide)")
    serve_gap_windows: int | None = Field(default=None, description="failure windows missing from the view while the "
                                          "primary was down (not served before the primary delivered them)")
    serve_gap_window_starts_ms: list[int] = Field(default_factory=list)
    serve_max_staleness_s: float | None = None
    serve_tentative_windows: int | None = None
    serve_equals_reference: bool | None = Field(default=None, description="final view, tentative flags removed, == reference")
    predicted_accuracy_estimate: AccuracyEstimate | None = Field(default=None, description="spread, windows, sample")
    objective: str = "output-fidelity"
    design_warnings: list[str] = Field(default_factory=list, description="what the check of the drill's design "
                                       "warned about before it started (spark_jobs.drills.design)")
    experiment_id: int | None = Field(default=None, description="the drill's number in its private history store "
                                      "(its experiment report: <work_dir>/drills/drill-<id>/experiment.json)")
    experiment_verdict: str | None = Field(default=None, description="the drill engine's verdict (spark_jobs.drills.engine)")
    experiment_reasons: list[str] = Field(default_factory=list, description="why the drill engine failed or aborted it: "
                                          "output, recovery bound, steady state after, failure domains as before")
    predicted_caught_up_s: float | None = Field(default=None, description="the engine's forecast of the time caught up, "
                                                "made before the fault (None: nothing to forecast from)")
    caught_up_error: float | None = Field(default=None, description="(predicted - measured) / measured time caught up")

    @computed_field(description="passed: the primary's final output equals the reference (no window lost or "
                    "duplicated), at least one failure window was measured, with the serving view its final content "
                    "equals the reference, and the drill engine passed the drill (recovery bound, steady state after, "
                    "failure domains as before); else failed (the reasons in verdict_reasons)")
    @property
    def verdict(self) -> Literal["passed", "failed"]:
        return "failed" if self.verdict_reasons else "passed"

    @computed_field(description="why the drill failed (empty when it passed)")
    @property
    def verdict_reasons(self) -> list[str]:
        """What makes a drill fail, from its measurements.

            >>> r = DrillReport.model_construct(output_equals_reference=False, lost_windows=2, duplicated_windows=0,
            ...                                 tentative_accuracy_per_window=[], serve=False)
            >>> r.verdict, r.verdict_reasons  # doctest: +NORMALIZE_WHITESPACE
            ('failed', ['the output differs from the batch reference: 2 windows lost, 0 duplicated',
                        'no failure window measured: no window ended while the primary was down (lengthen
                        --new-capacity-after or raise --speedup)'])
        """
        from spark_jobs.drills.engine import output_problem

        output = output_problem(self.lost_windows, self.duplicated_windows, self.output_equals_reference)
        reasons = [output] if output else []
        if not self.tentative_accuracy_per_window:
            reasons.append("no failure window measured: no window ended while the primary was down (lengthen "
                           "--new-capacity-after or raise --speedup)")
        if self.serve and self.serve_equals_reference is False:
            reasons.append("the serving view's final content differs from the batch reference")
        return reasons + [r for r in self.experiment_reasons if r not in reasons]
