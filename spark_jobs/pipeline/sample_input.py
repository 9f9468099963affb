"""A pipeline's seeded sample input written as files: in bulk, or appended in real time like a live feed.

Problem: primary, replica and reference jobs must read *the same* input, and a replay after a
failure must see the same records. Each input file ``<input>/<source>/part-NNNNNN.jsonl`` holds the
records a pipeline's :class:`~spark_jobs.pipeline.definition.SampleInput` gives for that source and
index (event times in ``[start + i * file_s, start + (i + 1) * file_s)``), so a file's content depends
only on the parameters and its index, whether it is written in bulk (:func:`write_seconds`, for tests
and references) or appended at the pace of event time (:func:`run_generator`, one file per ``file_s``
of wall time, resuming after the last file present). Files are written under a hidden name and
renamed, so Spark's file source never reads a partial file; bulk files get ascending modification
times so that the file source takes them in event-time order.

:class:`InputWatermark` computes, from the same deterministic files, the watermark a streaming run
reaches after reading files ``0 .. n-1``: what drills and profiling measure lags against.

    >>> from spark_jobs.workloads.topk import pipeline
    >>> w = pipeline.bind(["rate=10"])
    >>> len(w.records("requests", 0)), w.records("requests", 0) == w.records("requests", 0)
    (10, True)
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path


from spark_jobs.pipeline.definition import Workload


def file_name(index: int) -> str:
    return f"part-{index:06d}.jsonl"


def source_names(workload: Workload) -> list[str]:
    """The stream sources the sample input writes (static tables are the user's to provide)."""
    return [s.name for s in workload.stream_sources()]


def write_file(workload: Workload, input_dir: Path, source: str, index: int, mtime: float | None = None) -> Path:
    """Write one input file atomically (hidden temporary name, then rename)."""
    folder = workload.source(source).folder(input_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(index)
    tmp = folder / f".{file_name(index)}.tmp"
    with tmp.open("w") as fh:
        for rec in workload.records(source, index):
            fh.write(json.dumps(rec, separators=(",", ":")))
            fh.write("\n")
    if mtime is not None:
        os.utime(tmp, (mtime, mtime))
    tmp.replace(path)
    return path


def write_tables(workload: Workload, input_dir: Path) -> None:
    """Write the sample's static tables (``<input>/<table>/part-000000.jsonl``) unless they exist."""
    sample = workload.require_sample("a seeded input")
    if sample.tables is None:
        return
    for name, rows in sample.tables(workload.params).items():
        folder = workload.source(name).folder(input_dir)
        if (folder / file_name(0)).exists():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{file_name(0)}.tmp"
        tmp.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
        tmp.replace(folder / file_name(0))


def files_for_seconds(workload: Workload, seconds: float) -> int:
    return math.ceil(seconds / workload.file_s - 1e-9)


def write_seconds(workload: Workload, input_dir: Path, seconds: float, first: int = 0) -> int:
    """Write ``seconds`` of event time at once (files ``first`` .. ); returns the number of files
    per source. Modification times ascend with the index (1 ms apart, in the past)."""
    write_tables(workload, input_dir)
    count = files_for_seconds(workload, seconds)
    base = time.time() - 1.0 - (first + count) * 0.001
    for i in range(first, first + count):
        for source in source_names(workload):
            write_file(workload, input_dir, source, i, mtime=base + i * 0.001)
    return count


def existing_files(workload: Workload, input_dir: Path) -> int:
    """How many consecutive files (from index 0) every source already has."""
    n = 0
    while all((workload.source(s).folder(input_dir) / file_name(n)).exists() for s in source_names(workload)):
        n += 1
    return n


def run_generator(workload: Workload, input_dir: Path, duration_s: float | None = None,
                  speedup: float = 1.0, log=None, stop: threading.Event | None = None) -> int:
    """Append one file per source every ``file_s / speedup`` wall seconds (after its event-time
    slice has passed), resuming after the files already present; stop after ``duration_s`` wall
    seconds (None: until interrupted) or once ``stop`` is set (a drill feeds a job this way).
    Returns the index after the last file written."""
    write_tables(workload, input_dir)
    index = existing_files(workload, input_dir)
    start = time.monotonic()
    first = index
    stop = stop or threading.Event()
    while (duration_s is None or time.monotonic() - start < duration_s) and not stop.is_set():
        due = start + (index - first + 1) * workload.file_s / speedup
        delay = due - time.monotonic()
        if delay > 0:
            if duration_s is not None and time.monotonic() + delay - start > duration_s:
                break
            if stop.wait(delay):
                break
        for source in source_names(workload):
            write_file(workload, input_dir, source, index)
        if log is not None:
            log(index)
        index += 1
    return index


def file_max_ts(workload: Workload, source: str, index: int) -> int | None:
    """The largest event time (epoch ms) in input file ``index`` of ``source`` (None: the file is empty)."""
    column, unit = workload.source(source).event_time, getattr(workload.source(source), "time_unit", "ms")
    scale = 1000 if unit == "s" else 1
    records = workload.records(source, index)
    return max(int(r[column]) * scale for r in records) if records else None


class InputWatermark:
    """The event-time watermark a streaming run reaches after reading files ``0 .. n-1``:
    Spark's rule (per source: max event time - its watermark delay; several sources: the minimum),
    computed exactly from the deterministic files, one file at a time. A window is closed (emitted
    in append mode) once its end is <= this value.

        >>> from spark_jobs.workloads.topk import pipeline
        >>> work = pipeline.bind(["rate=10", "watermark_s=1"])
        >>> w = InputWatermark(work); w.add(0); w.add(1)
        >>> w.value_ms == max(r["ts"] for r in work.records("requests", 1)) - 1000
        True
    """

    def __init__(self, workload: Workload):
        self.workload = workload
        self.files = 0
        self._max = {s: None for s in source_names(workload)}

    def add(self, index: int) -> None:
        """Account for file ``index`` of every source (files are added in index order)."""
        for source in self._max:
            ts = file_max_ts(self.workload, source, index)
            if ts is not None and (self._max[source] is None or ts > self._max[source]):
                self._max[source] = ts
        self.files = max(self.files, index + 1)

    @property
    def value_ms(self) -> int | None:
        if any(v is None for v in self._max.values()):
            return None
        return min(v - int(round(self.workload.source(s).watermark_s * 1000)) for s, v in self._max.items())


def read_records(workload: Workload, input_dir: Path, source: str) -> list[dict]:
    """Every record of a source in the input folder (file order), for pure-Python checks."""
    out: list[dict] = []
    for path in sorted(workload.source(source).folder(input_dir).glob("part-*.jsonl")):
        with path.open() as fh:
            out.extend(json.loads(line) for line in fh if line.strip())
    return out
