"""Paper 000's Q2 on the pipeline API: segment speeds and distinct incidents, joined into jams.

Users on road segments report their locations and the incidents they see:

- ``O1`` (key ``segment``, ``p1`` tasks): average speed per segment and event-time window (kept exact:
  speeds summed in hundredths as integers);
- ``O2`` (key ``segment``, ``p2`` tasks): distinct incidents per segment and window;
- ``O3`` (key ``segment``, ``p2`` tasks, a join: correlated input): an incident whose segment's
  window average speed is below ``jam_speed`` is a jam (O1 feeds O3 by merge, O2 one to one);
- ``O4`` (one task): per window, the number of jam incidents and their sorted ids,
  ``{window_start, window_end, jams, incidents}``.

Its accuracy is the overlap of the tentative and the accurate jam incidents per window (paper 000,
Sec. VI). The sample input: users apportioned to segments by Zipf(segment_zipf) send locations
(speed 50-90, or 5-25 while a jam is active on the segment); incident ``j`` happens at
``(j + 0.5) * incident_interval_s`` on a segment chosen by its users, every user there reports it
within ``report_spread_s``, and with probability ``jam_prob`` it jams the segment for
``jam_duration_s``.

    >>> w = pipeline.bind(["p1=4"])
    >>> [(a, b, w.partitioning(a, b)) for a, b in w.stream_pairs()]
    [('O1', 'O3', 'merge'), ('O2', 'O3', 'one_to_one'), ('O3', 'O4', 'merge')]
"""

from __future__ import annotations

import math
from collections import defaultdict
from functools import lru_cache

import numpy as np
from pydantic import Field, model_validator

from ft_core.input.quantities import TaskCount, WholeSeconds
from spark_jobs.pipeline import FileSource, Operator, Output, Params, Pipeline, SampleInput, SetOverlap
from spark_jobs.pipeline.keys import key_group
from spark_jobs.workloads.seeded import apportion, count_in_file, file_slice_ms, rng, sorted_times, zipf_probabilities

_LOCATIONS, _INCIDENTS, _INCIDENT_STREAM = 2, 3, 101


class IncidentsParams(Params):
    seed: int = 7
    rate: float = Field(default=200.0, gt=0, description="location reports per second of event time")
    file_s: float = Field(default=1.0, gt=0, description="event-time seconds per input file")
    start_ms: int = Field(default=1_700_000_000_000, ge=0, description="event time of the first record (epoch ms)")
    window_s: WholeSeconds = Field(default=10)
    slide_s: WholeSeconds | None = Field(default=None, description="sliding step (default: tumbling)")
    watermark_s: float = Field(default=2.0, ge=0)
    n_users: int = Field(default=1000, ge=1)
    n_segments: int = Field(default=100, ge=1)
    segment_zipf: float = Field(default=0.5, ge=0)
    incident_interval_s: float = Field(default=2.0, gt=0)
    report_spread_s: float = Field(default=3.0, ge=0, description="reports arrive within this delay after the incident")
    jam_prob: float = Field(default=0.5, ge=0, le=1, description="share of incidents that slow their segment down")
    jam_duration_s: float = Field(default=20.0, ge=0)
    jam_speed: float = Field(default=50.0, gt=0, description="a window's average speed below this is a jam")
    p1: TaskCount = Field(default=4)
    p2: TaskCount | None = Field(default=None, description="distinct-incident and join parallelism (default p1 // 2)")

    @model_validator(mode="after")
    def _check(self):
        if self.window_s % self.slide:
            raise ValueError(f"window_s ({self.window_s}) must be a multiple of slide_s ({self.slide})")
        if self.p1 % self.join_parallelism:
            raise ValueError(f"p1={self.p1} and p2={self.join_parallelism}: the parallelism of O1 must be a "
                             "multiple of that of O3")
        return self

    @property
    def slide(self) -> int:
        return self.slide_s or self.window_s

    @property
    def join_parallelism(self) -> int:
        return self.p2 if self.p2 is not None else max(1, self.p1 // 2)

    def users_per_segment(self) -> list[int]:
        return apportion(self.n_users, zipf_probabilities(self.n_segments, self.segment_zipf))


def _window(p: IncidentsParams):
    from pyspark.sql import functions as F

    return F.window("ts", f"{p.window_s} seconds", f"{p.slide} seconds").alias("window")


def _operators(p: IncidentsParams) -> list[Operator]:
    from pyspark.sql import functions as F

    def jams(speeds, incidents):
        joined = speeds.join(incidents, ["window", "segment"], "inner")
        return joined.filter(F.col("speed_c") < F.lit(round(p.jam_speed * 100)) * F.col("n"))

    def per_window(df):
        return df.groupBy("window").agg(F.count(F.lit(1)).cast("long").alias("jams"),
                                        F.sort_array(F.collect_list("incident")).alias("incidents"))

    q = p.join_parallelism
    return [
        Operator("O1", ("locations",), key="segment", parallelism=p.p1, description="segment average speed per window",
                 transform=lambda df: df.groupBy(_window(p), "segment").agg(
                     F.sum(F.round(F.col("speed") * 100).cast("bigint")).alias("speed_c"), F.count(F.lit(1)).alias("n"))),
        Operator("O2", ("incidents",), key="segment", parallelism=q, description="distinct incidents per window",
                 transform=lambda df: df.groupBy(_window(p), "segment", "incident").agg(F.count(F.lit(1)).alias("reports"))),
        Operator("O3", ("O1", "O2"), key="segment", parallelism=q, join=True, transform=jams,
                 description="join: incidents on jammed segments"),
        Operator("O4", ("O3",), description="jam incidents per window", transform=per_window),
    ]


def _sources(p: IncidentsParams) -> list[FileSource]:
    return [FileSource("locations", schema="ts bigint, user bigint, segment bigint, speed double", event_time="ts",
                       watermark_s=p.watermark_s),
            FileSource("incidents", schema="ts bigint, incident bigint, segment bigint, user bigint", event_time="ts",
                       watermark_s=p.watermark_s)]


class _Town:
    """Users on segments and the incident schedule of a parameter set (cached per parameters)."""

    def __init__(self, p: IncidentsParams):
        self.p = p
        self.users = p.users_per_segment()
        self.first_user = np.concatenate([[0], np.cumsum(self.users)[:-1]]).astype(int)
        self.segment_of_user = np.repeat(np.arange(p.n_segments), self.users)
        self.segment_p = np.array(self.users, dtype=float) / p.n_users
        self._incidents: dict[int, tuple[int, int, bool, np.ndarray]] = {}

    def incident(self, j: int) -> tuple[int, int, bool, np.ndarray]:
        """(time ms, segment, jams, report delays ms) of incident j."""
        if j not in self._incidents:
            generator = rng(self.p.seed, _INCIDENT_STREAM, j)
            segment = int(generator.choice(self.p.n_segments, p=self.segment_p))
            jam = bool(generator.random() < self.p.jam_prob)
            delays = generator.integers(0, max(1, round(self.p.report_spread_s * 1000)), size=self.users[segment])
            time_ms = self.p.start_ms + round((j + 0.5) * self.p.incident_interval_s * 1000)
            self._incidents[j] = (time_ms, segment, jam, delays)
        return self._incidents[j]

    def incidents_between(self, lo_ms: int, hi_ms: int) -> range:
        """Indices j whose incident time lies in [lo_ms, hi_ms) (a superset at the edges)."""
        step = self.p.incident_interval_s * 1000
        first = max(0, math.floor((lo_ms - self.p.start_ms) / step - 1))
        last = max(0, math.ceil((hi_ms - self.p.start_ms) / step + 1))
        return range(first, last)


@lru_cache(maxsize=16)
def _town(p: IncidentsParams) -> _Town:
    return _Town(p)


def _locations(p: IncidentsParams, index: int) -> list[dict]:
    town = _town(p)
    generator = rng(p.seed, _LOCATIONS, index)
    lo, hi = file_slice_ms(p.start_ms, p.file_s, index)
    n = count_in_file(p.rate, p.file_s, index)
    ts = sorted_times(generator, lo, hi, n)
    users = generator.integers(0, p.n_users, size=n)
    segments = town.segment_of_user[users]
    speeds = generator.uniform(50.0, 90.0, size=n)
    slow = generator.uniform(5.0, 25.0, size=n)
    jam_ms = round(p.jam_duration_s * 1000)
    for j in town.incidents_between(lo - jam_ms, hi):
        t, seg, jam, _ = town.incident(j)
        if jam:
            active = (segments == seg) & (ts >= t) & (ts < t + jam_ms)
            speeds = np.where(active, slow, speeds)
    return [{"ts": int(t), "user": int(u), "segment": int(s), "speed": round(float(v), 2)}
            for t, u, s, v in zip(ts, users, segments, speeds)]


def _incident_reports(p: IncidentsParams, index: int) -> list[dict]:
    town = _town(p)
    lo, hi = file_slice_ms(p.start_ms, p.file_s, index)
    spread_ms = round(p.report_spread_s * 1000)
    out = []
    for j in town.incidents_between(lo - spread_ms, hi):
        t, seg, _, delays = town.incident(j)
        for offset, delay in enumerate(delays):
            ts = t + int(delay)
            if lo <= ts < hi:
                out.append({"ts": ts, "incident": j, "segment": seg, "user": int(town.first_user[seg] + offset)})
    out.sort(key=lambda r: (r["ts"], r["incident"], r["user"]))
    return out


def records(p: IncidentsParams, source: str, index: int) -> list[dict]:
    """The records of input file ``index`` of ``locations`` or ``incidents`` (sorted by event time)."""
    return _locations(p, index) if source == "locations" else _incident_reports(p, index)


def expected_rates(p: IncidentsParams) -> dict[str, dict[int, float]]:
    """Expected records/s of the O1 and O2 tasks: users (locations) and reports (incidents) by segment."""
    q = p.join_parallelism
    base = math.lcm(p.p1, q, 1)
    o1 = {g: 0.0 for g in range(p.p1)}
    o2 = {g: 0.0 for g in range(q)}
    for seg, n in enumerate(p.users_per_segment()):
        share = n / p.n_users
        o1[key_group(seg, p.p1, base)] += p.rate * share                       # a uniform user per record
        o2[key_group(seg, q, base)] += share * n / p.incident_interval_s       # all n users report
    return {"O1": o1, "O2": o2}


pipeline = Pipeline(
    "incidents", params=IncidentsParams, sources=_sources, operators=_operators, output=Output(window="window"),
    accuracy=SetOverlap(columns=("incidents",)),
    sample_input=SampleInput(records=records, file_s=lambda p: p.file_s, start_ms=lambda p: p.start_ms,
                             expected_rates=expected_rates),
    description="paper 000's Q2: jam incidents per window from location and incident reports")


def python_reference(p: IncidentsParams, locations: list[dict], reports: list[dict],
                     tasks: frozenset[str] | None = None) -> list[dict]:
    """The same query in plain Python (every window), restricted to a plan's tasks like the replica."""
    q = p.join_parallelism
    base = math.lcm(p.p1, q, 1)
    keep = (lambda t: True) if tasks is None else (lambda t: t in tasks)
    w, s = p.window_s * 1000, p.slide * 1000

    def windows(ts):
        last = (ts // s) * s
        return range(last, ts - w, -s)

    speed = defaultdict(lambda: [0, 0])
    for r in locations:
        g1, g3 = key_group(r["segment"], p.p1, base), key_group(r["segment"], q, base)
        if keep(f"O1[{g1}]") and keep(f"O3[{g3}]"):
            for start in windows(r["ts"]):
                acc = speed[(start, r["segment"])]
                acc[0] += round(r["speed"] * 100)
                acc[1] += 1
    distinct = set()
    for r in reports:
        g2 = key_group(r["segment"], q, base)
        if keep(f"O2[{g2}]") and keep(f"O3[{g2}]"):
            for start in windows(r["ts"]):
                distinct.add((start, r["segment"], r["incident"]))
    out = defaultdict(list)
    if keep("O4[0]"):
        for start, seg, incident in distinct:
            acc = speed.get((start, seg))
            if acc and acc[0] < round(p.jam_speed * 100) * acc[1]:
                out[start].append(incident)
    return [{"window_start": st, "window_end": st + w, "jams": len(ids), "incidents": sorted(ids)}
            for st, ids in sorted(out.items())]
