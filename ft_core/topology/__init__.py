"""The topology document, the common language of every layer, and its expansion into tasks.

- :mod:`~ft_core.topology.document`: operators, streams and their partitioning, per-task rates (the
  JSON/YAML document that ``ftops topology check`` validates).
- :mod:`~ft_core.topology.task_graph`: the document expanded into tasks (``O1[0]``, ...) and
  substreams with their rates; what every planner works on.
- :mod:`~ft_core.topology.random_topology`: random topologies of paper 000's Fig. 14 settings, for
  benchmarks and property tests.
"""

import lazy_loader

# Public names load on first use, so importing one module of the package (the CLI does, for every
# command) does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "document": ["Operator", "Stream", "Topology", "load_topology", "parse_topology", "split_task_id"],
        "task_graph": ["TaskGraph", "build_task_graph"],
    },
)
