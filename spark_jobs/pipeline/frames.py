"""The Spark job of a workload, for each role: the operators' transforms wired together, with ftops's
key-group tagging, per-task counts and (for a replica) the plan's restriction around each transform.

For every operator, in topological order, each input DataFrame (a source's, or an upstream
operator's output) gets the operator's key group ``g`` from its key column(s) (:mod:`.keys`); a replica
keeps only the rows whose ``g`` is one of the plan's tasks of that operator (so a small plan filters
the source rows first and costs little), the rows are counted per task (``observe``), and ``g`` is
dropped before the user's transform runs on them. A static table joins every task unrestricted.

The output is the sink operator's DataFrame with its window turned into ``window_start`` and
``window_end`` (epoch ms) when the pipeline's :class:`~.definition.Output` names a window struct.
The same function builds the streaming primary (``tasks`` None), the replica (``tasks`` the plan's)
and the batch reference (``streaming`` False, no observation).
"""

from __future__ import annotations

from pathlib import Path

from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.keys import key_group_column
from spark_jobs.pipeline.metrics import observe_groups, restrict

GROUP = "__ftops_group"


def read_sources(workload: Workload, spark, input_dir: Path, streaming: bool,
                 max_files_per_trigger: int | None = None) -> dict:
    """Every source of the workload as a DataFrame (static tables are batch reads either way)."""
    return {s.name: s.read(spark, Path(input_dir), streaming and not s.static, max_files_per_trigger)
            for s in workload.sources()}


def build_frame(workload: Workload, sources: dict, tasks: frozenset[str] | None = None, observe: bool = False):
    """The output DataFrame of the workload over ``sources`` (see the module docstring)."""
    frames: dict[str, object] = {}
    for op in workload.operators():
        inputs = []
        for name in op.inputs:
            df = sources[name] if name in sources else frames[name]
            if name in sources and workload.source(name).static:
                inputs.append(df)
                continue
            df = df.withColumn(GROUP, key_group_column(op.key, op.parallelism, workload.key_base))
            df = restrict(df, GROUP, workload.plan_groups(tasks, op.name))
            label = f"{op.name}.in" if len(op.inputs) == 1 else f"{op.name}.in.{name}"
            df = observe_groups(df, label, GROUP, op.parallelism, observe)
            inputs.append(df.drop(GROUP))
        frames[op.name] = _observed_output(workload, op, op.transform(*inputs), observe)
    return with_window_bounds(frames[workload.sink_operators()[0]], workload.pipeline.output.window)


def _observed_output(workload: Workload, op, df, observe: bool):
    """Count the operator's output rows per task when they still carry its key (its ``.out`` metric)."""
    keys = () if op.key is None else ((op.key,) if isinstance(op.key, str) else tuple(op.key))
    if not observe or not set(keys) <= set(df.columns):
        return df
    df = df.withColumn(GROUP, key_group_column(op.key, op.parallelism, workload.key_base))
    return observe_groups(df, f"{op.name}.out", GROUP, op.parallelism).drop(GROUP)


def with_window_bounds(df, window: str | None):
    """Replace a window struct column by ``window_start``/``window_end`` epoch ms, first in the row."""
    if window is None or window not in df.columns:
        return df
    from pyspark.sql import functions as F

    rest = [c for c in df.columns if c != window]
    return df.select(F.unix_millis(F.col(f"{window}.start")).alias("window_start"),
                     F.unix_millis(F.col(f"{window}.end")).alias("window_end"), *rest)
