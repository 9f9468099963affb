"""Fleet-wide staged recovery on Spark: the jobs lost with a failure domain restarted from their checkpoints in the
order :mod:`ft_core.fleet.recovery_order` plans as capacity returns (issue 33, item 3): the planner's inputs read
from the history store and the master (:mod:`.inputs`), the steps under the jobs' leases and the fault journal
(:mod:`.steps`), run by the ``ftops_fleet_recovery`` DAG."""
