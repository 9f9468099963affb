"""Paper 000's Q1 on the pipeline API: per-server-group page counts -> merge -> global top-k per window.

A web access log (Zipf page popularity over Zipf-loaded servers, like the World Cup 1998 log):

- ``O1`` (key ``server``, ``p1`` tasks): page counts per event-time window;
- ``O2`` (key ``server``, ``p2`` tasks, fed by merge): the O1 partial counts of its server groups summed;
- ``O3`` (one task): the top ``k`` pages per window (ties broken by page id), rows
  ``{window_start, window_end, rank, page, count}``.

Its accuracy is the overlap of the tentative and the accurate top-k pages (paper 000, Sec. VI).
The sample input draws ``rate`` requests per second of event time: ``server`` ~ Zipf(server_zipf)
over ``n_servers``, ``page`` ~ Zipf(page_zipf) over ``n_pages``; with ``page_affinity`` a, a share a
of requests ranks pages by the server's own popularity (its ranking rotated by server), like
servers with regional content. :func:`python_reference` is the same query in plain Python, an
independent check of the Spark job in the tests.

    >>> w = pipeline.bind(["p1=4"])
    >>> [op.name for op in w.operators()], w.partitioning("O1", "O2")
    (['O1', 'O2', 'O3'], 'merge')
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
from pydantic import Field, model_validator

from ft_core.input.quantities import TaskCount, WholeSeconds
from spark_jobs.pipeline import FileSource, Operator, Output, Params, Pipeline, SampleInput, TopKOverlap
from spark_jobs.pipeline.keys import key_group
from spark_jobs.workloads.seeded import count_in_file, file_slice_ms, rng, sorted_times, zipf_probabilities


class TopkParams(Params):
    seed: int = 7
    rate: float = Field(default=200.0, gt=0, description="requests per second of event time")
    file_s: float = Field(default=1.0, gt=0, description="event-time seconds per input file")
    start_ms: int = Field(default=1_700_000_000_000, ge=0, description="event time of the first record (epoch ms)")
    window_s: WholeSeconds = Field(default=10)
    slide_s: WholeSeconds | None = Field(default=None, description="sliding step (default: tumbling)")
    watermark_s: float = Field(default=2.0, ge=0)
    n_servers: int = Field(default=32, ge=1)
    n_pages: int = Field(default=200, ge=1)
    server_zipf: float = Field(default=1.0, ge=0)
    page_zipf: float = Field(default=1.0, ge=0)
    page_affinity: float = Field(default=0.0, ge=0, le=1, description="share of requests whose page popularity is the "
                                 "server's own (its Zipf ranking rotated by server); 0: one popularity for all")
    k: int = Field(default=10, ge=1)
    p1: TaskCount = Field(default=4)
    p2: TaskCount | None = Field(default=None, description="merge parallelism (default p1 // 2, at least 1)")

    @model_validator(mode="after")
    def _check(self):
        if self.window_s % self.slide:
            raise ValueError(f"window_s ({self.window_s}) must be a multiple of slide_s ({self.slide})")
        if self.p1 % self.merge_parallelism:
            raise ValueError(f"p1={self.p1} and p2={self.merge_parallelism}: the parallelism of O1 must be a "
                             "multiple of that of O2")
        return self

    @property
    def slide(self) -> int:
        return self.slide_s or self.window_s

    @property
    def merge_parallelism(self) -> int:
        return self.p2 if self.p2 is not None else max(1, self.p1 // 2)


def _window(p: TopkParams, col: str = "ts"):
    from pyspark.sql import functions as F

    return F.window(col, f"{p.window_s} seconds", f"{p.slide} seconds").alias("window")


def _operators(p: TopkParams) -> list[Operator]:
    from pyspark.sql import functions as F

    def top_k(df):
        totals = df.groupBy("window", "page").agg(F.sum("n").alias("n"))
        ranked = totals.groupBy("window").agg(
            F.slice(F.sort_array(F.collect_list(F.struct((-F.col("n")).alias("neg"), F.col("page").alias("page")))),
                    1, p.k).alias("top"))
        return (ranked.select("window", F.posexplode("top").alias("pos", "entry"))
                .select("window", (F.col("pos") + 1).cast("int").alias("rank"), F.col("entry.page").alias("page"),
                        (-F.col("entry.neg")).alias("count")))

    return [
        Operator("O1", ("requests",), key="server", parallelism=p.p1, description="per-server-group window page counts",
                 transform=lambda df: df.groupBy(_window(p), "server", "page").agg(F.count(F.lit(1)).alias("n"))),
        Operator("O2", ("O1",), key="server", parallelism=p.merge_parallelism, description="merge of O1 partial counts",
                 transform=lambda df: df.groupBy("window", "page").agg(F.sum("n").alias("n"))),
        Operator("O3", ("O2",), description="global top-k pages per window", transform=top_k),
    ]


def _sources(p: TopkParams) -> list[FileSource]:
    return [FileSource("requests", schema="ts bigint, server bigint, page bigint", event_time="ts",
                       watermark_s=p.watermark_s)]


def requests(p: TopkParams, source: str, index: int) -> list[dict]:
    """The requests of input file ``index`` (sorted by event time)."""
    generator = rng(p.seed, 1, index)
    lo, hi = file_slice_ms(p.start_ms, p.file_s, index)
    n = count_in_file(p.rate, p.file_s, index)
    ts = sorted_times(generator, lo, hi, n)
    servers = generator.choice(p.n_servers, size=n, p=zipf_probabilities(p.n_servers, p.server_zipf))
    pages = generator.choice(p.n_pages, size=n, p=zipf_probabilities(p.n_pages, p.page_zipf))
    if p.page_affinity > 0:  # drawn after the rest, so page_affinity=0 leaves the files unchanged
        own = generator.random(n) < p.page_affinity
        pages = np.where(own, (pages + servers * p.n_pages // p.n_servers) % p.n_pages, pages)
    return [{"ts": int(t), "server": int(s), "page": int(q)} for t, s, q in zip(ts, servers, pages)]


def expected_rates(p: TopkParams) -> dict[str, dict[int, float]]:
    """Expected requests/s of each O1 task: the server Zipf mass of its key group."""
    base = math.lcm(p.p1, p.merge_parallelism, 1)
    groups = {g: 0.0 for g in range(p.p1)}
    for server, prob in enumerate(zipf_probabilities(p.n_servers, p.server_zipf)):
        groups[key_group(server, p.p1, base)] += p.rate * prob
    return {"O1": groups}


pipeline = Pipeline(
    "topk", params=TopkParams, sources=_sources, operators=_operators, output=Output(window="window", key=("rank",)),
    accuracy=TopKOverlap(item="page"),
    sample_input=SampleInput(records=requests, file_s=lambda p: p.file_s, start_ms=lambda p: p.start_ms,
                             expected_rates=expected_rates),
    description="paper 000's Q1: global top-k pages per window of a web access log")


def python_reference(p: TopkParams, records: list[dict], tasks: frozenset[str] | None = None) -> list[dict]:
    """The same query in plain Python (every window, no watermark), restricted to a plan's tasks like
    the replica; for tests and small checks."""
    p1, p2 = p.p1, p.merge_parallelism
    base = math.lcm(p1, p2, 1)
    keep = (lambda t: True) if tasks is None else (lambda t: t in tasks)
    counts: dict[int, Counter] = defaultdict(Counter)
    w, s = p.window_s * 1000, p.slide * 1000
    for r in records:
        g1 = key_group(r["server"], p1, base)
        g2 = key_group(r["server"], p2, base)
        if not (keep(f"O1[{g1}]") and keep(f"O2[{g2}]") and keep("O3[0]")):
            continue
        last = (r["ts"] // s) * s
        for start in range(last, r["ts"] - w, -s):
            counts[start][r["page"]] += 1
    out = []
    for start, c in counts.items():
        top = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[: p.k]
        out += [{"window_start": start, "window_end": start + w, "rank": i + 1, "page": page, "count": n}
                for i, (page, n) in enumerate(top)]
    return sorted(out, key=lambda r: (r["window_start"], r["window_end"], r["rank"]))
