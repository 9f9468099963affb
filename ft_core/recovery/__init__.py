"""Incremental recovery: what restarts first as capacity comes back after a correlated failure (paper 003).

The recovery-scheduling problem (Definition 2): failed partitions with restart costs, queries that
need all their failed partitions back, a budget per stage; maximise the recovered priority.

- :mod:`~ft_core.recovery.problem`: the problem and its documents (explicit, or a topology plus failed tasks).
- :mod:`~ft_core.recovery.best_density` (Alg. 3, corrected), :mod:`~ft_core.recovery.operator_centric`
  (the baseline), :mod:`~ft_core.recovery.exact` (a MILP, App. B); :mod:`~ft_core.recovery.planners`
  chooses one by name.
- :mod:`~ft_core.recovery.staged`: the stage-by-stage schedule as new nodes arrive (Sec. 4.4).
- :mod:`~ft_core.recovery.instances`: the synthetic instances of the paper's evaluation (Sec. 7.3).
"""

import lazy_loader

# Public names load on first use, so importing one module of the package (the CLI does, for every
# command) does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "problem": ["RecoveryPlan", "RecoveryProblem", "load_problem", "parse_problem"],
        "planners": ["ALGORITHMS", "plan_recovery"],
        "staged": ["StagedSchedule", "plan_stages"],
    },
)
