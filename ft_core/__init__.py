"""ft_core: planners for fault-tolerant stream processing (pure Python; no Airflow, no Spark).

Modules hold one concept each: ``topology`` (the document), ``task_graph`` (its expansion),
``fidelity`` (Eq. 1-4 of the PPA paper), ``mctree`` (minimal complete trees), the replication
planners, the recovery planners, checkpoint-interval tuning and the failure timeline simulator.
"""

__version__ = "0.1.0"
