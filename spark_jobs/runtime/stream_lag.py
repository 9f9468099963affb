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


def _real(path: str, dirs: dict[str, str]) -> str:
    """``path`` with its folder's symbolic links resolved (once per folder: a source log names thousands of
    files in a handful of folders), the file's own name kept, as Spark's listing names it."""
    head, name = os.path.split(path)
    if head not in dirs:
        dirs[head] = os.path.realpath(head)
    return os.path.join(dirs[head], name)


def _input_files(input_dir: Path, dirs: dict[str, str]) -> set[str]:
    found = set()
    for root, subdirs, files in os.walk(input_dir):
        subdirs[:] = [d for d in subdirs if not d.startswith((".", "_"))]
        for f in files:
            if not f.startswith((".", "_")) and os.stat(os.path.join(root, f)).st_size > 0:
                found.add(_real(os.path.join(root, f), dirs))
    return found


def _log_entries(folder: Path) -> list[dict]:
    """A source log's entries: its newest compact file (every entry up to that batch) and the batch files after
    it, as Spark reads it back (older files repeat what the compact file holds)."""
    files = [f for f in folder.iterdir() if not f.name.startswith(".")] if folder.is_dir() else []
    compacts = [f for f in files if f.name.endswith(".compact") and f.name.split(".")[0].isdigit()]
    newest = max(compacts, key=lambda f: int(f.name.split(".")[0]), default=None)
    after = int(newest.name.split(".")[0]) if newest else -1
    entries = []
    for f in ([newest] if newest else []) + [f for f in files if f.name.isdigit() and int(f.name) > after]:
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
    dirs: dict[str, str] = {}
    if last is not None:
        for source in (checkpoint / "sources").iterdir() if (checkpoint / "sources").is_dir() else []:
            for e in _log_entries(source):
                if e.get("batchId", 0) <= last:
                    processed.add(_real(unquote(urlparse(e["path"]).path), dirs))
    inputs = _input_files(input_dir, dirs) if input_dir.is_dir() else set()
    return StreamLag(input_files=len(inputs), processed_files=len(processed & inputs), lag_files=len(inputs - processed),
                     last_committed_batch=last,
                     last_commit_time=(checkpoint / "commits" / str(last)).stat().st_mtime if last is not None else None)
