"""A Structured Streaming checkpoint's logs, parsed as Spark (4.x, and the 3.x layout) writes them.

Problem: the audit of an attached job (:mod:`spark_jobs.attach.checkpoint_audit`) must read what the job
recorded without Spark (no JVM in a drill's verdict) and without trusting the files: a hand edit, a
truncated copy or a newer format must end in one :class:`~ft_core.errors.InputError` naming the file.

Method: every log is an ``HDFSMetadataLog``: one file per batch, named by the batch id. Spark counts a file
as a batch file when its name parses as a Java ``long`` (``Long.parseLong``: optional sign, ASCII digits),
so ``7``, ``07`` and ``+7`` are all batch 7 to Spark's listing, while ``.7.crc`` (Hadoop's checksum),
``7.crc`` (Spark's checksum manager) and ``.7.<uuid>.tmp`` (a write that never got renamed) are not.
:func:`list_log` groups the files by the id Spark gives them, so a batch written twice shows as two files
for one id. Compactible logs (a file source's ``sources/<i>/``) also name a compaction ``<id>.compact``.

- ``offsets/<id>`` (``OffsetSeqLog``): ``v1`` or ``v2``; a metadata JSON line (``batchWatermarkMs``,
  ``batchTimestampMs``, ``conf``; v2 adds ``sourceMetadataInfo``); then one line per source with the
  batch's END offset, ``-`` for a source without one (v1: source ``i`` is line ``i``; v2: ``<sourceId>:<offset>``).
- ``commits/<id>`` (``CommitLog``): ``v1``-``v3`` and a JSON line with ``nextBatchWatermarkMs``.
- ``sources/<i>/``: the source's own log: a file source's listed files per log id (``{"path", "timestamp",
  "batchId"}`` lines, compacted every ``spark.sql.streaming.fileSource.log.compactInterval`` ids), the rate
  source's start time in ``0``, a Kafka source's initial offsets in ``0`` (after a NUL byte).

Cost: one read per file, each bounded by ``FTOPS_MAX_DOCUMENT_BYTES``. Limits: versions newer than the ones
above are refused (their lines may mean something else); S3-like stores whose listings lag are read as listed;
a file that a running query purges between listing and reading raises :class:`Vanished`.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "7").write_text('v1\\n{"batchWatermarkMs":0,"batchTimestampMs":5,"conf":{}}\\n{"logOffset":3}\\n-')
    >>> _ = (d / ".7.crc").write_bytes(b"x"); _ = (d / "07").write_text("v1")
    >>> files = list_log(d)
    >>> sorted(f.path.name for f in files[7])
    ['07', '7']
    >>> read_offsets(canonical(files[7]), "offsets").offsets
    {'0': {'logOffset': 3}, '1': None}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ft_core.errors import InputError
from ft_core.input.decoding import decode_text
from ft_core.input.documents import parse_text
from ft_core.input.limits import current_limits, exceeds

_LONG = re.compile(r"[+-]?[0-9]+")  # java.lang.Long.parseLong on the file name, as HDFSMetadataLog lists
_VERSION = re.compile(r"v([0-9]{1,9})")
COMPACT_SUFFIX = ".compact"
OFFSETS_VERSIONS = (1, 2)
COMMITS_VERSIONS = (1, 2, 3)


class Vanished(InputError):
    """A log file listed a moment ago is gone: the running query purged it (read the checkpoint again)."""


@dataclass(frozen=True)
class LogFile:
    """One batch file of a metadata log: the id Spark reads from its name, the file, its modification time (s)."""

    batch_id: int
    path: Path
    mtime: float


@dataclass(frozen=True)
class OffsetsEntry:
    """``offsets/<id>``: the batch's end offset per source id (None for ``-``), as parsed JSON."""

    batch_id: int
    version: int
    watermark_ms: int | None  # None: the entry has no metadata line (Spark before 2.1)
    timestamp_ms: int | None
    offsets: dict[str, Any]
    providers: dict[str, str] = field(default_factory=dict)  # v2: source id -> provider name, when recorded
    mtime: float = 0.0


@dataclass(frozen=True)
class CommitEntry:
    """``commits/<id>``: the batch committed; the watermark its successor was planned with."""

    batch_id: int
    version: int
    next_watermark_ms: int
    mtime: float


def batch_id_of(name: str, compact: bool = False) -> int | None:
    """The batch id Spark reads from a log file's name (None: not a batch file); ``compact``: a compactible
    log, where ``<id>.compact`` is batch ``<id>`` too.

    >>> [batch_id_of(n) for n in ("12", "012", "+12", ".12.crc", "12.crc", ".12.9f1c.tmp", "12.compact")]
    [12, 12, 12, None, None, None, None]
    >>> batch_id_of("9.compact", compact=True)
    9
    """
    if compact and name.endswith(COMPACT_SUFFIX):
        name = name[: -len(COMPACT_SUFFIX)]
    if not _LONG.fullmatch(name):
        return None
    value = int(name)
    return value if -(2 ** 63) <= value < 2 ** 63 else None


def list_log(folder: Path, compact: bool = False) -> dict[int, list[LogFile]]:
    """The batch files of the log in ``folder`` by batch id (several files for one id: written twice); an
    absent folder is an empty log. Directories named like batches are not batch files (Spark skips them)."""
    if not folder.is_dir():
        return {}
    files: dict[int, list[LogFile]] = {}
    try:
        children = sorted(folder.iterdir())
    except OSError as exc:
        raise InputError(f"checkpoint folder {str(folder)!r} cannot be listed: {exc.strerror or exc}",
                         field="checkpoint") from None
    for child in children:
        batch = batch_id_of(child.name, compact)
        if batch is None or not child.is_file():
            continue
        try:
            mtime = child.stat().st_mtime
        except FileNotFoundError:  # purged by the running query since the listing
            continue
        files.setdefault(batch, []).append(LogFile(batch, child, mtime))
    return files


def canonical(files: list[LogFile]) -> LogFile:
    """The file Spark reads for a batch (named ``str(id)``, or ``<id>.compact``), else the first listed."""
    batch = files[0].batch_id
    for f in files:
        if f.path.name in (str(batch), f"{batch}{COMPACT_SUFFIX}"):
            return f
    return files[0]


def read_lines(path: Path, what: str) -> list[str]:
    """The text lines of a checkpoint file, bounded and decoded; a leading NUL byte (Kafka's initial offsets)
    is dropped."""
    limits = current_limits()
    try:
        with path.open("rb") as fh:
            data = fh.read(limits.max_document_bytes + 1)
    except FileNotFoundError:
        raise Vanished(f"{what} {str(path)!r} was deleted while the checkpoint was read (purged by the running "
                       "query?)", field="checkpoint") from None
    except OSError as exc:
        raise InputError(f"{what} {str(path)!r} cannot be read: {exc.strerror or exc}", field="checkpoint") from None
    if len(data) > limits.max_document_bytes:
        raise InputError(f"{what} {str(path)!r} is too large: it "
                         f"{exceeds('max_document_bytes', f'more than {limits.max_document_bytes}', limits)}",
                         field="checkpoint")
    if data.startswith(b"\x00"):
        data = data[1:]
    text = decode_text(data, f"{what} {str(path)!r}", field="checkpoint")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if len(lines) > 1 and not lines[-1] else lines  # Spark's reader ends at a final newline


def _version(lines: list[str], path: Path, what: str, known: tuple[int, ...]) -> int:
    match = _VERSION.fullmatch(lines[0].strip()) if lines else None
    if match is None:
        raise InputError(f"{what} {str(path)!r}: the first line is {lines[0][:40]!r} where Spark writes a version "
                         "such as 'v1' (not a Structured Streaming log file, or cut short)", field="checkpoint")
    version = int(match[1])
    if version not in known:
        raise InputError(f"{what} {str(path)!r}: log version v{version}; this audit reads "
                         f"v{known[0]}-v{known[-1]} (written by a newer Spark?)", field="checkpoint")
    return version


def _json(text: str, path: Path, what: str, line: int) -> Any:
    return parse_text(text, "json", "checkpoint", label=f"{what} {str(path)!r} line {line}")


def _long(doc: dict, key: str, path: Path, what: str, default: int | None = None) -> int | None:
    value = doc.get(key, default)
    if value is not None and (type(value) is not int):
        raise InputError(f"{what} {str(path)!r}: {key} is {value!r}, not a whole number", field="checkpoint")
    return value


def read_offsets(f: LogFile, what: str = "offsets entry") -> OffsetsEntry:
    """``offsets/<id>`` (see the module docstring)."""
    lines = read_lines(f.path, what)
    version = _version(lines, f.path, what, OFFSETS_VERSIONS)
    if len(lines) < 2:
        raise InputError(f"{what} {str(f.path)!r}: no metadata line after the version (cut short)", field="checkpoint")
    meta: dict = {}
    if lines[1].strip():
        meta = _json(lines[1], f.path, what, 2)
        if not isinstance(meta, dict):
            raise InputError(f"{what} {str(f.path)!r} line 2: the batch metadata is not a JSON object",
                             field="checkpoint")
    offsets: dict[str, Any] = {}
    for number, line in enumerate(lines[2:], start=3):
        if version == 2:
            source, colon, text = line.partition(":")
            if not colon or not source:
                raise InputError(f"{what} {str(f.path)!r} line {number}: {line[:40]!r} is not '<sourceId>:<offset>'",
                                 field="checkpoint")
        else:
            source, text = str(number - 3), line
        if source in offsets:
            raise InputError(f"{what} {str(f.path)!r} line {number}: source {source!r} twice", field="checkpoint")
        offsets[source] = None if text.strip() == "-" else _json(text, f.path, what, number)
    info = meta.get("sourceMetadataInfo") if isinstance(meta.get("sourceMetadataInfo"), dict) else {}
    providers = {str(k): v["providerName"] for k, v in info.items()
                 if isinstance(v, dict) and isinstance(v.get("providerName"), str)}
    return OffsetsEntry(f.batch_id, version,
                        _long(meta, "batchWatermarkMs", f.path, what, 0) if meta else None,
                        _long(meta, "batchTimestampMs", f.path, what, 0) if meta else None,
                        offsets, providers, f.mtime)


def read_commit(f: LogFile, what: str = "commit entry") -> CommitEntry:
    """``commits/<id>`` (see the module docstring); a missing metadata line is ``{}``, as Spark reads it."""
    lines = read_lines(f.path, what)
    version = _version(lines, f.path, what, COMMITS_VERSIONS)
    meta = _json(lines[1], f.path, what, 2) if len(lines) > 1 and lines[1].strip() else {}
    if not isinstance(meta, dict):
        raise InputError(f"{what} {str(f.path)!r} line 2: the commit metadata is not a JSON object", field="checkpoint")
    return CommitEntry(f.batch_id, version, _long(meta, "nextBatchWatermarkMs", f.path, what, 0), f.mtime)


def read_file_source_log(folder: Path) -> dict[int, list[str]]:
    """A file source's ``sources/<i>/``: log id -> the files it listed, in order. A ``<id>.compact`` file holds
    every entry up to ``<id>`` with its ``batchId``; entries of a plain file ``<id>`` belong to ``<id>``. An
    id that is both compacted and still present as a file (Spark deletes those later) is read once."""
    entries: dict[int, list[str]] = {}
    files = list_log(folder, compact=True)
    for batch in sorted(files):
        for f in files[batch]:
            compacted = f.path.name.endswith(COMPACT_SUFFIX)
            lines = read_lines(f.path, "file source log entry")
            _version(lines, f.path, "file source log entry", (1,))
            seen: dict[int, list[str]] = {}
            for number, line in enumerate(lines[1:], start=2):
                if not line.strip():
                    continue
                doc = _json(line, f.path, "file source log entry", number)
                if not isinstance(doc, dict) or not isinstance(doc.get("path"), str):
                    raise InputError(f"file source log entry {str(f.path)!r} line {number}: not a file entry "
                                     "({\"path\", \"timestamp\", \"batchId\"})", field="checkpoint")
                owner = _long(doc, "batchId", f.path, "file source log entry", batch) if compacted else batch
                seen.setdefault(owner, []).append(doc["path"])
            for owner, paths in seen.items():
                entries.setdefault(owner, paths)  # a compaction repeats the files it folded in
    return entries


def read_source_start(folder: Path) -> Any:
    """``sources/<i>/0`` of a source that records where it started (the rate source: its start time in ms;
    Kafka: its initial offsets), parsed; None when absent."""
    path = folder / "0"
    if not path.is_file():
        return None
    lines = read_lines(path, "source start entry")
    _version(lines, path, "source start entry", (1,))
    text = "\n".join(lines[1:]).strip()
    return _json(text, path, "source start entry", 2) if text else None
