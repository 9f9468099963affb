"""Redundancy against slowdowns on Spark: speculative execution ("first copy wins") sized by thesis
002's feedback controller.

- :mod:`~spark_jobs.redundancy.runtime`: the controller applied by resubmission or live.
- :mod:`~spark_jobs.redundancy.live`: a running driver following level changes without a restart.
- :mod:`~spark_jobs.redundancy.bench` and :mod:`~spark_jobs.redundancy.report`: ``ftops bench redundancy``.
"""
