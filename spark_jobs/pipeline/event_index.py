"""Per input file, its latest event time: which files a batch reference must read for the windows it checks.

A drill on a long-running job checks the windows around its fault, not the job's whole history; the
reference needs only the events at or after the first window it checks. Which files hold them is kept in
an index (one JSON file per job, beside its drill reports): per file of a file source, its size, its
modification time and its latest event time. A run reads only the files the index does not know yet (a
file whose size or modification time changed is read again), so a drill costs the input since the previous
drill, not the job's age. Spark lists the files, so hidden files, ``_``-prefixed files and partition folders
are treated as the streaming query treats them.

    >>> files_from({"a": {"size": 1, "mtime_ns": 1, "max_ms": 10}, "b": {"size": 1, "mtime_ns": 1, "max_ms": 3}}, 5)
    ['a']

Cost: one Spark listing of each source folder plus one scan of the new files (a ``max`` per file, grouped
by file); the index itself is O(files) JSON.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from ft_core.errors import ExternalError
from spark_jobs.pipeline.sources import FileSource


def local_path(uri: str) -> str:
    """A file URI as Spark lists it (``file:/a/b``, ``file:///a/b``, percent-encoded) -> ``/a/b``."""
    return unquote(urlparse(uri).path) if "://" in uri or uri.startswith("file:") else uri


def load(path: Path) -> dict[str, dict[str, dict]]:
    """The index at ``path`` (source name -> file -> {size, mtime_ns, max_ms}); empty when absent or unreadable."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def save(path: Path, index: dict[str, dict[str, dict]]) -> None:
    """Write the index whole, through a temporary file (a crash leaves the previous index)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(index))
    os.replace(tmp, path)


def refresh(spark, source: FileSource, input_dir: Path, known: dict[str, dict]) -> dict[str, dict]:
    """The source's files now, each with its latest event time (epoch ms; None for a file without events):
    entries of ``known`` whose size and modification time still match are kept, the others are read."""
    from pyspark.sql import functions as F

    listed = [local_path(u) for u in source.read(spark, input_dir, streaming=False).inputFiles()]
    files: dict[str, dict] = {}
    stale: list[str] = []
    for name in listed:
        st = os.stat(name)
        entry = known.get(name)
        if entry and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
            files[name] = entry
        else:
            files[name] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "max_ms": None}
            stale.append(name)
    if stale:
        df = source.read_files(spark, input_dir, stale)
        for row in (df.groupBy(F.input_file_name().alias("f"))
                    .agg(F.max(F.unix_millis(F.col(source.event_time))).alias("m")).collect()):
            name = local_path(row["f"])
            if name not in files:
                raise ExternalError(f"source {source.name}: Spark read {name!r}, which its listing did not name")
            files[name]["max_ms"] = row["m"]
    return files


def files_from(files: dict[str, dict], since_ms: int) -> list[str]:
    """The files holding an event at or after ``since_ms``, sorted."""
    return sorted(name for name, entry in files.items() if entry.get("max_ms") is not None and entry["max_ms"] >= since_ms)


def latest_event_ms(files: dict[str, dict]) -> int | None:
    """The source's newest event time over its indexed files (None: no event yet)."""
    return max((e["max_ms"] for e in files.values() if e.get("max_ms") is not None), default=None)
