"""The topology document, the common language of every layer, and its expansion into tasks.

- :mod:`~ft_core.topology.document`: operators, streams and their partitioning, per-task rates (the
  JSON/YAML document that ``ftops topology check`` validates).
- :mod:`~ft_core.topology.task_graph`: the document expanded into tasks (``O1[0]``, ...) and
  substreams with their rates; what every planner works on.
- :mod:`~ft_core.topology.random_topology`: random topologies of paper 000's Fig. 14 settings, for
  benchmarks and property tests.
"""

from ft_core.topology.document import Operator, Stream, Topology, load_topology, parse_topology, split_task_id
from ft_core.topology.task_graph import TaskGraph, build_task_graph

__all__ = ["Operator", "Stream", "Topology", "load_topology", "parse_topology", "split_task_id", "TaskGraph", "build_task_graph"]
