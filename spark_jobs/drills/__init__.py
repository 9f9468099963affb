"""Chaos drills: a correlated failure under a running job, its tentative outputs measured against
the planner's predicted output fidelity (paper 000, Sec. VI), its recovery against the reference.

- :mod:`~spark_jobs.drills.engine`: the one drill engine on a registered, running job (its steps, its typed
  state, the fault journal, its finish), behind ``ftops drill job`` (:mod:`~spark_jobs.drills.job_drill`), the
  ``ftops_chaos_drill`` DAG and ``ftops drill run``; :mod:`~spark_jobs.drills.waits`: the waits between its steps;
  :mod:`~spark_jobs.drills.reconcile`: undoing faults from the journal (the drill's finish, the next experiment,
  the safety net, ``ftops doctor --repair``, ``ftops halt``).
- :mod:`~spark_jobs.drills.live`: what a drill on a running job measures.
- :mod:`~spark_jobs.drills.local`: ``ftops drill run``, the engine's drill of a pipeline on a private local cluster
  (:mod:`~spark_jobs.drills.private_job`: the job it registers in a store of its own); :mod:`~spark_jobs.drills.design`:
  whether its outage can measure a window, checked before it starts; :mod:`~spark_jobs.drills.ports`: its default port base.
- :mod:`~spark_jobs.drills.progress`: a job's micro-batches and output files as drills read them.
- :mod:`~spark_jobs.drills.bench`: ``ftops bench drills``.
"""
