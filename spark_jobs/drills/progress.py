"""A running job's progress as drills read it: its micro-batches (end time, watermark) from the
metrics its listener writes, and its output files with their modification times."""

from __future__ import annotations

import json
from pathlib import Path

from ft_core.store.stream_progress import iso_epoch_s


def batch_progress(output: Path) -> list[tuple[float, int]]:
    """Per completed micro-batch of a run: (wall time it ended, watermark ms it used)."""
    from spark_jobs.pipeline.metrics import read_metrics

    out = []
    for rec in read_metrics(Path(output) / "_metrics" / "metrics.jsonl"):
        start, mark = iso_epoch_s(rec.get("timestamp")), iso_epoch_s(rec.get("watermark"))
        if start is not None and mark is not None:
            out.append((start + (rec.get("batch_duration_ms") or 0) / 1000, round(mark * 1000)))
    return out


def watermark_of(output: Path) -> int | None:
    """The run's output watermark (ms), None before its first: Spark reports the epoch until event time has passed
    a watermark (a replica reading its backlog showed as 1,700,000,572 s behind its input)."""
    marks = [m for _, m in batch_progress(output) if m > 0]
    return max(marks) if marks else None


def recent_batch_s(output: Path, last: int = 3) -> float:
    """Median duration (s) of the run's last ``last`` micro-batches after its first (JVM warm-up) one."""
    from statistics import median

    from spark_jobs.pipeline.metrics import read_metrics

    records = read_metrics(Path(output) / "_metrics" / "metrics.jsonl")[1:]
    durations = [(rec.get("batch_duration_ms") or 0) / 1000 for rec in records[-last:]]
    return median(durations) if durations else 0.0


def first_batch_reaching(output: Path, watermark_ms: int, after: float) -> float | None:
    """The end time of the first micro-batch ending after ``after`` whose watermark >= ``watermark_ms``."""
    ends = [end for end, mark in batch_progress(output) if end > after and mark >= watermark_ms]
    return min(ends) if ends else None


def window_files(output: Path) -> list[tuple[float, list[dict]]]:
    """Per output file of a run (``batch-*.jsonl``, in order): its modification time and its rows."""
    files = []
    for path in sorted(Path(output).glob("batch-*.jsonl")):
        with path.open() as fh:
            files.append((path.stat().st_mtime, [json.loads(line) for line in fh if line.strip()]))
    return files


def window_slide_s(rows: list[dict]) -> float:
    """Seconds between consecutive windows of an output (the smallest gap between window starts):
    how many windows per second of event time consumers get."""
    starts = sorted({int(r["window_start"]) for r in rows})
    gaps = [b - a for a, b in zip(starts, starts[1:]) if b > a]
    return min(gaps) / 1000 if gaps else 1.0


def new_outputs(folder: str | Path, pattern: str, after_ts: float) -> list[tuple[float, str]]:
    """(mtime, name) of the non-empty files matching ``pattern`` changed after ``after_ts``, oldest first
    (e.g. a replica's first tentative outputs after a failure)."""
    found = []
    for p in Path(folder).glob(pattern) if Path(folder).is_dir() else []:
        try:
            st = p.stat()
        except FileNotFoundError:  # renamed away between the listing and the stat
            continue
        if p.is_file() and not p.name.startswith(".") and st.st_size > 0 and st.st_mtime > after_ts:
            found.append((st.st_mtime, p.name))
    return sorted(found)


def caught_up_now(checkpoint: str | Path, input_dir: str | Path, *, after_ts: float, max_lag_files: int,
                  output_dir: str | Path | None = None, watermark_ms: int | None = None) -> tuple[bool, str]:
    """Whether a query is caught up now, and what is missing otherwise: at most ``max_lag_files`` input
    files unprocessed (its steady lag), a batch committed after ``after_ts`` (it restarted), and, given
    ``output_dir`` and ``watermark_ms``, a micro-batch ending after ``after_ts`` that used a watermark of
    at least ``watermark_ms`` (the input's watermark when capacity came back: the drill's definition)."""
    from spark_jobs.runtime.stream_lag import file_source_lag

    try:
        lag = file_source_lag(checkpoint, input_dir)
    except (OSError, ValueError) as exc:  # a checkpoint file being written: the next poll reads it
        return False, f"lag not readable yet: {exc}"
    fresh = lag.last_commit_time is not None and lag.last_commit_time >= after_ts
    reached = watermark_ms is None or output_dir is None or \
        first_batch_reaching(Path(output_dir), watermark_ms, after_ts) is not None
    if fresh and reached and lag.lag_files <= max_lag_files and lag.input_files > 0:
        return True, ""
    return False, (f"{lag.lag_files} input files not processed (steady: {max_lag_files}), output watermark "
                   f"{'reached' if reached else 'not yet at'} {watermark_ms}" + ("" if fresh else " (no batch committed since)"))
