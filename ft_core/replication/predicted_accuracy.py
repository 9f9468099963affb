"""Predicted tentative accuracy: what a replication plan's tentative outputs will score, summarised.

Problem (issue 15): output fidelity (OF, paper 000 Eq. 1-4) is a proxy computed from task rates;
users read it as "how good my tentative results will be", and on a top-k query the two differ a
lot (a half sample of the servers still finds most of the true top-k). The *predicted accuracy* of
a plan is measured instead of modelled: a recent sample of the job's input is replayed through the
pipeline twice, whole and restricted to the plan's tasks (exactly as the replica runs), and the
pipeline's own accuracy function scores the restricted output against the whole one, per
event-time window (the replay itself runs on Spark: :mod:`spark_jobs.accuracy`). This module holds
the pure part: the typed estimate and its summary over windows.

Algorithm: mean, population standard deviation, minimum and maximum of the per-window scores;
O(windows). A plan with no window to score (the sample closed none whose accurate answer is
non-empty) has no estimate (``mean`` None), never a made-up number.

    >>> est = summarize(["O1[0]", "O3[0]"], [1.0, 0.5, 0.75], "seeded sample, 60 s")
    >>> est.mean, round(est.stdev, 3), est.min, est.max, est.windows
    (0.75, 0.204, 0.5, 1.0, 3)
    >>> summarize([], [], "empty input").mean is None
    True
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel, Field


class AccuracyEstimate(BaseModel):
    """A plan's predicted tentative accuracy over the windows of one replayed input sample."""

    tasks: list[str] = Field(description="the plan's replicated tasks")
    mean: float | None = Field(description="mean accuracy over the scored windows (None: no window to score)")
    stdev: float | None = Field(description="population standard deviation of the per-window accuracy")
    min: float | None
    max: float | None
    windows: int = Field(ge=0, description="windows scored (complete windows of the sample with an accurate answer)")
    per_window: list[float] = Field(default_factory=list, description="the scores, in window order")
    sample: str = Field(description="what was replayed")

    def spread(self) -> str:
        """``0.812 ± 0.104 (0.50-1.00, 58 windows)`` or ``-``."""
        if self.mean is None:
            return "-"
        return f"{self.mean:.3f} ± {self.stdev:.3f} ({self.min:.2f}-{self.max:.2f}, {self.windows} windows)"

    def covers(self, value: float, sigmas: float = 2.0) -> bool:
        """Whether ``value`` (a measured mean accuracy) lies within ``sigmas`` standard deviations
        of the predicted mean, clipped to the observed range of single windows."""
        if self.mean is None:
            return False
        lo = max(self.min, self.mean - sigmas * self.stdev)
        hi = min(self.max, self.mean + sigmas * self.stdev)
        return lo - 1e-9 <= value <= hi + 1e-9


def summarize(tasks: list[str], scores: list[float], sample: str) -> AccuracyEstimate:
    """The estimate of one plan from its per-window scores (see the module docstring)."""
    values = [float(s) for s in scores]
    if not values:
        return AccuracyEstimate(tasks=sorted(tasks), mean=None, stdev=None, min=None, max=None, windows=0, sample=sample)
    return AccuracyEstimate(tasks=sorted(tasks), mean=statistics.fmean(values), stdev=statistics.pstdev(values),
                            min=min(values), max=max(values), windows=len(values), per_window=values, sample=sample)
