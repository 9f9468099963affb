"""Sensor alerting, an example of bringing your own Structured Streaming job to ftops.

Sensors on sites send readings; a reading above its sensor's threshold (a static table of sensors,
joined with the stream) is an alert; per window and site the alerting sensors are reported. Its shape
differs from the samples: a stream-static join, a shuffle by another key (sensor -> site: a ``full``
stream), and an output operator with several tasks (one query per site group).

    ftops job register --name alerts --pipeline examples/sensor_alerts.py --input data/alerts/in \\
        --master spark://127.0.0.1:7077 --master-ui http://127.0.0.1:8090 --budget 4

Run the pipeline alone with ``ftops workload run --pipeline examples/sensor_alerts.py --role primary ...``;
``ftops workload generate --pipeline examples/sensor_alerts.py --input DIR --realtime`` writes its seeded
sample input (readings, and the sensors table once).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field
from pyspark.sql import functions as F

from ft_core.input.quantities import TaskCount, WholeSeconds
from spark_jobs.pipeline import FileSource, Operator, Output, Params, Pipeline, SampleInput, SetOverlap, StaticTable


class AlertParams(Params):
    seed: int = 11
    rate: float = Field(default=100.0, gt=0, description="readings per second")
    file_s: float = Field(default=1.0, gt=0)
    start_ms: int = 1_700_000_000_000
    window_s: WholeSeconds = Field(default=4)
    watermark_s: float = Field(default=1.0, ge=0)
    n_sensors: int = Field(default=40, ge=1)
    n_sites: int = Field(default=8, ge=1)
    spike_prob: float = Field(default=0.02, ge=0, le=1, description="share of readings that are spikes")
    sensors_p: TaskCount = Field(default=4, description="tasks of the per-sensor operators")
    sites_p: TaskCount = Field(default=2, description="tasks of the per-site alert operator")


def _operators(p: AlertParams) -> list[Operator]:
    def window():  # built inside the transforms: a column needs a running Spark session
        return F.window("ts", f"{p.window_s} seconds").alias("window")

    return [
        # the stream-static join: every reading gets its sensor's site and threshold
        Operator("enrich", ("readings", "sensors"), key="sensor", parallelism=p.sensors_p,
                 transform=lambda readings, sensors: readings.join(sensors, "sensor")),
        Operator("peaks", ("enrich",), key="sensor", parallelism=p.sensors_p,
                 transform=lambda df: df.groupBy(window(), "sensor", "site", "threshold")
                 .agg(F.max("value").alias("peak"))),
        # re-keyed by site: every sensor task can feed every site task
        Operator("alerts", ("peaks",), key="site", parallelism=p.sites_p, priority=2.0,
                 transform=lambda df: df.filter(F.col("peak") > F.col("threshold"))
                 .groupBy("window", "site").agg(F.sort_array(F.collect_list("sensor")).alias("sensors"))),
    ]


def _sources(p: AlertParams):
    return [FileSource("readings", schema="ts bigint, sensor bigint, value double", event_time="ts",
                       watermark_s=p.watermark_s),
            StaticTable("sensors", schema="sensor bigint, site bigint, threshold double")]


def _records(p: AlertParams, source: str, index: int) -> list[dict]:
    rng = np.random.default_rng([p.seed, index])
    lo = p.start_ms + round(index * p.file_s * 1000)
    n = int((index + 1) * p.rate * p.file_s) - int(index * p.rate * p.file_s)
    ts = np.sort(rng.integers(lo, lo + round(p.file_s * 1000), size=n))
    sensors = rng.integers(0, p.n_sensors, size=n)
    values = np.where(rng.random(n) < p.spike_prob, rng.uniform(95, 120, size=n), rng.normal(50, 10, size=n))
    return [{"ts": int(t), "sensor": int(s), "value": round(float(v), 2)} for t, s, v in zip(ts, sensors, values)]


def _tables(p: AlertParams) -> dict[str, list[dict]]:
    return {"sensors": [{"sensor": s, "site": s % p.n_sites, "threshold": 90.0} for s in range(p.n_sensors)]}


pipeline = Pipeline(
    "sensor-alerts", params=AlertParams, sources=_sources, operators=_operators,
    output=Output(window="window", key=("site",)), accuracy=SetOverlap(columns=("sensors",)),
    sample_input=SampleInput(records=_records, file_s=lambda p: p.file_s, start_ms=lambda p: p.start_ms, tables=_tables),
    description="alerting sensors per site and window (a stream-static join, then a shuffle by site)")
