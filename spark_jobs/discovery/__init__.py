"""Discovery: the measured topology of any running Structured Streaming job, from Spark's monitoring REST API.

For jobs ftops has never seen (not written with :mod:`spark_jobs.pipeline`, no ftops listener): their
driver UI or a History Server shows the micro-batches' SQL plans, stages and task lists, enough for a
topology document the planners take. One concept per module:

- :mod:`~spark_jobs.discovery.rest_client`: the REST calls (httpx, short timeouts), recording and replay;
- :mod:`~spark_jobs.discovery.micro_batches`: a query's micro-batches among the SQL executions;
- :mod:`~spark_jobs.discovery.plan_fragments`: one batch's plan cut into operators (stages, joins' narrow inputs);
- :mod:`~spark_jobs.discovery.stage_tasks`: records and hosts per task of the stages a batch ran;
- :mod:`~spark_jobs.discovery.stage_operators`: operators deduplicated across micro-batches;
- :mod:`~spark_jobs.discovery.task_rates`: records read per second per task, and where each task ran;
- :mod:`~spark_jobs.discovery.measured_topology`: all of it, into the document (``ftops profile topology``);
- :mod:`~spark_jobs.discovery.rediscovery`: a registered discovered job measured again (the planning DAG).
"""
