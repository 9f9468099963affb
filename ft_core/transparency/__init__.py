"""Replication transparency and replica placement (paper 001).

- :mod:`~ft_core.transparency.duplicate_filter`: "first copy wins" merging of replica streams
  (Alg. 1, Theorem 1) and the serving view consumers read.
- :mod:`~ft_core.transparency.placement`: replica nodes per task across failure domains (Alg. 5/6).
"""

import lazy_loader

# Public names load on first use, so importing one module of the package (the CLI does, for every
# command) does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "duplicate_filter": ["check_transparency", "serving_view"],
        "placement": ["load_placement_problem", "place_replicas"],
    },
)
