"""A Structured Streaming job written without ftops (it imports PySpark only), for discovery tests.

Rate source (2 partitions; or JSON files with ``--input``) -> stream-static join with a small region table -> watermark -> windowed
count per region (a shuffle; ``spark.sql.shuffle.partitions`` small) -> noop sink, 1 s trigger.
``--join`` picks how the join runs: ``broadcast`` (a broadcast hint on the static side: the join
happens in the source's stage), ``shuffle`` (what Spark picks for this table without a hint: a
sort-merge join, both sides shuffled) or ``stream`` (a stream-stream join of two rate streams
instead of the static table).

With ``--control DIR`` the application goes through three phases the tests drive with files:
it first runs one batch query and nothing else (an application that is not streaming) until
``DIR/start`` exists; then it starts the streaming query, whose first micro-batch waits in the
static side's UDF until ``DIR/open`` exists (a query with no completed micro-batch); then it runs.
Every phase is announced on stdout. Run: ``python plain_streaming_job.py --port 16850 [--control DIR]``.
"""

from __future__ import annotations

import argparse
import os
import time

GATE_WAIT_S = 300.0


def wait_for(path: str | None, limit_s: float = GATE_WAIT_S) -> None:
    deadline = time.monotonic() + limit_s
    while path and not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True, help="spark.ui.port")
    parser.add_argument("--control", help="folder of the phase files 'start' and 'open'")
    parser.add_argument("--join", choices=("broadcast", "shuffle", "stream"), default="broadcast")
    parser.add_argument("--rows-per-second", type=int, default=20)
    parser.add_argument("--input", help="read the events from JSON files {value, timestamp} in this folder instead "
                        "of the rate source")
    parser.add_argument("--checkpoint", help="checkpoint folder (default: a temporary one)")
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    builder = (SparkSession.builder.master("local[2]").appName("plain-stream")
               .config("spark.ui.port", str(args.port)).config("spark.port.maxRetries", "0")
               .config("spark.sql.shuffle.partitions", "3").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    control = args.control
    print("phase batch", flush=True)
    spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    print("phase not-streaming", flush=True)
    wait_for(control and os.path.join(control, "start"))

    gate = control and os.path.join(control, "open")

    @F.udf("string", useArrow=False)
    def region_of(key):  # waits for the gate: the first micro-batch cannot complete before the test opens it
        wait_for(gate)
        return f"r{key % 3}"

    def rate(rows: int):
        return (spark.readStream.format("rate").option("rowsPerSecond", rows).option("numPartitions", 2).load()
                .withColumn("key", F.col("value") % 8))

    if args.input:
        events = (spark.readStream.schema("value LONG, timestamp TIMESTAMP").json(args.input)
                  .withColumn("key", F.col("value") % 8))
    else:
        events = rate(args.rows_per_second)
    if args.join == "stream":
        regions = (rate(max(1, args.rows_per_second // 4)).withColumn("region", region_of("key"))
                   .select(F.col("key").alias("rkey"), "region", F.col("timestamp").alias("rtime"))
                   .withWatermark("rtime", "2 seconds"))
        joined = events.withWatermark("timestamp", "2 seconds").join(
            regions, F.expr("key = rkey AND rtime BETWEEN timestamp - INTERVAL 3 SECONDS AND timestamp"))
    else:
        regions = spark.createDataFrame([(k,) for k in range(8)], ["key"]).withColumn("region", region_of("key"))
        joined = events.join(F.broadcast(regions) if args.join == "broadcast" else regions, "key")
        joined = joined.withWatermark("timestamp", "2 seconds")
    counts = joined.groupBy(F.window("timestamp", "4 seconds"), "region").agg(F.count("*").alias("n"))
    writer = counts.writeStream.queryName("region_counts").format("noop").outputMode("append")
    if args.checkpoint:
        writer = writer.option("checkpointLocation", args.checkpoint)
    query = writer.trigger(processingTime="1 second").start()
    print("phase streaming", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main()
