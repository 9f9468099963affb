"""A test pipeline whose query fails on purpose: counts per key and window, through a Python UDF that
raises on the first row at or after ``fail_after_s`` seconds of input, once (``marker`` is created
then) or on every attempt (``always``). Used to check that a failed query starts again from its
checkpoint (spark_jobs.runtime.query_restarts) and gives up after its restart budget."""

from __future__ import annotations

import os

import numpy as np
from pydantic import Field
from pyspark.sql import functions as F

from spark_jobs.pipeline import FileSource, Operator, Output, Params, Pipeline, SampleInput, SetOverlap

START_MS = 1_700_000_000_000


class FailingParams(Params):
    rate: float = Field(default=50.0, gt=0)
    marker: str = ""  # empty: never fail
    fail_after_s: float = 3.0
    always: bool = False


def _operators(p: FailingParams) -> list[Operator]:
    cutoff = START_MS + round(p.fail_after_s * 1000)
    marker, always = p.marker, p.always

    def fails(ts):
        if marker and ts >= cutoff and (always or not os.path.exists(marker)):
            open(marker, "w").close()
            raise RuntimeError("injected failure of failing_pipeline")
        return True

    def count(df):
        checked = df.filter(F.udf(fails, "boolean", useArrow=False)(F.unix_millis("ts")))
        return checked.groupBy(F.window("ts", "1 second").alias("window"), "key").agg(F.count("*").alias("n"))

    return [Operator("counts", ("events",), key="key", parallelism=2, transform=count)]


def _records(p: FailingParams, source: str, index: int) -> list[dict]:
    rng = np.random.default_rng([5, index])
    n = int(p.rate)
    ts = np.sort(rng.integers(START_MS + index * 1000, START_MS + (index + 1) * 1000, size=n))
    return [{"ts": int(t), "key": int(k)} for t, k in zip(ts, rng.integers(0, 6, size=n))]


pipeline = Pipeline(
    "failing", params=FailingParams, operators=_operators,
    sources=[FileSource("events", schema="ts bigint, key bigint", event_time="ts", watermark_s=0.5)],
    output=Output(window="window", key=("key",)), accuracy=SetOverlap(columns=("n",)),
    sample_input=SampleInput(records=_records, start_ms=START_MS))
