"""When is a query back to normal after a failure? Relative latency from the units' own progress (paper 003, §7.2).

Problem: paper 003 measures recovery per query as the time until the query is *available* again: its
relative latency ``RL = l_r / l_s`` (latency after the failure over latency before it) averaged over an
interval stays below ``Θ = 1.2``. Here a query is a unit of an output operator or of one marked ``query=True`` (:mod:`spark_jobs.pipeline.units`).

Latency of a unit (its *event-time lag*): every completed micro-batch reports its event-time watermark
``w`` and the wall time it ended (``units/<unit>/progress.jsonl``, written by :mod:`.app`); the input that
carried event time ``w`` arrived at wall time ``a(w)``: for each stream source reaching the unit, the
modification time of the first input file (in the order files appeared) whose newest event time is at
least ``w``, the latest over those sources (:class:`InputArrivals`, from the files' own event times, so it
holds for any pipeline whose producers add files atomically in event-time order; a source that is not a
folder of files, like the rate source, is taken to carry event time ``w`` at wall time ``w``). At any wall
time ``t`` the unit's output is as fresh as the watermark of its last batch ended by ``t``, so its lag is
``t - a(w_last)``: a sawtooth that drops at each batch and grows until the next. A unit (or anything
upstream of it, whose watermark holds it back) that stops making progress sees its lag grow for as long
as it is stuck, which is what its users see. Watermark delays and window lengths are a constant part of
both ``l_s`` and ``l_r``.

Method: between consecutive batches the lag rises linearly, so its time average over ``[t_i, t_i+1]`` is
``(t_i + t_i+1) / 2 - a(w_i)``. ``l_s`` = the time-averaged lag over the ``normal_s`` seconds before the
failure. A query is available again at the end of the first batch ``b`` that (1) comes after every failed
unit of its upstream closure has restarted (completed a batch after the failure: a query cannot be back
before its failed partitions are), (2) has ``RL < Θ``, and (3) starts ``window`` inter-batch intervals
whose time-averaged ``RL`` is below ``Θ`` (the paper's Δ_T, which it does not give, as a number of
micro-batches). Complexity: linear in the progress records.

Example (batches every ~2 s with a 4 s lag; the failure at 15 s stalls the unit until it restarts at 40 s)::

    >>> marks = [(10.0, 6.0), (12.0, 8.0), (14.0, 10.0), (40.0, 12.0), (42.0, 37.0), (44.0, 40.0),
    ...          (46.0, 42.0), (48.0, 44.0)]
    >>> normal = normal_lag(marks, failure_time=15.0, normal_s=10.0); normal
    5.0
    >>> recovered_after(marks, failure_time=15.0, normal_lag=normal, not_before=40.0, window=2)
    27.0
"""

from __future__ import annotations

import bisect
import statistics
import threading
import time
from pathlib import Path

from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.input_files import data_files, file_max_event_ms
from spark_jobs.pipeline.sources import FileSource
from spark_jobs.pipeline.units import UnitTopology
from spark_jobs.recovery_units.deployment import read_progress

THETA = 1.2  # paper 003's availability threshold on relative latency
_FILE_MAX: dict[tuple[str, int, int], int | None] = {}  # (path, mtime ns, size) -> newest event time: files never change


def _file_max(path: Path, source: FileSource) -> int | None:
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _FILE_MAX:
        _FILE_MAX[key] = file_max_event_ms(path, source)
    return _FILE_MAX[key]


class InputArrivals:
    """Wall time at which the input first held each event time, per stream source (see the module docstring)."""

    def __init__(self, workload: Workload, input_dir: Path):
        self.units = UnitTopology(workload)
        self._sources: dict[str, list[str]] = {}
        self._files: dict[str, tuple[list[float], list[int]]] = {}
        for source in workload.stream_sources():
            if not isinstance(source, FileSource):
                continue
            times, reach, newest = [], [], None
            for path in reversed(data_files(source.folder(input_dir))):  # oldest first
                try:
                    value, mtime = _file_max(path, source), path.stat().st_mtime
                except (FileNotFoundError, ValueError, OSError):
                    continue  # removed, or not readable yet
                if value is not None and (newest is None or value > newest):
                    newest = value
                    times.append(mtime)
                    reach.append(value)
            self._files[source.name] = (times, reach)

    def arrival(self, unit: str, event_ms: int) -> float | None:
        """When the input of ``unit``'s sources first held event time ``event_ms`` (None: not yet)."""
        if unit not in self._sources:
            self._sources[unit] = self.units.stream_sources(unit)
        times = []
        for name in self._sources[unit]:
            if name not in self._files:
                times.append(event_ms / 1000)  # not a folder of files: its event time is its clock
                continue
            mtimes, reach = self._files[name]
            i = bisect.bisect_left(reach, event_ms)
            if i == len(reach):
                return None
            times.append(mtimes[i])
        return max(times) if times else None


class LiveArrivals:
    """:class:`InputArrivals` for a running driver, which writes each batch's arrival to the history store: the
    input is read again (at most every ``refresh_s``) when asked for an event time it had not reached yet."""

    def __init__(self, workload: Workload, input_dir: Path, refresh_s: float = 1.0):
        self.workload, self.input_dir, self.refresh_s = workload, Path(input_dir), refresh_s
        self._lock = threading.Lock()
        self._current: InputArrivals | None = None
        self._read_at = 0.0

    def arrival(self, unit: str, event_ms: int) -> float | None:
        with self._lock:
            if self._current is not None:
                found = self._current.arrival(unit, event_ms)
                if found is not None or time.monotonic() - self._read_at < self.refresh_s:
                    return found
            self._current, self._read_at = InputArrivals(self.workload, self.input_dir), time.monotonic()
            return self._current.arrival(unit, event_ms)


def unit_marks(root: Path, unit: str, arrivals: InputArrivals) -> list[tuple[float, float]]:
    """(batch end wall time, arrival time of its watermark's input) of every completed micro-batch with a
    watermark, in time order."""
    from spark_jobs.recovery_units.runtime import epoch_ms

    out = []
    for rec in read_progress(root, unit):
        mark = epoch_ms(rec.get("watermark"))
        if mark is None or mark <= 0:
            continue  # no watermark yet (Spark reports the epoch before any data)
        came = arrivals.arrival(unit, mark)
        if came is not None:
            out.append((float(rec["reported_at"]), came))
    return sorted(out)


def _segments(marks: list[tuple[float, float]]) -> list[tuple[float, float, float, float]]:
    """Per inter-batch interval: (start, end, lag at its start, its time-averaged lag)."""
    return [(t0, t1, t0 - a0, (t0 + t1) / 2 - a0) for (t0, a0), (t1, _) in zip(marks, marks[1:])]


def normal_lag(marks: list[tuple[float, float]], failure_time: float, normal_s: float = 30.0) -> float | None:
    """Time-averaged lag over the ``normal_s`` seconds before the failure (None: too few batches)."""
    segs = [s for s in _segments(marks) if s[0] >= failure_time - normal_s and s[1] <= failure_time]
    total = sum(t1 - t0 for t0, t1, _, _ in segs)
    return sum((t1 - t0) * avg for t0, t1, _, avg in segs) / total if total > 0 else None


def recovered_after(marks: list[tuple[float, float]], failure_time: float, normal_lag: float, not_before: float,
                    window: int = 3, theta: float = THETA) -> float | None:
    """Seconds from the failure to the end of the first batch from which the query is available again (see
    the module docstring); None while it is not."""
    segs = _segments(marks)
    first = bisect.bisect_left([s[0] for s in segs], max(failure_time, not_before))
    for i in range(first, len(segs) - window + 1):
        start, _, lag, _ = segs[i]
        if lag / normal_lag < theta and statistics.mean(s[3] for s in segs[i:i + window]) / normal_lag < theta:
            return start - failure_time
    return None


def restarted_at(marks: list[tuple[float, float]], failure_time: float) -> float | None:
    """The end of the unit's first batch after the failure (None: none yet)."""
    after = [t for t, _ in marks if t > failure_time]
    return min(after) if after else None
