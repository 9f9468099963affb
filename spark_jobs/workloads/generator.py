"""The deterministic, replayable input of the workloads: seeded JSON-lines files in an input folder.

Problem: primary, replica and reference jobs must read *the same* input, and a replay after a
failure must see the same records. Each input file ``<input>/<source>/part-NNNNNN.jsonl`` holds the
records whose event time falls in ``[start + i * file_s, start + (i + 1) * file_s)``, drawn from a
random generator seeded with ``(seed, source, i)``; so a file's content depends only on the spec
and its index, whether it is written in bulk (:func:`write_seconds`, for tests and the reference) or
appended at the configured rate (:func:`run_generator`, one file per ``file_s`` of wall time,
resuming after the last file present). Files are written under a hidden name and renamed, so Spark's
file source never reads a partial file; bulk files get ascending modification times so that the
file source takes them in event-time order.

Records (event time ``ts`` in epoch ms):
- topk ``requests``: ``{ts, server, page}``; ``server`` ~ Zipf(server_zipf) over n_servers,
  ``page`` ~ Zipf(page_zipf) over n_pages (the World Cup 1998 log's shape); with ``page_affinity``
  a, a share a of requests ranks pages by the server's own popularity (the Zipf ranking rotated
  by ``server * n_pages // n_servers``), like servers with regional content.
- incidents ``locations``: ``{ts, user, segment, speed}``; a uniform user, on the segment the user
  lives on (users apportioned to segments by Zipf(segment_zipf)); speed 50-90, or 5-25 while a jam
  incident is active on the segment.
  ``incidents``: incident ``j`` happens at ``(j + 0.5) * incident_interval_s`` on a segment chosen
  with probability proportional to its users; every user on it reports ``{ts, incident, segment,
  user}`` within ``report_spread_s``; with probability ``jam_prob`` it jams the segment for
  ``jam_duration_s``.

Complexity: O(records) per file with numpy. Example::

    >>> from spark_jobs.workloads.spec import TopkSpec
    >>> recs = file_records(TopkSpec(rate=10), "requests", 0)
    >>> len(recs), recs == file_records(TopkSpec(rate=10), "requests", 0)
    (10, True)
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import numpy as np

from spark_jobs.workloads.spec import IncidentsSpec, TopkSpec, WorkloadSpec

_SOURCE_IDS = {"requests": 1, "locations": 2, "incidents": 3}
_INCIDENT_STREAM = 101


def file_name(index: int) -> str:
    return f"part-{index:06d}.jsonl"


def _rng(spec: WorkloadSpec, *parts: int) -> np.random.Generator:
    return np.random.default_rng([spec.seed, *parts])


def _slice_ms(spec: WorkloadSpec, index: int) -> tuple[int, int]:
    span = spec.file_s * 1000
    return spec.start_ms + round(index * span), spec.start_ms + round((index + 1) * span)


def _count(spec: WorkloadSpec, index: int) -> int:
    per_file = spec.rate * spec.file_s
    return math.floor((index + 1) * per_file + 1e-9) - math.floor(index * per_file + 1e-9)


def _timestamps(rng: np.random.Generator, lo: int, hi: int, n: int) -> np.ndarray:
    return np.sort(rng.integers(lo, hi, size=n))


def file_records(spec: WorkloadSpec, source: str, index: int) -> list[dict]:
    """The records of input file ``index`` of ``source`` (sorted by event time)."""
    if isinstance(spec, TopkSpec) and source == "requests":
        return _requests(spec, index)
    if isinstance(spec, IncidentsSpec) and source == "locations":
        return _locations(spec, index)
    if isinstance(spec, IncidentsSpec) and source == "incidents":
        return _incident_reports(spec, index)
    raise ValueError(f"workload {spec.workload!r} has no source {source!r}")


def _requests(spec: TopkSpec, index: int) -> list[dict]:
    rng = _rng(spec, _SOURCE_IDS["requests"], index)
    lo, hi = _slice_ms(spec, index)
    n = _count(spec, index)
    ts = _timestamps(rng, lo, hi, n)
    servers = rng.choice(spec.n_servers, size=n, p=spec.server_probabilities())
    pages = rng.choice(spec.n_pages, size=n, p=spec.page_probabilities())
    if spec.page_affinity > 0:  # drawn after the rest, so page_affinity=0 leaves the files unchanged
        own = rng.random(n) < spec.page_affinity
        pages = np.where(own, (pages + servers * spec.n_pages // spec.n_servers) % spec.n_pages, pages)
    return [{"ts": int(t), "server": int(s), "page": int(p)} for t, s, p in zip(ts, servers, pages)]


class _Town:
    """Users on segments and the incident schedule of an IncidentsSpec (cached per spec)."""

    _cache: dict[IncidentsSpec, _Town] = {}

    def __init__(self, spec: IncidentsSpec):
        self.spec = spec
        self.users = spec.users_per_segment()
        self.first_user = np.concatenate([[0], np.cumsum(self.users)[:-1]]).astype(int)
        self.segment_of_user = np.repeat(np.arange(spec.n_segments), self.users)
        self.segment_p = np.array(self.users, dtype=float) / spec.n_users
        self._incidents: dict[int, tuple[int, int, bool, np.ndarray]] = {}

    @classmethod
    def of(cls, spec: IncidentsSpec) -> _Town:
        if spec not in cls._cache:
            cls._cache[spec] = cls(spec)
        return cls._cache[spec]

    def incident_ms(self, j: int) -> int:
        return self.spec.start_ms + round((j + 0.5) * self.spec.incident_interval_s * 1000)

    def incident(self, j: int) -> tuple[int, int, bool, np.ndarray]:
        """(time ms, segment, jams, report delays ms) of incident j."""
        if j not in self._incidents:
            rng = _rng(self.spec, _INCIDENT_STREAM, j)
            segment = int(rng.choice(self.spec.n_segments, p=self.segment_p))
            jam = bool(rng.random() < self.spec.jam_prob)
            delays = rng.integers(0, max(1, round(self.spec.report_spread_s * 1000)), size=self.users[segment])
            self._incidents[j] = (self.incident_ms(j), segment, jam, delays)
        return self._incidents[j]

    def incidents_between(self, lo_ms: int, hi_ms: int) -> range:
        """Indices j whose incident time lies in [lo_ms, hi_ms) (a superset at the edges)."""
        step = self.spec.incident_interval_s * 1000
        first = max(0, math.floor((lo_ms - self.spec.start_ms) / step - 1))
        last = max(0, math.ceil((hi_ms - self.spec.start_ms) / step + 1))
        return range(first, last)


def _locations(spec: IncidentsSpec, index: int) -> list[dict]:
    town = _Town.of(spec)
    rng = _rng(spec, _SOURCE_IDS["locations"], index)
    lo, hi = _slice_ms(spec, index)
    n = _count(spec, index)
    ts = _timestamps(rng, lo, hi, n)
    users = rng.integers(0, spec.n_users, size=n)
    segments = town.segment_of_user[users]
    speeds = rng.uniform(50.0, 90.0, size=n)
    slow = rng.uniform(5.0, 25.0, size=n)
    jam_ms = round(spec.jam_duration_s * 1000)
    for j in town.incidents_between(lo - jam_ms, hi):
        t, seg, jam, _ = town.incident(j)
        if jam:
            active = (segments == seg) & (ts >= t) & (ts < t + jam_ms)
            speeds = np.where(active, slow, speeds)
    return [{"ts": int(t), "user": int(u), "segment": int(s), "speed": round(float(v), 2)}
            for t, u, s, v in zip(ts, users, segments, speeds)]


def _incident_reports(spec: IncidentsSpec, index: int) -> list[dict]:
    town = _Town.of(spec)
    lo, hi = _slice_ms(spec, index)
    spread_ms = round(spec.report_spread_s * 1000)
    out = []
    for j in town.incidents_between(lo - spread_ms, hi):
        t, seg, _, delays = town.incident(j)
        for offset, delay in enumerate(delays):
            ts = t + int(delay)
            if lo <= ts < hi:
                out.append({"ts": ts, "incident": j, "segment": seg, "user": int(town.first_user[seg] + offset)})
    out.sort(key=lambda r: (r["ts"], r["incident"], r["user"]))
    return out


def source_names(spec: WorkloadSpec) -> list[str]:
    return [s.name for s in spec.sources()]


def write_file(spec: WorkloadSpec, input_dir: Path, source: str, index: int, mtime: float | None = None) -> Path:
    """Write one input file atomically (hidden temporary name, then rename)."""
    folder = Path(input_dir) / source
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(index)
    tmp = folder / f".{file_name(index)}.tmp"
    with tmp.open("w") as fh:
        for rec in file_records(spec, source, index):
            fh.write(json.dumps(rec, separators=(",", ":")))
            fh.write("\n")
    if mtime is not None:
        os.utime(tmp, (mtime, mtime))
    tmp.replace(path)
    return path


def files_for_seconds(spec: WorkloadSpec, seconds: float) -> int:
    return math.ceil(seconds / spec.file_s - 1e-9)


def write_seconds(spec: WorkloadSpec, input_dir: Path, seconds: float, first: int = 0) -> int:
    """Write ``seconds`` of event time at once (files ``first`` .. ); returns the number of files
    per source. Modification times ascend with the index (1 ms apart, in the past)."""
    count = files_for_seconds(spec, seconds)
    base = time.time() - 1.0 - (first + count) * 0.001
    for i in range(first, first + count):
        for source in source_names(spec):
            write_file(spec, input_dir, source, i, mtime=base + i * 0.001)
    return count


def existing_files(spec: WorkloadSpec, input_dir: Path) -> int:
    """How many consecutive files (from index 0) every source already has."""
    n = 0
    while all((Path(input_dir) / s / file_name(n)).exists() for s in source_names(spec)):
        n += 1
    return n


def run_generator(spec: WorkloadSpec, input_dir: Path, duration_s: float | None = None,
                  speedup: float = 1.0, log=None, stop: threading.Event | None = None) -> int:
    """Append one file per source every ``file_s / speedup`` wall seconds (after its event-time
    slice has passed), resuming after the files already present; stop after ``duration_s`` wall
    seconds (None: until interrupted) or once ``stop`` is set (a drill feeds a job this way).
    Returns the index after the last file written."""
    index = existing_files(spec, input_dir)
    start = time.monotonic()
    first = index
    stop = stop or threading.Event()
    while (duration_s is None or time.monotonic() - start < duration_s) and not stop.is_set():
        due = start + (index - first + 1) * spec.file_s / speedup
        delay = due - time.monotonic()
        if delay > 0:
            if duration_s is not None and time.monotonic() + delay - start > duration_s:
                break
            if stop.wait(delay):
                break
        for source in source_names(spec):
            write_file(spec, input_dir, source, index)
        if log is not None:
            log(index)
        index += 1
    return index


def file_max_ts(spec: WorkloadSpec, source: str, index: int) -> int | None:
    """The largest event time in input file ``index`` of ``source`` (None: the file is empty)."""
    records = file_records(spec, source, index)
    return max(r["ts"] for r in records) if records else None


class InputWatermark:
    """The event-time watermark a streaming run reaches after reading files ``0 .. n-1``:
    Spark's rule (per source: max event time - ``watermark_s``; several sources: the minimum),
    computed exactly from the deterministic files, one file at a time. A window is closed (emitted
    in append mode) once its end is <= this value.

        >>> from spark_jobs.workloads.spec import TopkSpec
        >>> w = InputWatermark(TopkSpec(rate=10, watermark_s=1)); w.add(0); w.add(1)
        >>> w.value_ms == max(r["ts"] for r in file_records(TopkSpec(rate=10), "requests", 1)) - 1000
        True
    """

    def __init__(self, spec: WorkloadSpec):
        self.spec = spec
        self.files = 0
        self._max = {s: None for s in source_names(spec)}

    def add(self, index: int) -> None:
        """Account for file ``index`` of every source (files are added in index order)."""
        for source in self._max:
            ts = file_max_ts(self.spec, source, index)
            if ts is not None and (self._max[source] is None or ts > self._max[source]):
                self._max[source] = ts
        self.files = max(self.files, index + 1)

    @property
    def value_ms(self) -> int | None:
        if any(v is None for v in self._max.values()):
            return None
        return min(self._max.values()) - int(round(self.spec.watermark_s * 1000))


def read_records(spec: WorkloadSpec, input_dir: Path, source: str) -> list[dict]:
    """Every record of a source in the input folder (file order), for pure-Python checks."""
    out: list[dict] = []
    for path in sorted((Path(input_dir) / source).glob("part-*.jsonl")):
        with path.open() as fh:
            out.extend(json.loads(line) for line in fh if line.strip())
    return out
