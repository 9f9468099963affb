"""Adaptive redundancy against slowdowns, with a fault model (thesis 002).

- :mod:`~ft_core.redundancy.allocation`: model-based allocation (Alg. 1, Eq. 3.1) and its mapping
  onto Spark's speculative execution.
- :mod:`~ft_core.redundancy.controller`: the feedback controller that sizes redundancy to keep tail
  latency under a bound (Alg. 2, corrected).
- :mod:`~ft_core.redundancy.fault_profile`: fault profiles (slowdowns, outages, crashes, domain
  faults) and their seeded schedules (Sec. 3.1), used by the chaos drills too.
"""

import lazy_loader

# Public names load on first use, so importing one module of the package (the CLI does, for every
# command) does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "allocation": ["plan_allocation", "speculation_settings"],
        "controller": ["RedundancyController"],
        "fault_profile": ["FaultProfile", "fault_schedule", "load_fault_profile"],
    },
)
