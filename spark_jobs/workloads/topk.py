"""Paper 000's Q1 as a Spark plan: per-server-group page counts -> merge -> global top-k per window.

Operators (logical tasks are key groups of the server id, see :mod:`.spec`):

- ``O1[g]``: for the requests of server group ``g = group_O1(server)``, page counts per event-time
  window (the slice aggregates).
- ``O2[h]``: merges the partial counts of its O1 groups (``h = g * p2 div p1``, the merge
  partitioning) per window and page.
- ``O3[0]``: sums the O2 partials per page and keeps the top ``k`` pages per window (ties broken
  by page id), as rows ``{window_start, window_end, rank, page, count}``.

The same function builds the streaming job (watermark on ``ts``, append mode, every window emitted
once when the watermark passes its end), the replica (``tasks``: each operator's rows filtered by
its key group being in the plan, so exactly the replicated MC-trees' contribution) and the batch
reference (same windows, no watermark). Complexity per record: O(windows per record).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.workloads.metrics import observe_groups, restrict
from spark_jobs.workloads.spec import TopkSpec, plan_groups


def event_window(spec, col: str = "ts"):
    return F.window(col, f"{spec.window_s} seconds", f"{spec.slide} seconds")


def window_bounds(df: DataFrame) -> DataFrame:
    return (df.withColumn("window_start", F.unix_millis(F.col("window.start")))
              .withColumn("window_end", F.unix_millis(F.col("window.end"))))


def build(spec: TopkSpec, sources: dict[str, DataFrame], tasks: frozenset[str] | None = None,
          observe: bool = False) -> DataFrame:
    p1, p2 = spec.parallelism("O1"), spec.parallelism("O2")
    requests = sources["requests"].withColumn("g1", spec.group_column("O1", "server"))
    requests = restrict(requests, "g1", plan_groups(tasks, spec, "O1"))
    requests = observe_groups(requests, "O1.in", "g1", p1, observe)

    o1 = requests.groupBy(event_window(spec).alias("window"), "g1", "page").agg(F.count(F.lit(1)).alias("n"))
    o1 = observe_groups(o1, "O1.out", "g1", p1, observe)

    o2_in = o1.withColumn("g2", F.floor(F.col("g1") * F.lit(p2) / F.lit(p1)).cast("int"))
    o2_in = restrict(o2_in, "g2", plan_groups(tasks, spec, "O2"))
    o2_in = observe_groups(o2_in, "O2.in", "g2", p2, observe)
    o2 = o2_in.groupBy("window", "g2", "page").agg(F.sum("n").alias("n"))
    o2 = observe_groups(o2, "O2.out", "g2", p2, observe)

    o3_in = o2.withColumn("g3", F.lit(0))
    o3_in = restrict(o3_in, "g3", plan_groups(tasks, spec, "O3"))
    o3_in = observe_groups(o3_in, "O3.in", "g3", 1, observe)
    totals = o3_in.groupBy("window", "page").agg(F.sum("n").alias("n"))
    ranked = totals.groupBy("window").agg(
        F.slice(F.sort_array(F.collect_list(F.struct((-F.col("n")).alias("neg"), F.col("page").alias("page")))),
                1, spec.k).alias("top"))
    rows = (window_bounds(ranked)
            .select("window_start", "window_end", F.posexplode("top").alias("pos", "entry"))
            .select("window_start", "window_end", (F.col("pos") + 1).cast("int").alias("rank"),
                    F.col("entry.page").alias("page"), (-F.col("entry.neg")).alias("count")))
    rows = observe_groups(rows.withColumn("g3", F.lit(0)), "O3.out", "g3", 1, observe).drop("g3")
    return rows


def python_reference(spec: TopkSpec, requests: list[dict], tasks: frozenset[str] | None = None) -> list[dict]:
    """The same query in plain Python (every window, no watermark), restricted to a plan's tasks
    like the replica; for tests and small checks."""
    from collections import Counter, defaultdict

    p1, p2 = spec.parallelism("O1"), spec.parallelism("O2")
    keep = (lambda t: True) if tasks is None else (lambda t: t in tasks)
    counts: dict[int, Counter] = defaultdict(Counter)
    w, s = spec.window_ms, spec.slide * 1000
    for r in requests:
        g1 = spec.group("O1", r["server"])
        g2 = g1 * p2 // p1
        if not (keep(f"O1[{g1}]") and keep(f"O2[{g2}]") and keep("O3[0]")):
            continue
        last = (r["ts"] // s) * s
        for start in range(last, r["ts"] - w, -s):
            counts[start][r["page"]] += 1
    out = []
    for start, c in counts.items():
        top = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[: spec.k]
        out += [{"window_start": start, "window_end": start + w, "rank": i + 1, "page": page, "count": n}
                for i, (page, n) in enumerate(top)]
    return sorted(out, key=lambda r: (r["window_start"], r["window_end"], r["rank"]))
