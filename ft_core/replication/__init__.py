"""Partial active replication (PPA): which tasks get an active replica under a budget (paper 000).

Su & Zhou, "Passive and Partially Active Fault Tolerance for Massively Parallel Stream Processing
Engines" (paper 000 in ``../shared/papers``). Output fidelity (OF, Eq. 1-4) measures how faithful
the *tentative* outputs of a job stay while a set of tasks is down; a replication plan picks R tasks
whose replicas keep OF highest under a worst-case correlated failure.

- :mod:`~ft_core.replication.fidelity`: information loss, OF and internal completeness (Sec. III).
- :mod:`~ft_core.replication.mctree`: minimal complete trees (MC-trees), counted without enumeration.
- :mod:`~ft_core.replication.greedy`, :mod:`~ft_core.replication.structure_aware`,
  :mod:`~ft_core.replication.exact`: the planners (Alg. 2, Alg. 3-5, a MILP proven optimum), with
  :mod:`~ft_core.replication.sub_topology`, :mod:`~ft_core.replication.units` and
  :mod:`~ft_core.replication.incremental_fidelity` as the structure-aware planner's pieces, and
  :mod:`~ft_core.replication.interchangeable`, :mod:`~ft_core.replication.alive_model` and
  :mod:`~ft_core.replication.budget_bound` as the exact planner's (symmetry, model, bounds).
- :mod:`~ft_core.replication.plan`: the typed plan every planner returns;
  :mod:`~ft_core.replication.planners`: the planner chosen by name;
  :mod:`~ft_core.replication.budget_advice`: what each budget buys and the smallest reaching a target.
"""

import lazy_loader

# Public names load on first use, so importing one module of the package (the CLI does, for every
# command) does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "fidelity": ["fidelity_report", "information_loss", "output_fidelity", "replicated_fidelity"],
        "budget_advice": ["BudgetAdvice", "advise_budget", "smallest_budget_plan"],
        "mctree": ["completes_mc_tree", "count_mc_trees", "smallest_mc_tree"],
        "plan": ["ReplicationPlan"],
        "planners": ["ALGORITHMS", "plan_replication"],
    },
)
