"""How far a Structured Streaming query over file sources is behind its input: the input files not
yet processed in a committed micro-batch.

Spark's file source records, per micro-batch, the files it takes in ``<checkpoint>/sources/<n>/<batch>``
(a ``v1`` header, then one JSON line per file: ``{"path": "file:///...", "batchId": b}``; every tenth
batch a ``<batch>.compact`` file carries all entries so far), and marks a batch done by writing
``<checkpoint>/commits/<batch>``. A file counts as processed when its batch is committed; the lag is
the input files (not hidden, not ``_``-prefixed, non-empty) that are not processed yet. This is
exact for the project's workloads (file sources); a Kafka source would compare offsets instead.

Example::

    >>> import json, tempfile; from pathlib import Path
    >>> d = Path(tempfile.mkdtemp()); (d / "in").mkdir(); _ = (d / "in" / "a.json").write_text("{}")
    >>> file_source_lag(d / "ck", d / "in").lag_files
    1
    >>> (d / "ck" / "sources" / "0").mkdir(parents=True); (d / "ck" / "commits").mkdir()
    >>> _ = (d / "ck" / "sources" / "0" / "0").write_text("v1\\n" + json.dumps({"path": (d / "in" / "a.json").as_uri(), "batchId": 0}))
    >>> _ = (d / "ck" / "commits" / "0").write_text("v1\\n{}")
    >>> file_source_lag(d / "ck", d / "in").lag_files
    0
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from tenacity import retry, retry_if_exception_type, stop_after_attempt


@dataclass(frozen=True)
class StreamLag:
    input_files: int
    processed_files: int
    lag_files: int
    last_committed_batch: int | None
    last_commit_time: float | None  # the commit file's mtime (epoch seconds)


def _input_files(input_dir: Path) -> set[str]:
    found = set()
    for root, dirs, files in os.walk(input_dir):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for f in files:
            p = Path(root) / f
            if not f.startswith((".", "_")) and p.stat().st_size > 0:
                found.add(str(p.resolve()))
    return found


def _log_entries(folder: Path) -> list[dict]:
    entries = []
    for f in folder.iterdir() if folder.is_dir() else []:
        if f.name.startswith(".") or not (f.name.isdigit() or f.name.endswith(".compact")):
            continue
        for line in f.read_text().splitlines()[1:]:
            if line.strip():
                entries.append(json.loads(line))
    return entries


# Spark purges old log files while the query runs (their entries live on in a compact file): a file
# listed a moment ago can be gone when read. Reading the whole checkpoint again sees a consistent set.
@retry(retry=retry_if_exception_type(FileNotFoundError), stop=stop_after_attempt(5), reraise=True)
def file_source_lag(checkpoint: str | Path, input_dir: str | Path) -> StreamLag:
    checkpoint, input_dir = Path(checkpoint), Path(input_dir)
    commits = [int(f.name) for f in (checkpoint / "commits").iterdir() if f.name.isdigit()] \
        if (checkpoint / "commits").is_dir() else []
    last = max(commits) if commits else None
    processed: set[str] = set()
    if last is not None:
        for source in (checkpoint / "sources").iterdir() if (checkpoint / "sources").is_dir() else []:
            for e in _log_entries(source):
                if e.get("batchId", 0) <= last:
                    processed.add(str(Path(unquote(urlparse(e["path"]).path)).resolve()))
    inputs = _input_files(input_dir) if input_dir.is_dir() else set()
    return StreamLag(input_files=len(inputs), processed_files=len(processed & inputs), lag_files=len(inputs - processed),
                     last_committed_batch=last,
                     last_commit_time=(checkpoint / "commits" / str(last)).stat().st_mtime if last is not None else None)
