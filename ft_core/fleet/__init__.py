"""The fleet: every registered job operated on its own schedule (issue 33).

- :mod:`~ft_core.fleet.schedules`: drill and tuning schedules (cron or preset), when a job is due, and which due
  jobs a scheduled run takes (at most Airflow's ``max_map_length``, the least recently picked first).
- :mod:`~ft_core.fleet.recovery_order`: fleet-wide staged recovery: the order jobs lost with a failure domain
  restart in as capacity returns (paper 003, jobs as queries, with their catch-up; on shared CPUs too).
- :mod:`~ft_core.fleet.catch_up_rate`: a job's processing rate with its whole CPUs, read back from a recovery in
  which it caught up beside others.
- :mod:`~ft_core.fleet.cpu_share`: the CPUs restarted executors get on a machine other work keeps busy.
"""

import lazy_loader

# Public names load on first use, so importing one module of the package does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={"schedules": ["PRESETS", "Scheduled", "check_schedule", "due", "next_fire", "take"],
                  "recovery_order": ["Arrival", "FleetCapacity", "FleetJob", "FleetRecoveryPlan", "plan_fleet_recovery",
                                     "predict_back"],
                  "catch_up_rate": ["RecoveredJob", "processing_rate_alone"],
                  "cpu_share": ["fair_share_cpus"]},
)
