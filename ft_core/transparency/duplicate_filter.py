"""First-arrival duplicate filtering of replica streams (paper 001, Sec. IV-B, Algorithm 1, Theorem 1).

Problem: k replicas of an operator each send their output to the consumer; the consumer must take
whichever copy of each tuple arrives first and still see exactly the stream that one failure-free,
unreplicated run would produce (*replication transparency*). Replicas run independently, so they
deliver the same multiset of tuples in different orders and at different times, and a replica that
fails stops (fail-stop: it delivers a prefix of its stream).

Algorithm (Algorithm 1, per logical input): keep ``count[t][i]``, how many copies of tuple ``t``
replica ``S_i`` has delivered, and ``max_count[t]``. A tuple is passed when it is newer than the
largest punctuation seen (``t.ts > max_punct``) and ``count[t][i] > max_count[t]``, i.e. ``S_i``
is the first replica to deliver this occurrence of ``t``; everything else is a duplicate. A
punctuation ``p`` (every later tuple of that replica has ``ts > p``) is forwarded when it is the
largest so far, and the counters of tuples with ``ts <= p`` are deleted: any later copy of them is
a duplicate, because the replica that sent ``p`` had already delivered all of them.

Theorem 1 (multiset semantics): if the replicas are consistent (same multiset, any order), the
output is consistent with them: a tuple that occurs ``m`` times is passed exactly ``m`` times, on
the arrival of the first copy of each occurrence (non-blocking). With fail-stop replicas the output
holds every tuple that at least one replica delivered (all ``m`` copies of it), nothing twice.

Order: the filter passes tuples in arrival order, which differs between runs (the paper tolerates
disorder downstream). :func:`sort_by_punctuation` is Sec. IV-C's sort stage for order-sensitive
consumers: it releases the tuples with ``ts <= p`` in (timestamp, tie-break) order at each
punctuation, so every consumer sees the same order.

Generalisation: the paper identifies a tuple by its whole value (timestamp included). Here the
caller gives each item an *identity* (any hashable) and a *timestamp*; for windowed rows the
identity is ``(window_start, window_end, key...)`` and the timestamp the window end
(:class:`RowIdentity`), which dedupes rows of several replica queries of one windowed aggregation.
The timestamp must be a function of the identity. :func:`serving_view` merges a primary's accurate
rows with a replica's tentative rows per window (the issue's serving view).

Complexity: O(1) expected per tuple (hash maps), O(log n) per created counter for the expiry heap;
memory O(k x distinct identities per punctuation interval).

Example (paper Fig. 1: two Union replicas deliver the same four load tuples in different orders)::

    >>> arrivals = [("u21", Item(("B", 0), 0)), ("u22", Item(("C", 0), 0)), ("u22", Item(("B", 0), 0)),
    ...             ("u21", Item(("C", 0), 0)), ("u21", Punctuation(0))]
    >>> merged = merge_replica_streams(arrivals)
    >>> [e.identity for e in merged.output if isinstance(e, Item)], merged.duplicates, merged.first_arrivals
    ([('B', 0), ('C', 0)], 2, {'u21': 1, 'u22': 1})
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ft_core.errors import InputError

_NO_PUNCTUATION = None  # before any punctuation every timestamp is "newer"


@dataclass(frozen=True, slots=True)
class Item:
    """One tuple of a replica stream: its identity, timestamp and (optional) payload."""

    identity: Hashable
    timestamp: Any
    payload: Any = None


@dataclass(frozen=True, slots=True)
class Punctuation:
    """Every later item of the replica that sent it has ``timestamp > self.timestamp``."""

    timestamp: Any


@dataclass(slots=True)
class DuplicateFilter:
    """Algorithm 1 for one logical input; its state is plain data (dicts, a list, numbers).

    ``offer`` and ``punctuate`` return whether the item/punctuation is passed downstream.
    ``first_arrivals[r]`` counts the items replica ``r`` delivered first, ``duplicates`` the
    copies dropped by the counters (line 4) and ``late`` those dropped by the punctuation check
    (line 2: some replica had already punctuated past them).
    """

    max_punctuation: Any = _NO_PUNCTUATION
    counts: dict[Hashable, dict[str, int]] = field(default_factory=dict)
    max_count: dict[Hashable, int] = field(default_factory=dict)
    expiry: list[tuple[Any, int, Hashable]] = field(default_factory=list)  # heap of (timestamp, seq, identity)
    first_arrivals: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    late: int = 0
    _seq: int = 0

    def offer(self, replica: str, identity: Hashable, timestamp: Any) -> bool:
        """A tuple arrives from ``replica``: True iff it is the first copy of this occurrence."""
        if not self._newer(timestamp):
            self.late += 1
            return False
        per_replica = self.counts.get(identity)
        if per_replica is None:
            per_replica = self.counts[identity] = {}
            heapq.heappush(self.expiry, (timestamp, self._seq, identity))
            self._seq += 1
        seen = per_replica.get(replica, 0) + 1
        per_replica[replica] = seen
        if seen > self.max_count.get(identity, 0):
            self.max_count[identity] = seen
            self.first_arrivals[replica] = self.first_arrivals.get(replica, 0) + 1
            return True
        self.duplicates += 1
        return False

    def punctuate(self, replica: str, timestamp: Any) -> bool:
        """A punctuation arrives from ``replica``: True iff it is the largest so far (forwarded)."""
        if not self._newer(timestamp):
            return False
        self.max_punctuation = timestamp
        # Counters of tuples at or before the punctuation are no longer needed: later copies of
        # them fail the timestamp check, so memory stays bounded by the punctuation interval.
        while self.expiry and self.expiry[0][0] <= timestamp:
            _, _, identity = heapq.heappop(self.expiry)
            self.counts.pop(identity, None)
            self.max_count.pop(identity, None)
        return True

    def _newer(self, timestamp: Any) -> bool:
        return self.max_punctuation is _NO_PUNCTUATION or timestamp > self.max_punctuation


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The filter's output (items and forwarded punctuations, in order) and its counters."""

    output: list[Item | Punctuation]
    first_arrivals: dict[str, int]
    duplicates: int
    late: int

    @property
    def items(self) -> list[Item]:
        return [e for e in self.output if isinstance(e, Item)]


def merge_replica_streams(arrivals: Iterable[tuple[str, Item | Punctuation]]) -> MergeResult:
    """Run Algorithm 1 over ``(replica, item or punctuation)`` pairs in arrival order."""
    dedup = DuplicateFilter()
    output: list[Item | Punctuation] = []
    for replica, event in arrivals:
        if isinstance(event, Punctuation):
            passed = dedup.punctuate(replica, event.timestamp)
        else:
            passed = dedup.offer(replica, event.identity, event.timestamp)
        if passed:
            output.append(event)
    return MergeResult(output, dict(dedup.first_arrivals), dedup.duplicates, dedup.late)


def interleave_by_arrival(streams: Mapping[str, Sequence[tuple[float, Item | Punctuation]]]) -> list[tuple[str, Item | Punctuation]]:
    """Interleave per-replica ``(arrival time, event)`` lists into one arrival order.

    Ties keep the replicas' order in ``streams`` and each replica's own order (a stable sort).
    Arrival times must not decrease within a replica (the paper's in-order transport): ValueError.
    """
    for name, events in streams.items():
        for pos in range(1, len(events)):
            if events[pos][0] < events[pos - 1][0]:
                raise ValueError(f"replica {name!r}: event {pos} arrives before event {pos - 1} (in-order delivery)")
    tagged = [(at, rank, pos, name, event)
              for rank, (name, events) in enumerate(streams.items())
              for pos, (at, event) in enumerate(events)]
    tagged.sort(key=lambda row: row[:3])
    return [(name, event) for _, _, _, name, event in tagged]


def sort_by_punctuation(events: Iterable[Item | Punctuation], tie_break=repr) -> list[Item]:
    """Sec. IV-C's sort stage: at each punctuation ``p`` release the items with ``ts <= p`` in
    (timestamp, ``tie_break(identity)``) order; items after the last punctuation are released at
    the end, in the same order. Any two interleavings with the same items give the same list.
    """
    pending: list[tuple[Any, Any, int, Item]] = []
    released: list[Item] = []
    for seq, event in enumerate(events):
        if isinstance(event, Punctuation):
            while pending and pending[0][0] <= event.timestamp:
                released.append(heapq.heappop(pending)[3])
        else:
            heapq.heappush(pending, (event.timestamp, tie_break(event.identity), seq, event))
    released.extend(heapq.heappop(pending)[3] for _ in range(len(pending)))
    return released


@dataclass(frozen=True, slots=True)
class RowIdentity:
    """Which fields of a row (a dict) make its window, its key and its timestamp.

    ``identity(row)`` is ``(window values..., key values...)``; with no fields at all it is the
    whole row (the paper's tuple-value equality, via canonical JSON). ``timestamp_field`` defaults
    to the last window field (the window end, after which a windowed row cannot change).
    """

    window_fields: tuple[str, ...] = ()
    key_fields: tuple[str, ...] = ()
    timestamp_field: str | None = None

    @property
    def time_field(self) -> str | None:
        return self.timestamp_field or (self.window_fields[-1] if self.window_fields else None)

    def identity(self, row: Mapping[str, Any]) -> Hashable:
        if not self.window_fields and not self.key_fields:
            return canonical_row(row)
        return tuple(_hashable(row[f]) for f in (*self.window_fields, *self.key_fields))

    def window(self, row: Mapping[str, Any]) -> tuple:
        return tuple(_hashable(row[f]) for f in self.window_fields)

    def timestamp(self, row: Mapping[str, Any]) -> Any:
        name = self.time_field
        return None if name is None else row[name]

    def item(self, row: Mapping[str, Any]) -> Item:
        return Item(self.identity(row), self.timestamp(row), row)


def canonical_row(row: Any) -> str:
    """A row's value as canonical JSON: equal rows (whatever their key order) give equal strings."""
    return json.dumps(row, sort_keys=True, separators=(",", ":"), default=str)


def _hashable(value: Any) -> Hashable:
    return value if isinstance(value, Hashable) else canonical_row(value)


def serving_view(
    accurate: Iterable[Mapping[str, Any]],
    tentative: Iterable[Mapping[str, Any]],
    identity: RowIdentity,
    *,
    predicted_of: float | None = None,
    primary_complete_through: Any = None,
) -> list[dict[str, Any]]:
    """The rows a consumer reads: per window, the primary's rows once it delivered the window,
    else the replica's rows flagged ``tentative=True`` with ``predicted_of``.

    A window counts as delivered when the primary has at least one row in it (Spark's append mode
    emits a window's rows in one micro-batch commit) or its timestamp is ``<=
    primary_complete_through`` (the primary's punctuation/watermark: windows it closed without
    rows). Replacement is per window, never per key: a key only the replica produced must vanish
    once the primary's accurate rows arrive, so that the final content equals the failure-free
    output. Within each side, the first row of each (window, key) wins (first-arrival filter:
    a windowed aggregation emits each (window, key) once, so a second row is a redelivery).
    Served rows are copies with ``tentative`` and ``predicted_of`` (None for accurate rows) added,
    ordered by window then key. O(n log n) for n rows.
    """
    if not identity.window_fields:
        raise InputError("serving_view: needs window fields to group rows by window")
    primary = _first_per_identity(accurate, identity)
    replica = _first_per_identity(tentative, identity)
    delivered = {identity.window(row) for row in primary.values()}
    served = [{**row, "tentative": False, "predicted_of": None} for row in primary.values()]
    for row in replica.values():
        if identity.window(row) in delivered or _closed(identity.timestamp(row), primary_complete_through):
            continue
        served.append({**row, "tentative": True, "predicted_of": predicted_of})
    served.sort(key=lambda row: _order_key(identity.identity(row)))
    return served


class TransparencyReport(BaseModel):
    """Whether the merged replica streams equal the unreplicated reference (Theorem 1's check).

    ``transparent``: the same multiset of rows (Def. 1, consistent streams). ``missing`` and
    ``unexpected`` list the differing rows (with multiplicity); ``same_order`` tells whether the
    merged order also equals the reference's (the filter does not promise it, Sec. IV-C does).
    """

    transparent: bool
    reference_rows: int
    output_rows: int
    delivered_rows: dict[str, int]
    first_arrivals: dict[str, int]
    duplicates_dropped: int
    late_dropped: int
    missing: list[Any]
    unexpected: list[Any]
    same_order: bool


def check_transparency(
    reference: Sequence[Any],
    streams: Mapping[str, Sequence[tuple[float, Item | Punctuation]]],
) -> TransparencyReport:
    """Merge ``streams`` (per replica: ``(arrival time, event)``, items carry the row as payload)
    with Algorithm 1 and compare the passed rows with ``reference``. O(n log n)."""
    merged = merge_replica_streams(interleave_by_arrival(streams))
    output = [item.payload for item in merged.items]
    want = Counter(canonical_row(row) for row in reference)
    got = Counter(canonical_row(row) for row in output)
    return TransparencyReport(
        transparent=want == got,
        reference_rows=len(reference),
        output_rows=len(output),
        delivered_rows={name: sum(isinstance(e, Item) for _, e in events) for name, events in streams.items()},
        first_arrivals={name: merged.first_arrivals.get(name, 0) for name in streams},
        duplicates_dropped=merged.duplicates,
        late_dropped=merged.late,
        missing=_expand(want - got),
        unexpected=_expand(got - want),
        same_order=[canonical_row(r) for r in output] == [canonical_row(r) for r in reference],
    )


def _expand(counts: Counter) -> list[Any]:
    return [json.loads(text) for text, n in sorted(counts.items()) for _ in range(n)]


def _first_per_identity(rows: Iterable[Mapping[str, Any]], identity: RowIdentity) -> dict[Hashable, Mapping[str, Any]]:
    first: dict[Hashable, Mapping[str, Any]] = {}
    for row in rows:
        first.setdefault(identity.identity(row), row)
    return first


def _closed(timestamp: Any, complete_through: Any) -> bool:
    return complete_through is not None and timestamp is not None and timestamp <= complete_through


def _order_key(identity: Hashable) -> tuple:
    """Sort mixed values safely: numbers by value, then everything else by its text."""
    parts = identity if isinstance(identity, tuple) else (identity,)
    return tuple((0, p, "") if isinstance(p, (int, float)) and not isinstance(p, bool) else (1, 0, str(p)) for p in parts)
