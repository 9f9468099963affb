"""The local Spark standalone cluster ftops starts from the pyspark package: masters, workers in
failure domains, their state folder, and the faults that break them (a domain's workers SIGKILLed).

- :mod:`~spark_jobs.cluster.standalone`: up, status, kill a domain, add a worker, down.
- :mod:`~spark_jobs.cluster.worker_hosts`: workers on distinct loopback addresses (speculation needs them).
"""
