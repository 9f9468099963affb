"""Spark-side of ftops: the local standalone cluster, workloads, replica and reference jobs.

Modules here may import ``ft_core``; ``ft_core`` never imports them. Jobs submitted with
spark-submit import pyspark; cluster management only starts JVMs and reads the masters' JSON.
"""
