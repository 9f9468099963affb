"""ftops's listeners get each micro-batch's progress as one JSON string from the JVM
(spark_jobs/runtime/progress_listener.py), not field by field over py4j as PySpark's own bridge hands it over.
On real Spark, a listener of each kind hears the same query: the progress they build must be the same, down
to the observed metrics ftops's per-task counts read."""

from __future__ import annotations

import json

from pyspark.sql.streaming import StreamingQueryListener

from spark_jobs.runtime.progress_listener import ProgressListener

QUERY = "ftops_listener_check"  # the memory sink makes it a view name


class _Recorded(ProgressListener):
    def __init__(self):
        super().__init__([QUERY])
        self.progress: list = []

    def on_progress(self, progress) -> None:
        self.progress.append(progress)


class _PySparks(_Recorded):
    """The same listener behind PySpark's own bridge (``QueryProgressEvent.fromJObject``), for comparison."""

    _jlistener = StreamingQueryListener._jlistener


def _fields(p) -> dict:
    return {"id": p.id, "runId": p.runId, "name": p.name, "timestamp": p.timestamp, "batchId": p.batchId,
            "batchDuration": p.batchDuration, "numInputRows": p.numInputRows, "durationMs": p.durationMs,
            "eventTime": p.eventTime, "observed": {k: row.asDict() for k, row in p.observedMetrics.items()},
            "sources": [(s.description, json.loads(s.endOffset), s.numInputRows) for s in p.sources],
            "sink": p.sink.description,
            "state": [(s.operatorName, s.numRowsTotal, s.numRowsUpdated) for s in p.stateOperators]}


def test_ftops_listeners_build_the_same_progress_as_pysparks_bridge(spark, tmp_path):
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.shuffle.partitions", "2")
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(3):  # three files, one per micro-batch
        rows = [{"ts": 1_700_000_000 + 10 * i + k, "key": k % 3} for k in range(10)]
        (folder / f"part-{i}.json").write_text("\n".join(json.dumps(r) for r in rows))
    stream = (spark.readStream.schema("ts long, key long").option("maxFilesPerTrigger", 1).json(str(folder))
              .withColumn("t", F.col("ts").cast("timestamp")).withWatermark("t", "2 seconds")
              .observe("enrich.in", F.sum(F.when(F.col("key") == 0, 1).otherwise(0)).cast("long").alias("0"),
                       F.sum(F.when(F.col("key") == 1, 1).otherwise(0)).cast("long").alias("1"))
              .groupBy(F.window("t", "5 seconds"), "key").count())
    ours, theirs = _Recorded(), _PySparks()
    spark.streams.addListener(ours)
    spark.streams.addListener(theirs)
    try:
        query = (stream.writeStream.format("memory").queryName(QUERY).outputMode("append")
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination(180)
        last = query.lastProgress.batchId
        assert ours.wait_heard(last, timeout_s=30) and theirs.wait_heard(last, timeout_s=30)
    finally:
        spark.streams.removeListener(ours)
        spark.streams.removeListener(theirs)
    by_batch = {p.batchId: p for p in theirs.progress}
    assert [p.batchId for p in ours.progress] == list(range(last + 1))
    for mine in ours.progress:
        assert _fields(mine) == _fields(by_batch[mine.batchId])
    # keys 0, 3, 6, 9 of each file; a batch without input (one that only moves the watermark on) observes null
    assert sum(p.observedMetrics["enrich.in"]["0"] for p in ours.progress if p.numInputRows) == 12
    assert ours.progress[0].stateOperators and ours.progress[0].sources[0].numInputRows == 10
