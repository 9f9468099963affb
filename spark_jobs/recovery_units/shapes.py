"""Which pipeline shapes run as recovery units, and the layout of every operator's table (deploy time).

Problem: a unit reads its upstream operators' tables as streams, and Spark knows the event-time progress of
a stream only from a watermark on one of its columns. A table carries no watermark of its writer, so a
reader may put one on a column only when the table's rows arrive in that column's order; otherwise a
stateful reader (an aggregation, a join, a deduplication) would drop rows as late or wait forever. Some
shapes therefore cannot run as units, and must be refused before anything starts, with the reason.

Method: for every operator, in topological order, the streaming DataFrame of its first unit is built
(:func:`.queries.operator_output`, analysis only, nothing runs) and its analysed plan walked for stateful
steps (streaming ``Aggregate``, stream-stream ``Join``, ``Deduplicate``, ``FlatMapGroupsWithState``, ...).
The operator's table is *ordered* when

- its topmost stateful steps are aggregations and its output has the pipeline's window column: a
  windowed aggregation in append mode writes each window once, when its watermark passes the window's
  end, so window ends never decrease from batch to batch (readers watermark the window end, delay 0); or
- it is stateless and each unit reads exactly one stream that is itself ordered (a source by its event
  time, or an ordered table) and keeps the column it is ordered by: a table without a window keeps its
  source's event time (readers watermark it with the source's delay).

Refused, with one line that says why: a stateful operator that reads a table that is not ordered (for
example an aggregation over a join's output: a join writes a window's rows over several micro-batches, as
matches arrive; or over a stateless union of several tables), and anything Spark itself refuses in append
mode (its ``UnsupportedOperationChecker``, run on each unit's plan). A *stateless* operator may read any table
(a filter after a join, say); its own watermark then follows the newest window it has read, which for a
table that is not ordered can run ahead of rows still to come, so its verification and latency are exact
only once the deployment has drained (``ftops units verify`` after the input stops). Supported, among others: aggregations
at the sources and joins or further windowed aggregations downstream of them (the smart city; top-k),
stateless source operators with stream-static joins feeding aggregations (sensor alerts).

The layouts (:class:`~.tables.TableLayout`: the table's schema, derived from the operator's output schema,
and the watermark column readers use) are stored in the deployment. Run in its own process
(:mod:`.local_job`)::

    python -m spark_jobs.recovery_units.shapes --pipeline REF --params JSON --input DIR --out FILE
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from ft_core.errors import InputError
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.units import UnitTopology
from spark_jobs.recovery_units.local_job import job_main, local_session, run_local_job
from spark_jobs.recovery_units.queries import operator_output
from spark_jobs.recovery_units.tables import TableLayout

STATEFUL = {"Aggregate", "Deduplicate", "DeduplicateWithinWatermark", "Distinct", "FlatMapGroupsWithState",
            "FlatMapGroupsInPandasWithState", "TransformWithState", "TransformWithStateInPandas", "Window", "Sort"}


def _stateful(plan, top: bool = True) -> tuple[list[str], list[str]]:
    """(every stateful step, the topmost ones) of an analysed streaming plan (py4j LogicalPlan)."""
    name = plan.nodeName()
    children = [plan.children().apply(i) for i in range(plan.children().size())]
    stateful = plan.isStreaming() and (name in STATEFUL or (name == "Join" and all(c.isStreaming() for c in children)))
    found, tops = ([name], [name]) if stateful else ([], [])
    for child in children:
        below, below_top = _stateful(child)
        found += below
        if not stateful:
            tops += below_top
    return found, tops


def _check_append(spark, df, operator: str) -> None:
    """Spark's own streaming checks for append mode, as at ``start()``; InputError with its first line."""
    jvm = spark._jvm
    try:
        jvm.org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker.checkForStreaming(
            df._jdf.queryExecution().analyzed(), jvm.org.apache.spark.sql.streaming.OutputMode.Append())
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException through py4j
        raise InputError(f"operator {operator} cannot run as a recovery unit: {_first_line(exc)}") from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _order(df, tops: list[str], streams: list, window: str | None) -> dict:
    """Whether the operator's table is ordered, by which column (see the module docstring)."""
    has_window = window is not None
    if tops:
        if has_window and all(t == "Aggregate" for t in tops):
            return {"ordered": True, "note": "a windowed aggregation: each window is written once, in window order"}
        what = "a stream-stream join" if "Join" in tops else "stateful (" + ", ".join(sorted(set(tops))) + ")"
        return {"ordered": False, "note": f"is {what}, so a window's rows can be written over several micro-batches"}
    if len(streams) != 1:
        return {"ordered": False, "note": f"writes {len(streams)} input streams into one table, whose rows interleave"}
    stream = streams[0]
    if isinstance(stream, TableLayout):
        if not stream.ordered:
            return {"ordered": False, "note": f"keeps the order of {stream.operator}'s table, which {stream.note}"}
        column, delay = (None, 0) if stream.window else (stream.event_time, stream.delay_ms)
        if stream.window and has_window:
            return {"ordered": True, "note": f"keeps the window order of {stream.operator}'s table"}
    else:
        column, delay = stream.event_time, int(round(stream.watermark_s * 1000))
    types = dict(df.dtypes)
    if not has_window and column and types.get(column) == "timestamp":
        return {"ordered": True, "event_time": column, "delay_ms": delay,
                "note": f"keeps the event-time order of its input ({column})"}
    return {"ordered": False, "note": "keeps neither a window written in order nor its input's event-time column"}


def derive_layouts(spark, workload: Workload, input_dir: Path, tables_root: Path) -> dict[str, dict]:
    """Every operator's table layout, in topological order; InputError for a shape units cannot run."""
    from spark_jobs.pipeline.frames import with_window_bounds

    units = UnitTopology(workload)
    window_name = workload.pipeline.output.window
    layouts: dict[str, TableLayout] = {}
    for op in workload.operators():
        unit = f"{op.name}[0]"
        try:
            out = operator_output(spark, workload, layouts, unit, input_dir, tables_root)
            flat = with_window_bounds(out, window_name)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's transform failed to analyse
            raise InputError(f"operator {op.name}: its transform does not build on its inputs: {_first_line(exc)}") from None
        found, tops = _stateful(out._jdf.queryExecution().analyzed())
        reads = units.inputs(unit)
        for up in reads:
            if found and not layouts[up].ordered:
                raise InputError(
                    f"operator {op.name} cannot run as recovery units: it is stateful ({', '.join(sorted(set(found)))}) "
                    f"and reads the table of {up}, which {layouts[up].note}; a stateful unit may only read tables of "
                    "windowed aggregations, or of stateless operators that keep their source's event-time order")
        _check_append(spark, flat, op.name)
        streams = [layouts[up] for up, ups in reads.items() for _ in ups]
        streams += [workload.source(n) for n in op.inputs if n not in reads and not workload.source(n).static]
        window = window_name if window_name in out.columns else None
        layouts[op.name] = TableLayout(operator=op.name, table_schema=flat.schema.json(), columns=list(out.columns),
                                       window=window, stateful=found, **_order(out, tops, streams, window))
    return {name: layout.model_dump() for name, layout in layouts.items()}


def analyse(workload: Workload, input_dir: Path, work_dir: Path) -> dict[str, TableLayout]:
    """:func:`derive_layouts` in a local Spark job of its own (InputError for a refused shape)."""
    args = ["--pipeline", workload.ref, "--params", json.dumps(workload.params_dict()), "--input", Path(input_dir).resolve()]
    result = run_local_job("spark_jobs.recovery_units.shapes", args, work_dir / "shapes.json", work_dir / "shapes.log")
    return {name: TableLayout.model_validate(doc) for name, doc in result.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_jobs.recovery_units.shapes", description=__doc__.split("\n\n")[0])
    p.add_argument("--pipeline", required=True)
    p.add_argument("--params", required=True, help="the parameters as a JSON object")
    p.add_argument("--input", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)

    def job():
        workload = load_workload(args.pipeline, json.loads(args.params))
        spark = local_session("ftops-units-shapes")
        try:
            with tempfile.TemporaryDirectory(prefix="ftops-shapes-") as tables:
                return derive_layouts(spark, workload, args.input, Path(tables))
        finally:
            spark.stop()

    return job_main(args.out, job)


if __name__ == "__main__":
    sys.exit(main())
