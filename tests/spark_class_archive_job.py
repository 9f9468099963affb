"""The PySpark job whose driver JVM writes the tests' class-data archive (see tests/spark_class_archive.py).

Run by ``spark-submit`` only. The classes it touches are the ones the archive holds, so it does in one JVM
what the tests' JVMs do between them: in ``local[1]`` the driver runs tasks itself (the executors' classes),
then in ``local-cluster`` it hosts a standalone master and worker (the daemons' classes) and drives
executors. Both parts read files as streams, aggregate windows with a watermark, join a static table and
write through ``foreachBatch`` and a parquet sink with checkpoints, like the pipelines under test.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def _exercise(master: str, folder: Path) -> None:
    spark = (SparkSession.builder.master(master).appName("ftops-class-archive")
             .config("spark.ui.enabled", "true").config("spark.ui.port", "0")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    inputs = folder / "in"
    spark.range(200).select((F.col("id") % 7).alias("key"), F.col("id").alias("value"),
                            F.timestamp_seconds(F.col("id")).alias("at")).write.mode("overwrite").json(str(inputs))
    static = spark.range(7).select(F.col("id").alias("key"), (F.col("id") * 10).alias("weight"))
    stream = spark.readStream.schema("key LONG, value LONG, at TIMESTAMP").json(str(inputs))
    windows = (stream.withWatermark("at", "10 seconds").groupBy(F.window("at", "20 seconds"), "key")
               .agg(F.sum("value").alias("total")).join(static, "key"))
    collected: list[int] = []
    first = (windows.writeStream.outputMode("append").trigger(availableNow=True)
             .option("checkpointLocation", str(folder / "cp-batch"))
             .foreachBatch(lambda frame, _id: collected.append(len(frame.collect()))).start())
    second = (stream.writeStream.format("parquet").trigger(availableNow=True)
              .option("checkpointLocation", str(folder / "cp-parquet")).start(str(folder / "out")))
    first.awaitTermination()
    second.awaitTermination()
    spark.read.parquet(str(folder / "out")).groupBy("key").count().collect()
    spark.stop()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ftops-class-archive-") as tmp:
        _exercise("local[1]", Path(tmp) / "local")
        _exercise("local-cluster[1,1,1024]", Path(tmp) / "cluster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
