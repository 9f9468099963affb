"""The failure-free reference of a units deployment: every unit's table computed in batch by the pipeline's
own operators over the input as it is now.

Problem: a verification needs, per unit, the rows a run without failures writes, for any pipeline (not a
hand-written model of one). Method: the same unit frames as the streaming queries
(:func:`.queries.unit_frame` with ``streaming`` off: the same key-group restriction, the same restored
window, the same transform), unit by unit in topological order, in a local Spark batch job; a unit of a
downstream operator reads the reference tables of the upstream units that feed it. Each reference table is
written as Parquet to ``<out>/tables/<unit>``. Batch has no watermark, so every window is there, closed or
not; a verification compares only the windows a unit has closed (:mod:`.verification`). Run in its own
process (:mod:`.local_job`)::

    python -m spark_jobs.recovery_units.reference --dir DEPLOYMENT --tables OUT --out RESULT.json

Complexity: one batch job per unit over the whole input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spark_jobs.recovery_units.deployment import load
from spark_jobs.recovery_units.local_job import job_main, local_session, run_local_job
from spark_jobs.recovery_units.queries import unit_frame
from spark_jobs.recovery_units.tables import table_dir


def write_reference(spark, root: Path, out: Path) -> list[str]:
    """Every unit's reference table under ``out``; returns the units written."""
    dep = load(root)
    workload = dep.workload
    for unit in dep.units.unit_ids():
        frame = unit_frame(spark, workload, dep.layouts, unit, Path(dep.input), out, streaming=False)
        frame.coalesce(1).write.mode("overwrite").parquet(str(table_dir(out, unit)))
    return dep.units.unit_ids()


def reference_tables(root: Path) -> Path:
    """Compute the reference now (a local Spark job); returns the folder holding ``tables/<unit>``."""
    work = Path(root) / "verify"
    out = work / "reference"
    run_local_job("spark_jobs.recovery_units.reference", ["--dir", Path(root).resolve(), "--tables", out.resolve()],
                  work / "reference.json", work / "reference.log")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_jobs.recovery_units.reference", description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--tables", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)

    def job():
        spark = local_session("ftops-units-reference")
        try:
            return write_reference(spark, args.dir, args.tables)
        finally:
            spark.stop()

    return job_main(args.out, job)


if __name__ == "__main__":
    sys.exit(main())
