"""The input a predicted-accuracy replay reads: a folder laid out like the job's input, and the
event-time span over which its windows are complete.

Problem: the replica's tentative outputs during a failure are *complete* windows (the replica ran
all along; it saw every record of a window the failure held back). A replay over a finite sample
has partial windows at both ends (a sliding window that starts before the sample's first record or
ends after its last one); scoring those would make a plan look worse or better than it is. So
every sample comes with the span ``[lo, hi)`` of event time it covers, and only windows inside it
are scored.

Two kinds of sample:

- :func:`seeded_sample`: a pipeline with a :class:`~spark_jobs.pipeline.SampleInput` (the samples,
  the example, a drill): ``seconds`` of its seeded files from file index ``first``; the span is
  known exactly from the file slices. A drill replays files from an index range its own input never
  reaches, so a prediction is never scored against the windows it replayed.
- :func:`recent_sample`: a running job: the ``files`` newest files (by modification time) of each
  stream source of its input folder, linked (not copied) into the replay's folder, static tables
  whole; the span is the event-time range the stream sources have in common (computed by the replay
  from the records, :mod:`.replay`).

    >>> import tempfile; from pathlib import Path
    >>> from spark_jobs.pipeline.loading import load_workload
    >>> s = seeded_sample(load_workload("topk", ["rate=10"]), Path(tempfile.mkdtemp()), seconds=20)
    >>> s.span_ms[1] - s.span_ms[0], s.description
    (20000, 'seeded sample input: 20 s of event time from file 0')
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from ft_core.errors import InputError
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.sample_input import files_for_seconds, write_file, write_tables
from spark_jobs.pipeline.sources import FileSource


class ReplaySample(BaseModel):
    """A replay's input folder, the event-time span of complete windows (None: from the records), and
    what it is, in words."""

    input_dir: Path
    span_ms: tuple[int, int] | None
    description: str


def seeded_sample(workload: Workload, folder: Path, seconds: float, first: int = 0) -> ReplaySample:
    """Write ``seconds`` of the pipeline's seeded input (files ``first`` ..) into ``folder``."""
    workload.require_sample("a seeded replay without --input")
    count = files_for_seconds(workload, seconds)
    write_tables(workload, folder)
    for index in range(first, first + count):
        for source in workload.stream_sources():
            write_file(workload, folder, source.name, index)
    lo = workload.start_ms + round(first * workload.file_s * 1000)
    hi = workload.start_ms + round((first + count) * workload.file_s * 1000)
    return ReplaySample(input_dir=folder, span_ms=(lo, hi),
                        description=f"seeded sample input: {seconds:g} s of event time from file {first}")


def _data_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if p.is_file() and not p.name.startswith((".", "_")) and p.stat().st_size > 0]


def recent_sample(workload: Workload, input_dir: Path, folder: Path, files: int) -> ReplaySample:
    """Link the ``files`` newest input files of every stream source (and every static table file) of
    ``input_dir`` into ``folder``; InputError when a stream source has no file."""
    for source in workload.sources():
        if not isinstance(source, FileSource) and not source.static:
            raise InputError(f"--input: source {source.name} of {workload.name} is not a file source; a replay reads files")
        found = sorted(_data_files(source.folder(input_dir)), key=lambda p: p.stat().st_mtime, reverse=True)
        chosen = found if source.static else found[:files]
        if not chosen:
            raise InputError(f"--input: {source.folder(input_dir)} has no input file of source {source.name}")
        target = source.folder(folder)
        target.mkdir(parents=True, exist_ok=True)
        for path in chosen:
            os.symlink(path.resolve(), target / path.name)
    return ReplaySample(input_dir=folder, span_ms=None,
                        description=f"recent input: the {files} newest files per source of {input_dir}")
