"""Running a streaming job on Spark, in the roles ftops needs.

- :mod:`~spark_jobs.runtime.run_pipeline`: the spark-submit entry point (``primary``, ``replica``
  restricted to a plan's tasks, batch ``reference``), with the metrics listener.
- :mod:`~spark_jobs.runtime.launch`: a run launched in its own process group and stopped gracefully.
- :mod:`~spark_jobs.runtime.detached_submit`: a stream that outlives the task that submitted it (Airflow).
- :mod:`~spark_jobs.runtime.job_streams`: where a registered job's streams live, and their submissions.
- :mod:`~spark_jobs.runtime.progress_listener`, :mod:`~spark_jobs.runtime.event_log`: what a run
  reports (micro-batch progress; task CPU from Spark's event log).
- :mod:`~spark_jobs.runtime.processes`, :mod:`~spark_jobs.runtime.atomic_json`: local processes
  and state files.
"""
