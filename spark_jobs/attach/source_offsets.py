"""What one source's offsets say about each micro-batch: did it go back, did it skip input, how many records.

Problem: a checkpoint records only each batch's END offset per source; a batch reads from the previous
batch's end to its own. Ranges are therefore contiguous by construction, and "nothing skipped" means
something only where the checkpoint holds evidence of what the source could offer besides the offsets.
This module says, per kind of source, what that evidence is (``SKIPPED_MEANS``) and checks it.

Method: the kind is read from the offset's shape (and ``sources/<i>/0``): then :class:`SourceTrack` walks
the audited batches in order, one :meth:`~SourceTrack.step` per batch from its start to its end:

- ``file`` (``{"logOffset": n}``): the batch reads the file-source log ids (start, end]; each must exist in
  ``sources/<i>/`` (an offset past what the source ever listed is input claimed but never read), and no file
  may be listed for two batches (read twice). Figures: files per batch; records are not in the checkpoint.
- ``rate`` (a number, with the start time in ``sources/<i>/0``): the offset is whole seconds since the
  source started, taken from the clock before the batch's ``batchTimestampMs``; an offset ahead of that
  time is skipped input. Records need ``rowsPerSecond``, which the checkpoint does not hold.
- ``rate-micro-batch`` (``{"offset", "timestamp"}``): each batch adds ``rowsPerBatch`` rows and
  ``advanceMillisPerBatch`` ms, so every batch that read rows advances by the source's step (an edited
  end moves two ranges: that batch's and the next one's). A step that two batches in a row take is the
  new step (the options changed at a restart, which the checkpoint does not record; its first batch is
  still reported). Records: exact.
- ``kafka`` (``{topic: {partition: offset}}``): per partition never back, no partition dropped, the first
  batch from the initial offsets in ``sources/<i>/0``. Skipping ahead within a partition is not visible
  without the brokers. Records: the offset difference (an upper bound: transaction markers and compacted
  records take offsets too).
- ``counter`` (a number without a start time: memory, socket or custom sources) and ``opaque`` (any other
  JSON): never back for a counter; nothing else is comparable.

Cost: O(batches + files listed). Example: a file source whose offset passes its log::

    >>> track = SourceTrack("0", FILE, log={0: ["a.json"], 1: ["b.json"]})
    >>> track.step(0, BEGINNING, {"logOffset": 0}, None).files
    1
    >>> track.step(1, {"logOffset": 0}, {"logOffset": 3}, None).skipped
    'log ids 2, 3 are not in sources/0/ (the offset passes what the source listed)'

and a Kafka source, from its initial offsets, that loses a partition::

    >>> kafka = SourceTrack("0", KAFKA, start_record={"t": {"0": 10, "1": 20}})
    >>> kafka.step(0, BEGINNING, {"t": {"0": 15, "1": 22}}, None).records
    7
    >>> kafka.step(1, {"t": {"0": 15, "1": 22}}, {"t": {"0": 18}}, None).back
    'partition t-1 (at 22) dropped'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_jobs.attach.checkpoint_log import read_file_source_log, read_source_start

FILE, RATE, RATE_MICRO_BATCH, KAFKA, COUNTER, OPAQUE = "file", "rate", "rate-micro-batch", "kafka", "counter", "opaque"
SKIPPED_MEANS = {
    FILE: "an offset past the file-source log ids in sources/<i>/, or a file listed for two batches",
    RATE: "an offset (s since the source started) ahead of the batch's planning time",
    RATE_MICRO_BATCH: "a batch advancing rows and time by another step than the source's (rowsPerBatch, ms)",
    KAFKA: "not visible without the brokers; checked: per partition never back, no partition dropped",
    COUNTER: "not visible (a bare counter); checked: never back",
    OPAQUE: "not visible (offsets not comparable)",
}
BEGINNING = "beginning"  # the source had no offset before this batch: it reads from its start
UNKNOWN = "unknown"  # the batch before is not in the checkpoint (purged): the start is not known


def kind_of(value: Any, start_record: Any = None) -> str:
    """The kind of source an offset comes from (see the module docstring); ``start_record``: the parsed
    ``sources/<i>/0``.

    >>> [kind_of(v) for v in ({"logOffset": 4}, {"offset": 7, "timestamp": 1000}, {"t": {"0": 5}}, 9, [1])]
    ['file', 'rate-micro-batch', 'kafka', 'counter', 'opaque']
    >>> kind_of(9, start_record=1795872258622)
    'rate'
    """
    if isinstance(value, dict) and set(value) == {"logOffset"} and _whole(value["logOffset"]):
        return FILE
    if _whole(value):
        return RATE if _whole(start_record) else COUNTER
    if isinstance(value, dict) and set(value) == {"offset", "timestamp"} and all(map(_whole, value.values())):
        return RATE_MICRO_BATCH
    if isinstance(value, dict) and value and all(_partitions(v) for v in value.values()):
        return KAFKA
    return OPAQUE


def _whole(value: Any) -> bool:
    return type(value) is int


def _partitions(value: Any) -> bool:
    return isinstance(value, dict) and all(_whole(v) for v in value.values())


@dataclass
class Step:
    """One source in one batch: what it read and what is wrong with it (None: nothing)."""

    moved: bool = True  # the end differs from the start (False: the source had no new input)
    records: int | None = None
    files: int | None = None
    back: str | None = None
    skipped: str | None = None
    twice: str | None = None


class SourceTrack:
    """One source over the audited batches, in batch order (:meth:`step` once per batch)."""

    def __init__(self, source: str, kind: str, folder: Path | None = None, log: dict[int, list[str]] | None = None,
                 start_record: Any = None):
        self.source, self.kind = source, kind
        self.log = log if log is not None else (read_file_source_log(folder) if kind == FILE and folder else {})
        self.start_record = start_record if start_record is not None else (
            read_source_start(folder) if kind in (RATE, KAFKA) and folder and folder.is_dir() else None)
        self.read_by: dict[str, int] = {}  # file -> the batch that read it
        self.step_of: tuple[int, int, int] | None = None  # rate-micro-batch: the step, (batch, rows, ms) first on it
        self.last_step: tuple[int, int] | None = None  # rate-micro-batch: (rows, ms) of the last batch that read rows

    def step(self, batch: int, start: Any, end: Any, timestamp_ms: int | None) -> Step:
        """The batch ``batch`` read from ``start`` (an offset, :data:`BEGINNING` or :data:`UNKNOWN`) to ``end``
        (an offset, or None for ``-``); ``timestamp_ms`` is its ``batchTimestampMs``."""
        if end is None:
            moved_from = start not in (BEGINNING, UNKNOWN)
            return Step(moved=False, records=0, files=0 if self.kind == FILE else None,
                        back=f"had offset {_show(start)}, then none ('-')" if moved_from else None)
        if self.kind != OPAQUE and kind_of(end, self.start_record if self.kind == RATE else None) != self.kind:
            return Step(skipped=f"offset {_show(end)} is not a {self.kind} offset like its others")
        return getattr(self, f"_{self.kind.replace('-', '_')}")(batch, start, end, timestamp_ms)

    def _file(self, batch: int, start: Any, end: Any, timestamp_ms: int | None) -> Step:
        e = end["logOffset"]
        if start == UNKNOWN:
            return Step(moved=True)
        s = -1 if start == BEGINNING else start["logOffset"]
        if e < s:
            return Step(back=f"logOffset {e} after {s}")
        ids = range(s + 1, e + 1)
        missing = [i for i in ids if i not in self.log]
        paths = [p for i in ids for p in self.log.get(i, [])]
        twice = []
        for path in paths:
            if path in self.read_by:
                twice.append(f"{path} (also batch {self.read_by[path]})")
            self.read_by.setdefault(path, batch)
        return Step(moved=e != s, files=len(paths),
                    skipped=(f"log id{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} "
                             f"{'are' if len(missing) > 1 else 'is'} not in sources/{self.source}/ (the offset passes "
                             "what the source listed)") if missing else None,
                    twice=("read twice: " + ", ".join(twice[:3]) + (f" and {len(twice) - 3} more" if len(twice) > 3
                                                                   else "")) if twice else None)

    def _rate(self, batch: int, start: Any, end: Any, timestamp_ms: int | None) -> Step:
        s = 0 if start == BEGINNING else None if start == UNKNOWN else start
        ahead = None
        if _whole(self.start_record) and timestamp_ms is not None and end * 1000 > timestamp_ms - self.start_record:
            ahead = (f"offset {end} s is ahead of the batch's planning time, "
                     f"{(timestamp_ms - self.start_record) / 1000:.3f} s after the source started")
        return Step(moved=s is None or end != s, back=f"offset {end} after {s}" if s is not None and end < s else None,
                    skipped=ahead)

    def _counter(self, batch: int, start: Any, end: Any, timestamp_ms: int | None) -> Step:
        s = None if start in (BEGINNING, UNKNOWN) else start
        return Step(moved=s is None or end != s, back=f"offset {end} after {s}" if s is not None and end < s else None)

    def _opaque(self, batch: int, start: Any, end: Any, timestamp_ms: int | None) -> Step:
        return Step(moved=end != start)

    def _rate_micro_batch(self, batch: int, start: Any, end: Any, timestamp_ms: int | None) -> Step:
        if start == UNKNOWN:
            return Step()
        rows0, ms0 = (0, None) if start == BEGINNING else (start["offset"], start["timestamp"])
        rows, ms = end["offset"] - rows0, None if ms0 is None else end["timestamp"] - ms0
        if rows < 0 or (ms is not None and ms < 0):
            return Step(back=f"offset {_show(end)} after {_show(start)}")
        skipped = None
        if rows > 0 and ms is not None:
            if self.step_of is not None and self.step_of[1:] != (rows, ms):
                before, r, t = self.step_of
                skipped = f"advanced {rows} rows and {ms} ms where batch {before} advanced {r} rows and {t} ms"
                if self.last_step == (rows, ms):  # two batches in a row on a new step: the options changed
                    skipped, self.step_of = None, (batch, rows, ms)
            elif self.step_of is None:
                self.step_of = (batch, rows, ms)
            self.last_step = (rows, ms)
        return Step(moved=rows != 0 or bool(ms), records=rows, skipped=skipped)

    def _kafka(self, batch: int, start: Any, end: Any, timestamp_ms: int | None) -> Step:
        s = self.start_record if start == BEGINNING else None if start == UNKNOWN else start
        if not isinstance(s, dict):
            return Step(moved=True)
        back, records = [], 0
        for topic, parts in s.items():
            for part, offset in parts.items() if isinstance(parts, dict) else ():
                now = end.get(topic, {}).get(part)
                if now is None:
                    back.append(f"partition {topic}-{part} (at {offset}) dropped")
                elif now < offset:
                    back.append(f"{topic}-{part} at {now} after {offset}")
                else:
                    records += now - offset
        new = any(part not in s.get(topic, {}) for topic, parts in end.items() for part in parts)
        return Step(moved=end != s, records=None if new else records, back="; ".join(back) or None)


def _show(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":")) if not isinstance(value, str) else value
