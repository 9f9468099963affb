"""Did every micro-batch commit exactly once and in order? Read from a Structured Streaming query's checkpoint.

Problem: a drill of an application written without ftops (issue 34, item 3) has no reference job to compare
outputs with; its verdict must come from what the job itself recorded. A query's checkpoint folder is that
record: ``offsets/<b>`` is written before batch ``b`` runs (its END offset per source; its start is batch
``b-1``'s end), ``commits/<b>`` after its sink committed, ``sources/<i>/`` by each source.

Method: :func:`audit_checkpoint` reads the logs (:mod:`~spark_jobs.attach.checkpoint_log`) from the smallest
retained batch, or after ``since_batch`` (a drill's window: the batches after the last one committed before
its fault), and evaluates named checks, each with what it observed and the offending batch ids:

- ``offsets_contiguous`` / ``commits_contiguous``: no batch id missing in either log (a gap is a batch whose
  plan or commit is gone: its input's fate is unknown).
- ``commits_have_offsets``: every commit has the offsets entry that says what it read.
- ``only_last_uncommitted``: at most the newest offsets entry lacks a commit (the batch in flight, which a
  restart re-runs from its logged offsets); an older one is a batch the query moved past uncommitted.
- ``no_batch_written_twice``: one file per batch id in both logs. Spark refuses to write an existing batch
  file, so on disk "committed twice" can only be two names Spark reads as one id (``7`` and ``07``: a copy
  or a hand edit); temp (``.7.<uuid>.tmp``) and checksum (``.7.crc``) files are not batch files. What this
  cannot see: a sink that wrote a batch's output twice (a ``foreachBatch`` that is not idempotent per batch
  id, output files outside the sink's ``_spark_metadata``): the checkpoint records the commit, not the output.
- ``planned_after_commit``: each batch was planned from its predecessor's commit: ``offsets/<b>``'s
  ``batchWatermarkMs`` is ``commits/<b-1>``'s ``nextBatchWatermarkMs`` (Spark carries the watermark from
  the one to the other, also across restarts); a commit swapped in from elsewhere breaks the chain.
  Vacuous for queries without a watermark (every value 0).
- ``offsets_never_back``: per source, no batch ends before its start (Kafka: per partition, no partition
  dropped; a source never returns to ``-``): input read twice.
- ``nothing_skipped``: input claimed but never read, where the checkpoint holds evidence of what the source
  offered (:mod:`~spark_jobs.attach.source_offsets`: file-source log ids, the rate source's clock, the
  rate-micro-batch step); for other sources the observation says it is not visible.
- ``no_file_read_twice``: a file source lists each file for one batch only.
- ``window_retained``: the batches after ``since_batch`` are still in the checkpoint (Spark keeps the newest
  ``spark.sql.streaming.minBatchesToRetain``, default 100, entries and deletes older ones).

Figures: batches audited, first and last id, the batch in flight, batches without new input (run for the
watermark), records and files per batch where the offsets give them, and batches re-run after a restart.
A re-run is not visible in a checkpoint alone: Spark re-executes an uncommitted batch from its logged offsets
without rewriting them, and records no run id. Given the times the query was started again
(``restarted_at``, epoch s, each after the previous run ended), a batch planned before one
(``batchTimestampMs``) and committed after it (the commit file's time; the file system's clock) was re-run;
without them ``rerun_batches`` is None. A running query is read at one moment (the logs are listed again
until no batch was planned meanwhile; an entry it purges meanwhile restarts the audit). Cost: one read per
log file in the window, O(batches + files).

    >>> import json, tempfile
    >>> ck = Path(tempfile.mkdtemp())
    >>> for log in ("offsets", "commits"):
    ...     (ck / log).mkdir()
    >>> for b in range(3):
    ...     meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1000 * b, "conf": {}}
    ...     _ = (ck / "offsets" / str(b)).write_text(f"v1\\n{json.dumps(meta)}\\n" + '{"offset":%d,"timestamp":%d}' % (
    ...         5 * (b + 1), 1000 * (b + 1)))
    >>> for b in range(2):
    ...     _ = (ck / "commits" / str(b)).write_text('v1\\n{"nextBatchWatermarkMs":0}')
    >>> audit = audit_checkpoint(ck)
    >>> audit.held, audit.batches_audited, audit.in_flight_batch, [b.records for b in audit.batches]
    (True, 3, 2, [5, 5, 5])
    >>> (ck / "commits" / "0").unlink()
    >>> [(c.name, c.offending_batches) for c in audit_checkpoint(ck).failed()]
    [('commits_contiguous', [0]), ('only_last_uncommitted', [0])]
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from ft_core.errors import InputError
from ft_core.input.documents import parse_text
from ft_core.input.quantities import NonNegative, check
from spark_jobs.attach.checkpoint_log import (CommitEntry, LogFile, OffsetsEntry, Vanished, canonical, list_log,
                                              read_commit, read_lines, read_offsets, read_source_start)
from spark_jobs.attach.source_offsets import (BEGINNING, FILE, KAFKA, SKIPPED_MEANS, UNKNOWN, SourceTrack, Step,
                                              kind_of)

BatchId = Annotated[int, Field(ge=0, le=2 ** 63 - 1)]
_SHOWN = 5  # offending details named in an observation


class AuditCheck(BaseModel):
    """One invariant: whether it held, what was seen, and the batches that break it."""

    name: str
    held: bool
    observed: str
    offending_batches: list[int] = Field(default_factory=list)


class SourceFigures(BaseModel):
    """One source of the query over the audited batches."""

    source: str  # the offsets log's source id (v1: its line, 0, 1, ...; the folder sources/<id>/)
    kind: str  # file, rate, rate-micro-batch, kafka, counter, opaque
    provider: str | None = None  # recorded by Spark 4's v2 offsets log
    skipped_means: str
    records: int | None  # over the committed batches whose start is in the checkpoint; None: not in the offsets
    files: int | None  # file sources: files read by those batches


class BatchFigures(BaseModel):
    """One audited batch."""

    batch_id: int
    committed: bool
    planned_at_s: float | None  # batchTimestampMs / 1000 (the driver's clock)
    committed_at_s: float | None  # the commit file's modification time (the file system's clock)
    watermark_ms: int | None
    new_input: bool  # False: no source moved (a batch run to move the watermark on)
    records: int | None  # None: a source's offsets do not give records, or the batch before is purged
    files: int | None  # files read from file sources (None: no file source)


class CheckpointAudit(BaseModel):
    """The verdict on a checkpoint: ``held`` when every check held; the checks and the drill's figures."""

    checkpoint: str
    query_id: str | None
    since_batch: int | None
    held: bool
    checks: list[AuditCheck]
    batches_audited: int
    first_batch: int | None
    last_batch: int | None
    first_retained_batch: int | None
    in_flight_batch: int | None
    committed_batches: int
    batches_without_new_input: int
    records: int | None  # read by the committed batches whose start is in the checkpoint (None: not in the offsets)
    files: int | None  # files those batches read from file sources (None: no file source)
    rerun_batches: list[int] | None
    records_reprocessed: int | None
    rerun_evidence: str
    sources: list[SourceFigures]
    batches: list[BatchFigures]

    def failed(self) -> list[AuditCheck]:
        return [c for c in self.checks if not c.held]


def audit_checkpoint(path: str | Path, since_batch: int | None = None,
                     restarted_at: Sequence[float] = ()) -> CheckpointAudit:
    """Audit the checkpoint folder ``path`` (see the module docstring): every batch after ``since_batch``
    (default: from the smallest retained); ``restarted_at``: epoch seconds at which the query was started
    again from this checkpoint. :class:`~ft_core.errors.InputError` when ``path`` is not a checkpoint or an
    entry cannot be read."""
    root = Path(path)
    since = None if since_batch is None else check(BatchId, since_batch, "since_batch")
    restarts = check(list[NonNegative], list(restarted_at), "restarted_at")
    _check_folder(root)
    for _ in range(2):
        try:
            return _audit(root, since, restarts)
        except Vanished:  # a running query purged an old entry after it was listed: list again
            pass
    return _audit(root, since, restarts)


def _listing(root: Path) -> tuple[dict[int, list[LogFile]], dict[int, list[LogFile]]]:
    """The offsets and commits logs at one moment of a running query: listed again until no batch was planned
    while the commits were listed (a commit then always has its offsets, and only the newest can lack one)."""
    for _ in range(10):
        offsets, commits = list_log(root / "offsets"), list_log(root / "commits")
        if max(list_log(root / "offsets"), default=None) == max(offsets, default=None):
            break
        time.sleep(0.05)
    return offsets, commits


def _audit(root: Path, since: int | None, restarts: list[float]) -> CheckpointAudit:
    offsets_files, commit_files = _listing(root)
    first_retained = min(offsets_files, default=None)
    floor = first_retained if first_retained is not None else min(commit_files, default=0)
    start = since + 1 if since is not None else floor
    window = sorted(b for b in offsets_files if b >= start)
    purging = sorted(b for b in commit_files if b < floor and b >= start)  # Spark purges offsets, then commits
    commit_ids = sorted(b for b in commit_files if b >= max(start, floor))
    baseline = start - 1
    entries = {b: read_offsets(canonical(offsets_files[b])) for b in window + [baseline] if b in offsets_files}
    commits = {b: read_commit(canonical(commit_files[b])) for b in commit_ids + [baseline] if b in commit_files}
    latest = max(offsets_files, default=None)
    in_flight = latest if latest in window and latest not in commit_files else None
    expected_from = max(start, floor)

    checks = [
        _contiguous("offsets_contiguous", "offsets", window, offsets_files, expected_from),
        _contiguous("commits_contiguous", "commits", commit_ids, commit_files, expected_from),
        _listed("commits_have_offsets", [b for b in commit_ids if b not in offsets_files],
                "commits without an offsets entry",
                f"every commit of {_span(commit_ids)} has its offsets entry" + (
                    f"; commits {_ids(purging)} below the first retained offsets entry {floor} are left to "
                    "Spark's purge (it deletes offsets before commits)" if purging else "")),
        _listed("only_last_uncommitted", [b for b in window if b not in commit_files and b != latest],
                "offsets entries without a commit before the newest", "every batch before the newest committed"
                + (f"; batch {latest} is in flight" if in_flight is not None else "")),
        _written_twice(offsets_files, commit_files, window, commit_ids),
        _planned_after_commit(entries, commits, window),
    ]
    tracks, figures, sources = _walk_sources(root, entries, commits, window, baseline, checks)
    # the first batch's start is not in the checkpoint when the batch before it was purged: not counted
    known = [f for f in (figures[1:] if figures and baseline not in entries and figures[0].batch_id != 0
                         else figures) if f.committed]
    checks.append(_window_retained(since, first_retained, start))
    reruns, reprocessed, evidence = _reruns(figures, restarts)
    return CheckpointAudit(
        checkpoint=str(root), query_id=_query_id(root), since_batch=since, held=all(c.held for c in checks),
        checks=checks, batches_audited=len(window), first_batch=window[0] if window else None,
        last_batch=window[-1] if window else None, first_retained_batch=first_retained,
        in_flight_batch=in_flight,
        committed_batches=sum(f.committed for f in figures), batches_without_new_input=sum(not f.new_input
                                                                                            for f in figures),
        records=_total(f.records for f in known if f.new_input),
        files=_total(f.files for f in known) if any(t.kind == FILE for t in tracks.values()) else None,
        rerun_batches=reruns, records_reprocessed=reprocessed, rerun_evidence=evidence,
        sources=sources, batches=figures)


def _check_folder(root: Path) -> None:
    if not root.exists():
        raise InputError(f"checkpoint {str(root)!r} does not exist", field="checkpoint")
    if not root.is_dir():
        raise InputError(f"checkpoint {str(root)!r} is not a folder", field="checkpoint")
    if not any((root / name).exists() for name in ("offsets", "commits", "metadata")):
        raise InputError(f"checkpoint {str(root)!r} is not a Structured Streaming checkpoint: it has no offsets/, "
                         "commits/ or metadata (give the folder passed as checkpointLocation)", field="checkpoint")
    for name in ("offsets", "commits"):
        if (root / name).exists() and not (root / name).is_dir():
            raise InputError(f"checkpoint {str(root)!r}: {name} is a file where Spark keeps a folder",
                             field="checkpoint")


def _query_id(root: Path) -> str | None:
    path = root / "metadata"
    if not path.is_file():
        return None
    text = "\n".join(read_lines(path, "checkpoint metadata")).strip()
    doc = parse_text(text, "json", "checkpoint", label=f"checkpoint metadata {str(path)!r}") if text else {}
    return doc.get("id") if isinstance(doc, dict) and isinstance(doc.get("id"), str) else None


def _ids(batches: Sequence[int]) -> str:
    shown = ", ".join(map(str, batches[:_SHOWN]))
    return shown + (f" and {len(batches) - _SHOWN} more" if len(batches) > _SHOWN else "")


def _span(batches: Sequence[int]) -> str:
    if not batches:
        return "no batch"
    return f"batch {batches[0]}" if len(batches) == 1 else f"batches {batches[0]}-{batches[-1]}"


def _many(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _listed(name: str, offending: list[int], what: str, fine: str) -> AuditCheck:
    if offending:
        return AuditCheck(name=name, held=False, observed=f"{what} ({len(offending)}): {_ids(offending)}",
                          offending_batches=offending)
    return AuditCheck(name=name, held=True, observed=fine)


def _contiguous(name: str, log: str, ids: list[int], files: dict[int, list[LogFile]], expected_from: int) -> AuditCheck:
    if not ids:
        return AuditCheck(name=name, held=True, observed=f"no {log} entry in the window")
    missing = [b for b in range(min(expected_from, ids[0]), ids[-1] + 1) if b not in files]
    return _listed(name, missing, f"batch ids missing from {log}/ between {expected_from} and {ids[-1]}",
                   f"{log}/ holds {_span(ids)} with no gap ({_many(len(ids), 'entry', 'entries')})")


def _written_twice(offsets_files: dict, commit_files: dict, window: list[int], commit_ids: list[int]) -> AuditCheck:
    twice = {log: [b for b in ids if len(files[b]) > 1]
             for log, files, ids in (("offsets", offsets_files, window), ("commits", commit_files, commit_ids))}
    offending = sorted(set(twice["offsets"]) | set(twice["commits"]))
    if not offending:
        return AuditCheck(name="no_batch_written_twice", held=True,
                          observed="one file per batch id in offsets/ and commits/")
    names = [" and ".join(f"{log}/{f.path.name}" for f in files[b])
             for log, files in (("offsets", offsets_files), ("commits", commit_files)) for b in twice[log]]
    return AuditCheck(name="no_batch_written_twice", held=False, offending_batches=offending,
                      observed=f"batch ids written twice, as files Spark reads as one id ({len(names)}): "
                               + "; ".join(names[:_SHOWN]))


def _planned_after_commit(entries: dict[int, OffsetsEntry], commits: dict[int, CommitEntry],
                          window: list[int]) -> AuditCheck:
    pairs = [(b, entries[b].watermark_ms, commits[b - 1].next_watermark_ms) for b in window
             if b - 1 in commits and entries[b].watermark_ms is not None]
    broken = [(b, got, want) for b, got, want in pairs if got != want]
    if broken:
        return AuditCheck(name="planned_after_commit", held=False, offending_batches=[b for b, _, _ in broken],
                          observed=f"batches not planned from their predecessor's commit ({len(broken)}): " + "; ".join(
                              f"offsets/{b} batchWatermarkMs {got}, commits/{b - 1} nextBatchWatermarkMs {want}"
                              for b, got, want in broken[:_SHOWN]))
    marks = {got for _, got, _ in pairs}
    return AuditCheck(name="planned_after_commit", held=True,
                      observed=f"{_many(len(pairs), 'batch', 'batches')} planned with the "
                               "watermark the batch before committed"
                               + (" (no watermark: every value 0, the chain shows nothing)" if marks <= {0} else ""))


def _walk_sources(root: Path, entries: dict[int, OffsetsEntry], commits: dict[int, CommitEntry], window: list[int],
                  baseline: int, checks: list[AuditCheck]
                  ) -> tuple[dict[str, SourceTrack], list[BatchFigures], list[SourceFigures]]:
    """Each source from batch to batch (start: the previous batch's end); appends the three source checks."""
    tracks: dict[str, SourceTrack] = {}
    for b in sorted(entries):
        for source, value in entries[b].offsets.items():
            if source not in tracks and value is not None:
                tracks[source] = _track(root, source, value)
    last: dict[str, Any] = {}
    if baseline in entries:
        last = {s: (BEGINNING if v is None else v) for s, v in entries[baseline].offsets.items()}
    default = BEGINNING if baseline in entries or (window and window[0] == 0) else UNKNOWN
    found: dict[str, list[tuple[int, str]]] = {"back": [], "skipped": [], "twice": []}
    counted: dict[str, list[Step]] = {source: [] for source in tracks}  # committed batches with a known start
    figures = []
    for b in window:
        entry, steps = entries[b], []
        for source, end in entry.offsets.items():
            start = last.get(source, default)
            step = tracks[source].step(b, start, end, entry.timestamp_ms) if source in tracks else Step(moved=False)
            steps.append((source, step))
            if source in counted and start != UNKNOWN and b in commits:
                counted[source].append(step)
            if end is not None:
                last[source] = end
            elif start == UNKNOWN:
                last[source] = BEGINNING
        for source in [s for s in last if s not in entry.offsets]:
            steps.append((source, Step(moved=False, back="no line for this source")))
        for source, step in steps:
            for kind in found:
                if getattr(step, kind):
                    found[kind].append((b, f"batch {b} source {source}: {getattr(step, kind)}"))
        default = BEGINNING
        moved = [step for _, step in steps if step.moved]
        from_files = [step.files for source, step in steps if source in tracks and tracks[source].kind == FILE]
        commit = commits.get(b)
        figures.append(BatchFigures(
            batch_id=b, committed=commit is not None,
            planned_at_s=entry.timestamp_ms / 1000 if entry.timestamp_ms is not None else None,
            committed_at_s=commit.mtime if commit else None, watermark_ms=entry.watermark_ms, new_input=bool(moved),
            records=_total(step.records for step in moved), files=_total(from_files) if from_files else None))
    kinds = sorted({t.kind for t in tracks.values()})
    checks.append(_found("offsets_never_back", found["back"], "batches ending before their start",
                         f"{_many(len(tracks), 'source', 'sources')} ({', '.join(kinds) or 'none'}) never went back"))
    visible = [f"source {t.source} ({t.kind}), skip = {SKIPPED_MEANS[t.kind]}" for t in tracks.values()]
    checks.append(_found("nothing_skipped", found["skipped"], "batches that skipped input",
                         "no skip seen; " + ("; ".join(visible) if visible else "no source")))
    files = [t for t in tracks.values() if t.kind == FILE]
    checks.append(_found("no_file_read_twice", found["twice"], "batches reading a file another batch read",
                         f"each file read once ({sum(len(t.read_by) for t in files)} files)" if files
                         else "no file source"))
    sources = [SourceFigures(source=t.source, kind=t.kind, provider=_provider(entries, t.source),
                             skipped_means=SKIPPED_MEANS[t.kind],
                             records=_total(step.records for step in counted[t.source] if step.moved),
                             files=_total(step.files for step in counted[t.source]) if t.kind == FILE else None)
               for t in tracks.values()]
    return tracks, figures, sources


def _track(root: Path, source: str, value: Any) -> SourceTrack:
    folder = root / "sources" / source
    start = None
    if type(value) is int or kind_of(value) == KAFKA:
        try:
            start = read_source_start(folder)
        except Vanished:
            raise
        except InputError:  # another source's own log (a custom source's): not a start record, not ours to judge
            start = None
    return SourceTrack(source, kind_of(value, start), folder=folder, start_record=start)


def _found(name: str, found: list[tuple[int, str]], what: str, fine: str) -> AuditCheck:
    if not found:
        return AuditCheck(name=name, held=True, observed=fine)
    batches = sorted({b for b, _ in found})
    return AuditCheck(name=name, held=False, offending_batches=batches,
                      observed=f"{what} ({len(batches)}): " + "; ".join(text for _, text in found[:_SHOWN]))


def _window_retained(since: int | None, first_retained: int | None, start: int) -> AuditCheck:
    if since is None:
        return AuditCheck(name="window_retained", held=True, observed=(
            f"no window asked: audited from the first retained batch {first_retained}" if first_retained is not None
            else "no window asked; no batch yet"))
    if first_retained is None or first_retained <= start:
        return AuditCheck(name="window_retained", held=True, observed=f"batches after {since} are all retained")
    purged = list(range(start, first_retained))
    return AuditCheck(name="window_retained", held=False, offending_batches=purged,
                      observed=f"batches {start}-{first_retained - 1} after {since} are purged (the first retained "
                               f"is {first_retained}): their commits cannot be checked")


def _reruns(figures: list[BatchFigures], restarts: list[float]) -> tuple[list[int] | None, int | None, str]:
    if not restarts:
        return None, None, ("not visible in a checkpoint alone: Spark re-executes an uncommitted batch from its "
                            "logged offsets without rewriting them and records no run id; give the restart times")
    rerun = [f for f in figures if f.committed and f.planned_at_s is not None and f.committed_at_s is not None
             and any(f.planned_at_s < t <= f.committed_at_s for t in restarts)]
    return ([f.batch_id for f in rerun], _total(f.records for f in rerun),
            f"batches planned before one of {len(restarts)} restarts and committed after it "
            "(batchTimestampMs against the commit file's time)")


def _total(values) -> int | None:
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def _provider(entries: dict[int, OffsetsEntry], source: str) -> str | None:
    return next((e.providers[source] for e in entries.values() if source in e.providers), None)
