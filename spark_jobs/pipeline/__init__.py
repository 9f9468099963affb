"""The pipeline API: write (or wrap) a Structured Streaming job once, and ftops can plan its replicas,
run its primary, a partial replica and a failure-free reference, drill it, profile it and recover it.

A pipeline is its sources, its operators and how to score its output::

    from pyspark.sql import functions as F
    from spark_jobs.pipeline import FileSource, Operator, Params, Pipeline, SetOverlap

    class AlertParams(Params):
        p1: int = 4            # tasks of the per-sensor operator
        window_s: int = 10

    def operators(p):
        return [
            Operator("stats", inputs=("readings",), key="sensor", parallelism=p.p1,
                     transform=lambda df: df.groupBy(F.window("ts", f"{p.window_s} seconds").alias("window"),
                                                     "sensor").agg(F.max("value").alias("peak"))),
            Operator("alerts", inputs=("stats",),
                     transform=lambda df: df.filter("peak > 90").groupBy("window")
                                            .agg(F.sort_array(F.collect_list("sensor")).alias("sensors"))),
        ]

    pipeline = Pipeline("sensor-alerts", params=AlertParams, operators=operators,
                        sources=[FileSource("readings", schema="ts bigint, sensor bigint, value double",
                                            event_time="ts", watermark_s=2)],
                        accuracy=SetOverlap(columns=("sensors",)))

and ``ftops job register --pipeline my_module:pipeline ...`` (or ``--pipeline path/to/file.py``) makes it
an ftops job. What ftops needs of the code is only what the topology needs: each operator's key
column(s) and number of tasks (key groups, :mod:`.keys`); the transforms stay plain PySpark.

- :mod:`.definition`: :class:`Pipeline`, :class:`Params`, :class:`Output`, :class:`SampleInput` and the
  bound :class:`Workload` (topology, tasks, queries);
- :mod:`.sources`: :class:`FileSource` (JSON, CSV, Parquet), :class:`RateSource`, :class:`StaticTable`;
- :mod:`.operators`: :class:`Operator` and how streams are partitioned;
- :mod:`.accuracy`: :class:`SetOverlap`, :class:`TopKOverlap`, :class:`RelativeError`;
- :mod:`.frames` (the Spark job of each role), :mod:`.metrics` (per-task counts), :mod:`.rates`
  (task rates), :mod:`.sink` (exactly-once output), :mod:`.sample_input` and :mod:`.feed` (seeded
  input), :mod:`.loading` (``--pipeline`` references).
"""

import lazy_loader

# Public names load on first use, so importing one module of the package (the CLI does, for every
# command) does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "accuracy": ["RelativeError", "SetOverlap", "TopKOverlap"],
        "definition": ["NoParams", "Output", "Params", "Pipeline", "SampleInput", "Workload"],
        "operators": ["Operator"],
        "sources": ["FileSource", "RateSource", "Source", "StaticTable"],
    },
)
