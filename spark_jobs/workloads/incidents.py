"""Paper 000's Q2 as a Spark plan: segment speeds and distinct incidents, joined into jams.

Operators (logical tasks are key groups of the road segment, see :mod:`.spec`):

- ``O1[g]``: average speed per segment and event-time window, for segments of group ``g``
  (kept exact: speeds are summed in hundredths as integers).
- ``O2[h]``: distinct incidents per window (the reports of all users on the segment combined).
- ``O3[h]`` (correlated input: a join): joins O1's and O2's rows on (window, segment); an incident
  whose segment's window average speed is below ``jam_speed`` is a jam. O1 feeds O3 by merge
  (``h = g * p3 div p1``), O2 one to one.
- ``O4[0]``: per window, the number of jam incidents and their sorted ids:
  ``{window_start, window_end, jams, incidents}``.

One function builds the streaming job (watermarks on both inputs, append mode), the replica (each
operator's rows filtered by its key group being in the plan) and the batch reference.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.workloads.metrics import observe_groups, restrict
from spark_jobs.workloads.spec import IncidentsSpec, plan_groups
from spark_jobs.workloads.topk import event_window, window_bounds


def build(spec: IncidentsSpec, sources: dict[str, DataFrame], tasks: frozenset[str] | None = None,
          observe: bool = False) -> DataFrame:
    p1, p2, p3 = (spec.parallelism(o) for o in ("O1", "O2", "O3"))

    loc = sources["locations"].withColumn("g1", spec.group_column("O1", "segment"))
    loc = restrict(loc, "g1", plan_groups(tasks, spec, "O1"))
    loc = observe_groups(loc, "O1.in", "g1", p1, observe)
    o1 = loc.groupBy(event_window(spec).alias("window"), "segment", "g1").agg(
        F.sum(F.round(F.col("speed") * 100).cast("bigint")).alias("speed_c"), F.count(F.lit(1)).alias("n"))
    o1 = observe_groups(o1, "O1.out", "g1", p1, observe)
    o1 = o1.withColumn("g3", F.floor(F.col("g1") * F.lit(p3) / F.lit(p1)).cast("int"))
    o1 = restrict(o1, "g3", plan_groups(tasks, spec, "O3"))
    o1 = observe_groups(o1, "O3.in.O1", "g3", p3, observe).drop("g1", "g3")

    inc = sources["incidents"].withColumn("g2", spec.group_column("O2", "segment"))
    inc = restrict(inc, "g2", plan_groups(tasks, spec, "O2"))
    inc = observe_groups(inc, "O2.in", "g2", p2, observe)
    o2 = inc.groupBy(event_window(spec).alias("window"), "segment", "incident", "g2").agg(
        F.count(F.lit(1)).alias("reports"))
    o2 = observe_groups(o2, "O2.out", "g2", p2, observe)
    o2 = o2.withColumn("g3", F.floor(F.col("g2") * F.lit(p3) / F.lit(p2)).cast("int"))
    o2 = restrict(o2, "g3", plan_groups(tasks, spec, "O3"))
    o2 = observe_groups(o2, "O3.in.O2", "g3", p3, observe).drop("g2")

    joined = o1.join(o2, ["window", "segment"], "inner")
    jams = joined.filter(F.col("speed_c") < F.lit(round(spec.jam_speed * 100)) * F.col("n"))
    jams = observe_groups(jams, "O3.out", "g3", p3, observe)

    o4_in = jams.withColumn("g4", F.lit(0))
    o4_in = restrict(o4_in, "g4", plan_groups(tasks, spec, "O4"))
    o4_in = observe_groups(o4_in, "O4.in", "g4", 1, observe)
    o4 = o4_in.groupBy("window").agg(F.count(F.lit(1)).alias("jams"),
                                     F.sort_array(F.collect_list("incident")).alias("incidents"))
    rows = window_bounds(o4).select("window_start", "window_end", F.col("jams").cast("long").alias("jams"), "incidents")
    return observe_groups(rows.withColumn("g4", F.lit(0)), "O4.out", "g4", 1, observe).drop("g4")


def python_reference(spec: IncidentsSpec, locations: list[dict], reports: list[dict],
                     tasks: frozenset[str] | None = None) -> list[dict]:
    """The same query in plain Python (every window), restricted to a plan's tasks like the replica."""
    from collections import defaultdict

    p1, p2, p3 = (spec.parallelism(o) for o in ("O1", "O2", "O3"))
    keep = (lambda t: True) if tasks is None else (lambda t: t in tasks)
    w, s = spec.window_ms, spec.slide * 1000

    def windows(ts):
        last = (ts // s) * s
        return range(last, ts - w, -s)

    speed = defaultdict(lambda: [0, 0])
    for r in locations:
        g1 = spec.group("O1", r["segment"])
        if keep(f"O1[{g1}]") and keep(f"O3[{g1 * p3 // p1}]"):
            for start in windows(r["ts"]):
                acc = speed[(start, r["segment"])]
                acc[0] += round(r["speed"] * 100)
                acc[1] += 1
    distinct = set()
    for r in reports:
        g2 = spec.group("O2", r["segment"])
        if keep(f"O2[{g2}]") and keep(f"O3[{g2 * p3 // p2}]"):
            for start in windows(r["ts"]):
                distinct.add((start, r["segment"], r["incident"]))
    out = defaultdict(list)
    if keep("O4[0]"):
        for start, seg, incident in distinct:
            acc = speed.get((start, seg))
            if acc and acc[0] < round(spec.jam_speed * 100) * acc[1]:
                out[start].append(incident)
    return [{"window_start": st, "window_end": st + w, "jams": len(ids), "incidents": sorted(ids)}
            for st, ids in sorted(out.items())]
