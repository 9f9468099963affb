"""Adaptive redundancy against slowdowns, with a fault model (thesis 002).

- :mod:`~ft_core.redundancy.allocation`: model-based allocation (Alg. 1, Eq. 3.1) and its mapping
  onto Spark's speculative execution.
- :mod:`~ft_core.redundancy.controller`: the feedback controller that sizes redundancy to keep tail
  latency under a bound (Alg. 2, corrected).
- :mod:`~ft_core.redundancy.fault_profile`: fault profiles (slowdowns, outages, crashes, domain
  faults) and their seeded schedules (Sec. 3.1), used by the chaos drills too.
"""

from ft_core.redundancy.allocation import plan_allocation, speculation_settings
from ft_core.redundancy.controller import RedundancyController
from ft_core.redundancy.fault_profile import FaultProfile, fault_schedule, load_fault_profile

__all__ = ["plan_allocation", "speculation_settings", "RedundancyController", "FaultProfile", "fault_schedule", "load_fault_profile"]
