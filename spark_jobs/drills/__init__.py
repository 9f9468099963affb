"""Chaos drills: a correlated failure under a running job, its tentative outputs measured against
the planner's predicted output fidelity (paper 000, Sec. VI), its recovery against the reference.

- :mod:`~spark_jobs.drills.local`: ``ftops drill run``, a drill on a private local cluster.
- :mod:`~spark_jobs.drills.live`: the steps of a drill on a registered, running job (the Airflow DAG).
- :mod:`~spark_jobs.drills.progress`: a job's micro-batches and output files as drills read them.
- :mod:`~spark_jobs.drills.bench`: ``ftops bench drills``.
"""
