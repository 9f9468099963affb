"""Replication transparency and replica placement (paper 001).

- :mod:`~ft_core.transparency.duplicate_filter`: "first copy wins" merging of replica streams
  (Alg. 1, Theorem 1) and the serving view consumers read.
- :mod:`~ft_core.transparency.placement`: replica nodes per task across failure domains (Alg. 5/6).
"""

from ft_core.transparency.duplicate_filter import check_transparency, serving_view
from ft_core.transparency.placement import load_placement_problem, place_replicas

__all__ = ["check_transparency", "serving_view", "load_placement_problem", "place_replicas"]
