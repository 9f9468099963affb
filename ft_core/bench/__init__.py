"""Benchmarks of the planners, run by ``ftops bench ...``; each writes a table to ``docs/benchmarks/``.

- :mod:`~ft_core.bench.replication`: paper 000's Fig. 13/14 comparisons, optimality and scale.
- :mod:`~ft_core.bench.recovery`: paper 003's Fig. 16 comparison, its Fig. 2 schedules and scale.
- :mod:`~ft_core.bench.simulation`: simulator time against topology size.

The benchmarks that need Spark live in ``spark_jobs`` (drills, checkpoint profiling, recovery
units, redundancy).
"""

