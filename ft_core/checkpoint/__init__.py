"""Checkpoint-interval tuning from profiling runs: Chiron (paper 004).

- :mod:`~ft_core.checkpoint.profiles`: the profiles document (one entry per profiled interval).
- :mod:`~ft_core.checkpoint.recovery_time`: total recovery time after a failure (Eq. 2-4) and the
  classical Young/Daly intervals.
- :mod:`~ft_core.checkpoint.tuning`: latency and recovery models fitted to the profiles and the
  interval that meets a recovery-time bound with the lowest latency.
"""

from ft_core.checkpoint.profiles import ProfilesDocument, load_profiles, parse_profiles
from ft_core.checkpoint.tuning import CheckpointPlan, plan_checkpoint

__all__ = ["ProfilesDocument", "load_profiles", "parse_profiles", "CheckpointPlan", "plan_checkpoint"]
