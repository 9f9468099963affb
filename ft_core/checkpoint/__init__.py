"""Checkpoint-interval tuning from profiling runs: Chiron (paper 004).

- :mod:`~ft_core.checkpoint.profiles`: the profiles document (one entry per profiled interval).
- :mod:`~ft_core.checkpoint.recovery_time`: total recovery time after a failure (Eq. 2-4) and the
  classical Young/Daly intervals.
- :mod:`~ft_core.checkpoint.tuning`: latency and recovery models fitted to the profiles and the
  interval that meets a recovery-time bound with the lowest latency.
"""

import lazy_loader

# Public names load on first use, so importing one module of the package (the CLI does, for every
# command) does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "profiles": ["ProfilesDocument", "load_profiles", "parse_profiles"],
        "tuning": ["CheckpointPlan", "plan_checkpoint"],
    },
)
