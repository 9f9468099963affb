"""What ftops needs to operate streaming applications written without ftops (*attached* jobs, issue 34):
the user's unchanged PySpark application, judged and handled from what Spark itself records.

- :mod:`~spark_jobs.attach.checkpoint_audit`: whether every micro-batch of a query committed exactly once and
  in order, read from the query's checkpoint folder (the check a drill of an attached job ends with).
- :mod:`~spark_jobs.attach.checkpoint_log`: the checkpoint's logs (offsets, commits, sources) parsed as Spark
  writes them.
- :mod:`~spark_jobs.attach.source_offsets`: what each kind of source's offsets say about a batch's input
  (went back, skipped, records).
"""
