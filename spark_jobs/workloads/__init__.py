"""The streaming workloads of ftops (paper 000's Q1 ``topk`` and Q2 ``incidents``).

- :mod:`.spec`: the parameter models; one object builds the Spark plan, drives the generator and
  emits the topology document (key groups = logical tasks).
- :mod:`.generator`: the seeded, replayable JSON-lines input.
- :mod:`.topk`, :mod:`.incidents`: the DataFrame plans (streaming, replica and batch reference).
- :mod:`.metrics`: per-task (key group) counts per micro-batch via observable metrics.
- :mod:`.sink`: exactly-once per-batch output files and their reader.

``spark_jobs.runtime.run_workload`` is the spark-submit entry point.
"""

from spark_jobs.workloads.spec import IncidentsSpec, TopkSpec, WorkloadSpec, make_spec

__all__ = ["IncidentsSpec", "TopkSpec", "WorkloadSpec", "make_spec"]
