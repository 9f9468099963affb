"""The Spark side of ftops: real Structured Streaming jobs, the clusters they run on, and the
experiments ftops runs on them. Modules here may import ``ft_core``; ``ft_core`` never imports them.

- :mod:`spark_jobs.workloads`: the sample pipelines (paper 000's Q1 ``topk`` and Q2 ``incidents``),
  their seeded input, per-task metrics, exactly-once sinks and accuracy functions.
- :mod:`spark_jobs.runtime`: running a job: the spark-submit entry point (primary, replica,
  reference roles), launching and stopping runs, detached submission, registered jobs' streams.
- :mod:`spark_jobs.cluster`: the local Spark standalone cluster ftops starts, breaks and stops.
- :mod:`spark_jobs.drills`: chaos drills, tentative accuracy against predicted output fidelity (paper 000).
- :mod:`spark_jobs.recovery_units`: a pipeline as recovery units restarted stage by stage (paper 003).
- :mod:`spark_jobs.profiling`: checkpoint-interval profiling and validation (paper 004, Chiron).
- :mod:`spark_jobs.redundancy`: speculative execution sized by the controller (thesis 002).
- :mod:`spark_jobs.serving_view` (paper 001's transparency) and :mod:`spark_jobs.fault_injection`
  (thesis 002's fault model applied to a running job).
- :mod:`spark_jobs.cli`: the ``ftops`` commands of this package (``ftops.commands`` entry points).
"""
