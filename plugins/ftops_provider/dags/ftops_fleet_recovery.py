"""ftops_fleet_recovery: when a failure domain is lost under several jobs, restart them in the order that brings the
fleet back soonest, priority-weighted, as capacity returns (issue 33, item 3; paper 003 with jobs as queries).

Triggered from the Airflow UI (the form) or ``ftops``'s console after a rack, a zone or a bad deploy took executors
from several jobs. ``plan_fleet`` finds the lost jobs (every registered job that ran micro-batches in the 5 minutes
before the failure and whose primary runs no executor now; or ``jobs``, each of which must be lost), takes each one's
lease, reads the planner's inputs (priority from the job's policy, cores, input rate and steady lag from its
micro-batches before the failure, catch-up and restart delays from its last fleet recoveries or the run's
assumptions) and the capacity (free cores on the master now; ``arrivals`` as ``CORES@SECONDS`` after the failure,
else the workers the master lists dead around the failure, one every ``replacement_s``), plans the order
(``ftops plan fleet-recovery``'s planner: ``staged`` by default, or ``density``, ``fifo``), records the run, and holds
down (its driver stopped, in the fault journal) each lost job that would take returning cores out of the plan's
order (a standalone master serves waiting applications in submission order); the others keep their drivers and get
executors as soon as their stage's cores return, with no restart to pay (``staged`` keeps the master's own order
when holding down is predicted to cost more than it saves). Then, per stage, ``wait_capacity_<k>`` (deferred until
the master has the stage's free cores and its kept jobs' executors) and ``restart_stage_<k>`` (the stage's held jobs
resubmitted from their checkpoints; each restart recorded with its predicted time back). ``wait_back`` waits
(deferred) until every job is caught up with its input, recording each one's measured time back; ``finish``
(always) resubmits any job still held down, releases the leases and closes the run; ``watcher`` keeps a run with a
failed task failed. Every step and wait renews the jobs' leases; a run that dies leaves no job down: ``lease_ttl_s``
(5 minutes by default) later its leases lapse, and the safety net resubmits what it held down and records the run as
failed. Planned, predicted and
measured times are in ``ftops_fleet_recovery_job`` and on each job's console page.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param

from ft_core.fleet.recovery_order import POLICIES
from ft_core.input.quantities import PositiveSeconds, Seconds
from ftops_provider.arguments import bounded_param
from ftops_provider.operators.fleet_recovery import (PLAN_TASK, FinishFleetRecoveryOperator, FleetBackSensor,
                                                     FleetStageCapacitySensor, PlanFleetRecoveryOperator,
                                                     RestartFleetStageOperator)
from ftops_provider.operators.run_watcher import RunFailureWatcher
from spark_jobs.fleet_recovery.inputs import MAX_ARRIVALS
from spark_jobs.fleet_recovery.runs import LEASE_TTL_S, MAX_LEASE_TTL_S, MIN_LEASE_TTL_S

MAX_STAGES = MAX_ARRIVALS + 1  # stage 0 (the survivors' free cores) and a stage per returning worker
_ARRIVAL = r"[0-9]+(\.[0-9]+)?@[0-9]+(\.[0-9]+)?"
ARRIVALS_PATTERN = rf"^\s*$|^\s*{_ARRIVAL}(\s*,\s*{_ARRIVAL}){{0,{MAX_ARRIVALS - 1}}}\s*$"

with DAG(
    dag_id="ftops_fleet_recovery",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["ftops"],
    doc_md=__doc__,
    params={
        # a job name's characters (ft_core.input.names) and the list's commas; the plan task checks each name
        "jobs": Param("", type="string", maxLength=5000, pattern=r"^[A-Za-z0-9._, -]*$(?!\n)",
                      description="registered jobs to recover, comma-separated; empty: every job whose primary runs "
                                  "no executor"),
        "failed_at": Param("", type="string", maxLength=40, pattern=r"^$|^[0-9T:.+Z -]+$",
                           description="when the domain was lost (epoch seconds or ISO 8601); empty: now"),
        "arrivals": Param("", type="string", pattern=ARRIVALS_PATTERN,
                          description="capacity coming back, CORES@SECONDS after the failure, comma-separated (at most "
                                      "5); empty: each worker the master lists dead, one every replacement_s"),
        "replacement_s": bounded_param(60, PositiveSeconds, "seconds between returning workers when arrivals is empty"),
        "policy": Param("staged", enum=list(POLICIES), description="staged (the planner's best), density (paper 003's "
                                                                  "order), fifo (submission order)"),
        "restart_s": bounded_param(20, Seconds, "a job's restart delay when none was measured"),
        "headroom": Param(2.0, type="number", exclusiveMinimum=1, maximum=1000,
                          description="a job's processing rate over its input rate when no catch-up was measured"),
        "timeout_s": bounded_param(900, PositiveSeconds, "deadline of each wait", minimum=60),
        "lease_ttl_s": bounded_param(LEASE_TTL_S, PositiveSeconds, "the jobs' leases last this long from each renewal: "
                                     "a run that dies gives its jobs back this long after it stopped",
                                     minimum=MIN_LEASE_TTL_S, maximum=MAX_LEASE_TTL_S),
    },
) as dag:
    timeout = "{{ params.timeout_s }}"
    previous = PlanFleetRecoveryOperator(
        task_id=PLAN_TASK, jobs="{{ params.jobs }}", failed_at="{{ params.failed_at }}", arrivals="{{ params.arrivals }}",
        replacement_s="{{ params.replacement_s }}", policy="{{ params.policy }}", restart_s="{{ params.restart_s }}",
        headroom="{{ params.headroom }}", lease_ttl_s="{{ params.lease_ttl_s }}")
    for k in range(MAX_STAGES):
        wait = FleetStageCapacitySensor(task_id=f"wait_capacity_{k}", stage=k, timeout_s=timeout,
                                        trigger_rule="none_failed")
        restart = RestartFleetStageOperator(task_id=f"restart_stage_{k}", stage=k)
        previous >> wait >> restart
        previous = restart
    back = FleetBackSensor(task_id="wait_back", timeout_s=timeout, trigger_rule="none_failed")
    finish = FinishFleetRecoveryOperator(task_id="finish", trigger_rule="all_done")  # releases and restores always
    previous >> back >> finish
    dag.tasks >> RunFailureWatcher()

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
