"""ft_core: planners for fault-tolerant stream processing (pure Python; no Airflow, no Spark).

One subpackage per concept, each implementing one of the source works:

- :mod:`ft_core.topology`: the topology document every layer speaks, and its task graph.
- :mod:`ft_core.replication`: partial active replication and output fidelity (paper 000, PPA).
- :mod:`ft_core.recovery`: incremental recovery as capacity returns (paper 003).
- :mod:`ft_core.checkpoint`: checkpoint-interval tuning from profiling runs (paper 004, Chiron).
- :mod:`ft_core.transparency`: duplicate filtering and replica placement (paper 001).
- :mod:`ft_core.redundancy`: adaptive redundancy and the fault model (thesis 002).
- :mod:`ft_core.simulation`: the failure timeline (what users see when a rack fails now).
- :mod:`ft_core.bench`: the planner benchmarks; :mod:`ft_core.store`: the PostgreSQL history;
  :mod:`ft_core.cli`: the ``ftops`` command line.
"""

__version__ = "0.1.0"
