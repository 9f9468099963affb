"""The sample pipelines of ftops, written on the pipeline API like any user's job (:mod:`spark_jobs.pipeline`):
paper 000's Q1 ``topk`` and Q2 ``incidents``, each with a seeded sample input and a pure-Python
reference used by the tests as an independent oracle. ``--workload topk`` is ``--pipeline
spark_jobs.workloads.topk:pipeline``.
"""
