"""A streaming application written without ftops (it imports PySpark only, and leaves the master to spark-submit),
as a team runs it today: ``spark-submit --master spark://... existing_job.py --out DIR --checkpoint DIR``.

Rate source (``--rows-per-second``, 2 partitions) -> stream-static join with a small region table -> event-time
watermark -> 2-second windowed count per region (a shuffle) -> ``foreachBatch`` writing each micro-batch's closed
windows to ``<out>/batch-<id>.json``, overwritten when a batch runs again (idempotent per batch id, so exactly-once
end to end), 1-second trigger, the query named ``clicks``. Runs until stopped.
"""

from __future__ import annotations

import argparse
import json
import os


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--rows-per-second", type=int, default=20)
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.builder.appName("clicks-per-region").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    regions = spark.createDataFrame([(i, f"region-{i}") for i in range(4)], ["rid", "region"])
    clicks = (spark.readStream.format("rate").option("rowsPerSecond", args.rows_per_second).option("numPartitions", 2)
              .load().withColumn("rid", F.col("value") % 4))
    counts = (clicks.join(regions, "rid").withWatermark("timestamp", "2 seconds")
              .groupBy(F.window("timestamp", "2 seconds"), "region").count())
    os.makedirs(args.out, exist_ok=True)

    def write(batch, batch_id: int) -> None:
        rows = [{"window_start": r["window"]["start"].isoformat(), "region": r["region"], "count": r["count"]}
                for r in batch.collect()]
        tmp = os.path.join(args.out, f".batch-{batch_id}.json.tmp")
        with open(tmp, "w") as fh:
            json.dump(rows, fh)
        os.replace(tmp, os.path.join(args.out, f"batch-{batch_id}.json"))

    query = (counts.writeStream.queryName("clicks").outputMode("append").foreachBatch(write)
             .option("checkpointLocation", args.checkpoint).trigger(processingTime="1 second").start())
    query.awaitTermination()


if __name__ == "__main__":
    main()
