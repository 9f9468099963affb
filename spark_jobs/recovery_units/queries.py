"""The Spark side of the recovery units: one Structured Streaming query per unit, Parquet tables between them.

Problem: each unit ``op[k]`` of any pipeline (:mod:`spark_jobs.pipeline.units`) must be restartable alone,
from its own checkpoint, without losing or duplicating output, and must compute what the task ``op[k]``
of the pipeline's primary computes.

Method (:func:`operator_output`): the unit builds its operator's inputs, restricts every stream to key
group ``k`` (:func:`spark_jobs.pipeline.keys.key_group_column`; static tables join unrestricted), and applies
the operator's own transform:

- a source (stream) is read as the pipeline reads it (its event time and watermark);
- an upstream operator is the union of the tables of the upstream units that feed ``k``, each restored to
  what the operator wrote (:func:`read_table`): tables store a window flattened into ``window_start`` and
  ``window_end`` (like the sink), so the ``window`` struct is rebuilt, columns in the operator's order.

The output is written with its window flattened (:func:`spark_jobs.pipeline.frames.with_window_bounds`) by
Spark's Parquet file sink (:func:`start_unit`): the sink commits each micro-batch in the table's metadata
log and skips a batch id it has committed, and a file source reading a sink folder sees committed batches
only, so a unit killed mid-batch and restarted from its checkpoint neither loses nor duplicates rows, and
its downstream units never read a half-written batch.

Event time across tables (:func:`read_table`, streaming): each upstream table gets a watermark of its own on
a top-level timestamp, before the union: its window end (delay 0), or for a table without a window the
source event time its rows keep (with the source's delay). So a stateful unit's watermark is the minimum
over its input tables (Spark's default policy; an input without data yet counts as 0): while an upstream
unit is down, a join or an aggregation waits for it instead of dropping its rows as late once it recovers.
A table's window ends never decrease from batch to batch when its operator is a windowed aggregation (it
writes a window once, as its watermark passes the end), so with delay 0 no row is late w.r.t. its own table
(:mod:`.shapes` refuses stateful units over tables without that property). A watermark on the rebuilt
struct itself does not work (Spark 4 computes garbage event-time statistics for a struct), but a stateful
operator needs its grouping or join key to carry the watermark: the rebuilt ``window`` is aliased with
Spark's watermark metadata (``spark.watermarkDelayMs``), which makes an append-mode aggregation accept it as
its event-time key and evict a window once the watermark passes its end, and a stream-stream join evict its
state the same way. The same functions with ``streaming`` off build each unit's batch reference
(:mod:`.reference`).
"""

from __future__ import annotations

from functools import reduce
from pathlib import Path

from ft_core.topology.document import split_task_id
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.frames import with_window_bounds
from spark_jobs.pipeline.keys import key_group_column
from spark_jobs.pipeline.units import UnitTopology
from spark_jobs.recovery_units.tables import TableLayout, checkpoint_dir, folder_name, table_dir

WATERMARK_DELAY_KEY = "spark.watermarkDelayMs"  # Spark's EventTimeWatermark.delayKey
EVENT_TIME = "__ftops_event_time"


def query_name(unit: str) -> str:
    return f"unit-{folder_name(unit)}"


def read_table(spark, layout: TableLayout, tables_root: Path, unit: str, streaming: bool):
    """``unit``'s table as its operator wrote it: committed batches only (a file-sink folder read as a stream
    or a batch honours its metadata log), the window struct rebuilt; streaming, with its watermark."""
    from pyspark.sql import functions as F

    folder = table_dir(tables_root, unit)
    folder.mkdir(parents=True, exist_ok=True)
    df = (spark.readStream if streaming else spark.read).schema(layout.schema()).parquet(str(folder))
    if layout.window:
        if streaming:
            df = df.withColumn(EVENT_TIME, F.timestamp_millis("window_end")).withWatermark(EVENT_TIME, "0 milliseconds")
        window = F.struct(F.timestamp_millis("window_start").alias("start"), F.timestamp_millis("window_end").alias("end"))
        window = window.alias(layout.window, metadata={WATERMARK_DELAY_KEY: 0}) if streaming else window.alias(layout.window)
        return df.select(*[window if c == layout.window else F.col(f"`{c}`") for c in layout.columns])
    if streaming and layout.event_time:
        return df.withWatermark(layout.event_time, f"{layout.delay_ms} milliseconds")
    return df


def _in_group(df, op, k: int, base: int):
    """The rows of key group ``k`` of ``op`` (every row for a single task)."""
    from pyspark.sql import functions as F

    if op.parallelism == 1:
        return df
    return df.filter(key_group_column(op.key, op.parallelism, base) == F.lit(k))


def operator_output(spark, workload: Workload, layouts: dict[str, TableLayout], unit: str, input_dir: Path,
                    tables_root: Path, streaming: bool = True):
    """What the task ``unit`` computes, as its operator's transform returns it (window still a struct).
    ``layouts`` must hold the tables of the operators it reads."""
    op_name, k = split_task_id(unit)
    op = workload.operator(op_name)
    reads = UnitTopology(workload).inputs(unit)
    inputs = []
    for name in op.inputs:
        if name in reads:
            parts = [read_table(spark, layouts[name], tables_root, u, streaming) for u in reads[name]]
            inputs.append(_in_group(reduce(lambda a, b: a.unionByName(b), parts), op, k, workload.key_base))
            continue
        source = workload.source(name)
        df = source.read(spark, Path(input_dir), streaming and not source.static)
        inputs.append(df if source.static else _in_group(df, op, k, workload.key_base))
    return op.transform(*inputs)


def unit_frame(spark, workload: Workload, layouts: dict[str, TableLayout], unit: str, input_dir: Path,
               tables_root: Path, streaming: bool = True):
    """What ``unit`` writes to its table: :func:`operator_output` with its window flattened."""
    out = operator_output(spark, workload, layouts, unit, input_dir, tables_root, streaming)
    return with_window_bounds(out, workload.pipeline.output.window)


def start_unit(spark, workload: Workload, layouts: dict[str, TableLayout], unit: str, input_dir: Path, root: Path,
               trigger_s: float):
    """Start ``unit``'s query: Parquet file sink into its table, its own checkpoint."""
    frame = unit_frame(spark, workload, layouts, unit, input_dir, root)
    return (frame.writeStream.format("parquet").outputMode("append").queryName(query_name(unit))
            .option("path", str(table_dir(root, unit)))
            .option("checkpointLocation", str(checkpoint_dir(root, unit)))
            .trigger(processingTime=f"{int(round(trigger_s * 1000))} milliseconds")
            .start())
