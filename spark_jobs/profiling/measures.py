"""Measures of a profiling copy: pure functions of its batches, input feed and output (see the package docstring)."""

from __future__ import annotations

import json
import statistics
from bisect import bisect_left
from pathlib import Path

import numpy as np

from ft_core.store.stream_progress import iso_epoch_s
from spark_jobs.profiling.reports import BatchSample
from spark_jobs.pipeline.feed import FeedMark

STEADY_BATCHES = 3
CONFIRM_BATCHES = 2


def read_batches(metrics: Path, restarts: list[float]) -> list[BatchSample]:
    """The completed micro-batches in a copy's metrics file; ``run`` is the number of relaunches
    (``restarts``, wall times) before the batch started. A zero watermark (none yet) is None."""
    from spark_jobs.pipeline.metrics import read_metrics

    out = []
    for rec in read_metrics(metrics):
        start = iso_epoch_s(rec.get("timestamp"))
        if start is None:
            continue
        mark = iso_epoch_s(rec.get("watermark"))
        out.append(BatchSample(run=sum(1 for t in restarts if t <= start), batch_id=int(rec["batch_id"]), start=start,
                               end=start + (rec.get("batch_duration_ms") or 0) / 1000.0,
                               rows=int(rec.get("num_input_rows") or 0),
                               watermark_ms=round(mark * 1000) if mark else None))
    return sorted(out, key=lambda b: b.end)


class InputTimeline:
    """When the input watermark first reached each value (from the feed's marks)."""

    def __init__(self, marks: list[FeedMark]):
        known = [m for m in sorted(marks, key=lambda m: m.index) if m.watermark_ms is not None]
        self._marks = [m.watermark_ms for m in known]
        self._walls = [m.wall for m in known]

    def available_at(self, watermark_ms: int) -> float | None:
        """The wall time of the first input file after which the input watermark was >= ``watermark_ms``."""
        i = bisect_left(self._marks, watermark_ms)
        return self._walls[i] if i < len(self._walls) else None


def with_lags(batches: list[BatchSample], timeline: InputTimeline) -> list[BatchSample]:
    """Each batch with its lag: end minus when the input reached the batch's watermark."""
    out = []
    for b in batches:
        avail = timeline.available_at(b.watermark_ms) if b.watermark_ms is not None else None
        out.append(b.model_copy(update={"lag_s": None if avail is None else b.end - avail}))
    return out


def steady_lag_bound_s(trigger_s: float, durations: list[float], file_s: float) -> float:
    """The largest lag of a job in steady operation: input waits up to one trigger period (or one
    batch when batches overrun it), is read by one batch, and its watermark emits the window in the
    next: ``2 max(TI, d) + 2 d``, plus one input file's granularity."""
    d = statistics.median(durations) if durations else 0.0
    return 2 * max(trigger_s, d) + 2 * d + file_s


def first_steady(batches: list[BatchSample], trigger_s: float, file_s: float) -> BatchSample | None:
    """The first batch (after the run's cold first one) starting ``STEADY_BATCHES`` consecutive batches
    whose lags are within :func:`steady_lag_bound_s`."""
    for i in range(1, len(batches) - STEADY_BATCHES + 1):
        window = batches[i:i + STEADY_BATCHES]
        bound = steady_lag_bound_s(trigger_s, [b.duration_s for b in window], file_s)
        if all(b.lag_s is not None and b.lag_s <= bound for b in window):
            return window[0]
    return None


def recovered_batch(after_restart: list[BatchSample], baseline_s: float, tolerance_s: float) -> BatchSample | None:
    """The first batch after a restart starting ``CONFIRM_BATCHES`` consecutive batches whose lag is
    back within the pre-failure steady level (``baseline_s + tolerance_s``)."""
    limit = baseline_s + tolerance_s
    for i in range(len(after_restart) - CONFIRM_BATCHES + 1):
        window = after_restart[i:i + CONFIRM_BATCHES]
        if all(b.lag_s is not None and b.lag_s <= limit for b in window):
            return window[0]
    return None


def kill_margin_s(trigger_s: float) -> float:
    """How long before the next checkpoint a failure is injected: 10% of the interval, 0.2-1 s."""
    return min(1.0, max(0.2, 0.1 * trigger_s))


def kill_time(last: BatchSample, trigger_s: float, typical_batch_s: float) -> tuple[float, bool]:
    """(when to kill, whether batches overrun the interval) after the last committed batch ``last``.

    Spark's ProcessingTimeExecutor starts the next batch at the next wall-clock multiple of the
    interval after the last trigger's start (at once when the batch overran): kill ``margin`` before
    it. When batches overrun, the next one starts at ``last.end`` and commits about one typical
    duration later: kill ``margin`` before that commit."""
    interval_ms = round(trigger_s * 1000)
    next_trigger = (int(last.start * 1000) // interval_ms + 1) * interval_ms / 1000.0
    margin = kill_margin_s(trigger_s)
    if next_trigger > last.end:
        return next_trigger - margin, False
    return last.end + typical_batch_s - margin, True


def in_periods(t: float, periods: list[tuple[float, float]]) -> int | None:
    """The index of the steady period ``(start, end]`` containing ``t``."""
    for i, (a, b) in enumerate(periods):
        if a < t <= b:
            return i
    return None


def steady_ingress(batches: list[BatchSample], periods: list[tuple[float, float]]) -> float:
    """Rows per second processed in the steady periods (batches ending inside, over the time from
    the period's start to the last of them)."""
    rows, span = 0, 0.0
    for a, b in periods:
        inside = [x for x in batches if a < x.end <= b]
        if inside:
            rows += sum(x.rows for x in inside)
            span += inside[-1].end - a
    return rows / span if span > 0 else 0.0


def written_windows(output: Path) -> list[tuple[int, float]]:
    """(window end ms, when its output file was written) for every window in a copy's sink."""
    first: dict[tuple[int, int], float] = {}
    for path in sorted(Path(output).glob("batch-*.jsonl")):
        mtime = path.stat().st_mtime
        with path.open() as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    key = (int(row["window_start"]), int(row["window_end"]))
                    first[key] = min(mtime, first.get(key, mtime))
    return [(end, t) for (_, end), t in sorted(first.items())]


def window_latencies_ms(windows: list[tuple[int, float]], timeline: InputTimeline,
                        periods: list[tuple[float, float]]) -> list[float]:
    """Latency of each window closed and written inside one steady period: written minus when the
    input that closed it (input watermark >= window end) was available."""
    out = []
    for end_ms, written in windows:
        avail = timeline.available_at(end_ms)
        if avail is None:
            continue
        period = in_periods(written, periods)
        if period is not None and periods[period][0] <= avail <= written:
            out.append((written - avail) * 1000.0)
    return out


def outlier_filtered_mean(samples: list[float], quantile: float = 99.9) -> float:
    """The mean after dropping samples above the ``quantile``-th percentile (the paper averages
    "over the 0.999 percentile in order to filter outliers")."""
    if not samples:
        raise ValueError("no samples")
    cut = float(np.percentile(samples, quantile))
    return float(np.mean([s for s in samples if s <= cut]))


def catch_up_rate(batches: list[BatchSample]) -> float:
    """The highest processing rate (rows per second of batch duration) among ``batches``."""
    rates = [b.rows / b.duration_s for b in batches if b.duration_s > 0 and b.rows > 0]
    return max(rates, default=0.0)


def checkpoint_costs_ms(event_dir: Path) -> dict[int, float]:
    """Per batch id, the commit work of its micro-batch from the progress events in Spark event
    logs: ``walCommit + commitOffsets + sum(stateOperators.commitTimeMs)`` (the last run's value for
    a replayed batch). Lines of a log cut short by a kill are skipped."""
    costs: dict[int, tuple[float, float]] = {}
    logs = [p for p in sorted(Path(event_dir).rglob("*")) if p.is_file() and not p.name.startswith((".", "appstatus"))]
    for path in logs:
        with path.open(errors="replace") as fh:
            for line in fh:
                if "QueryProgressEvent" not in line:
                    continue
                try:
                    progress = json.loads(line)["progress"]
                except (json.JSONDecodeError, KeyError):
                    continue
                durations = progress.get("durationMs") or {}
                state = sum(op.get("commitTimeMs") or 0 for op in progress.get("stateOperators") or [])
                stamp = iso_epoch_s(progress.get("timestamp")) or 0.0
                cost = float(durations.get("walCommit", 0) + durations.get("commitOffsets", 0) + state)
                batch = int(progress["batchId"])
                if batch not in costs or costs[batch][0] <= stamp:
                    costs[batch] = (stamp, cost)
    return {batch: cost for batch, (_, cost) in costs.items()}


