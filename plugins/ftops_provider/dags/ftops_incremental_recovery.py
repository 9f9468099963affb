"""ftops_incremental_recovery: restart a recovery-units deployment after a correlated failure, stage by stage.

Triggered from the Airflow UI with the form, for any pipeline deployed as units (``ftops units deploy
--workload NAME | --pipeline REF``): the deployment records its pipeline, units and queries; the optional
``pipeline`` parameter makes the run check that the deployment runs that one. ``job`` (the registered job the run
is recorded under) has no default: a run without one fails in ``plan_stages``, before anything is recorded or
restarted, naming the parameter (the DAG has no schedule, so no run starts without a person). ``detect_failure``
finds the units that are down (the last recorded failure, or applications whose drivers died); ``plan_stages``
computes the staged schedule (paper 003: BestDensity order packed into each capacity step, or blocking /
operator-centric; or ``catch-up``: the order with the least predicted time back to normal, from the units'
measured rates and the expected ``arrival_times``) for the expected replacement nodes and opens the recovery run in the history store.
Then, for each stage, its own task instances: ``wait_capacity_<k>`` (deferred until the Spark master has
the stage's new workers and free cores), ``start_stage_<k>`` (SparkSubmitOperator through ftops's launcher:
the stage's units restart from their checkpoints in new applications), ``record_stage_<k>``. Stages that
start nothing are skipped. ``wait_recovered`` waits, deferred, until every failed query is available again
(relative latency below 1.2); ``finish`` verifies every table against the failure-free reference and
stores per-query recovery times; ``watcher`` fails the run when any task failed (``finish`` runs regardless,
so without it such a run would look successful). Every stage is recorded as it completes, and starting a stage is
idempotent, so a scheduler restart in the middle resumes the recovery instead of restarting it.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG, Param

from ft_core.home import state_path
from ft_core.recovery.catch_up_order import POLICY as CATCH_UP
from ft_core.recovery.staged import POLICIES
from ft_core.input.quantities import NUMBER_LIST_PATTERN, PIPELINE_REF_PATTERN, PositiveFraction, PositiveSeconds
from ftops_provider.arguments import bounded_param, optional_name_param
from ftops_provider.operators.recovery import (DetectFailureOperator, FinishRecoveryOperator, PlanStagesOperator,
                                               QueriesRecoveredSensor, RecordStageOperator, StageCapacitySensor)
from ftops_provider.operators.run_watcher import RunFailureWatcher
from ftops_provider.operators.streams import UnitsStageSubmitOperator

MAX_STAGES = 5  # stage 0 (the survivors' free capacity) and up to four replacement nodes
DEFAULT_UNITS_DIR = str(state_path("units", "smartcity"))  # where `ftops units deploy` puts it by default
PLANNED = "ti.xcom_pull(task_ids='plan_stages')"

with DAG(
    dag_id="ftops_incremental_recovery",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["ftops"],
    doc_md=__doc__,
    params={
        "units_dir": Param(DEFAULT_UNITS_DIR, type="string", minLength=1, description="the recovery-units deployment folder (absolute)"),
        "pipeline": Param("", type="string", pattern=PIPELINE_REF_PATTERN, maxLength=500, description="optional: the pipeline the deployment must run (a sample's "
                          "name or module:attribute / file.py); empty: whatever it runs"),
        "job": optional_name_param("registered job the run is recorded under; required (no default: a run without one "
                                   "fails, naming it)"),
        "arrivals": Param("1,1", type="string", pattern=NUMBER_LIST_PATTERN,
                          description="expected replacement nodes (sizes, 1 = a node), in order, comma-separated"),
        "cost": Param("measured", type="string", pattern=r"^(measured|declared:(0?\.[0-9]*[1-9][0-9]*|1(\.0*)?))$",
                      description="'measured' unit costs, or 'declared:X' (X of a node each, 0 < X <= 1)"),
        "arrival_times": Param("", type="string", pattern=f"^$|{NUMBER_LIST_PATTERN}",
                               description="policy catch-up: seconds after the failure each expected node arrives, "
                                           "comma-separated (one per node in arrivals)"),
        "policy": Param("order-then-pack", enum=[*POLICIES, "blocking", CATCH_UP]),
        "node_cap": bounded_param(0.8, PositiveFraction, "usable share of a node"),
        "timeout_s": bounded_param(900, PositiveSeconds, "deadline of each wait", minimum=30),
    },
) as dag:
    units_dir = "{{ params.units_dir }}"
    # It only reads, so a transient error (a busy API server, a slow shared folder) is retried; bad input is not.
    detect = DetectFailureOperator(task_id="detect_failure", units_dir=units_dir, pipeline="{{ params.pipeline }}",
                                   retries=2, retry_delay=timedelta(seconds=10))
    plan = PlanStagesOperator(task_id="plan_stages", units_dir=units_dir, job_name="{{ params.job }}",
                              arrivals="{{ params.arrivals }}", arrival_times="{{ params.arrival_times }}",
                              cost="{{ params.cost }}", policy="{{ params.policy }}",
                              node_cap="{{ params.node_cap }}", timeout_s="{{ params.timeout_s }}")
    detect >> plan
    previous = plan
    for k in range(MAX_STAGES):
        wait = StageCapacitySensor(task_id=f"wait_capacity_{k}", units_dir=units_dir, stage=k,
                                   timeout_s="{{ params.timeout_s }}", trigger_rule="none_failed")
        start = UnitsStageSubmitOperator(task_id=f"start_stage_{k}", units_dir=units_dir, stage=k,
                                         schedule_path="{{ " + PLANNED + "['schedule_path'] }}",
                                         prefix="{{ " + PLANNED + "['prefix'] }}", conn_id="spark_primary")
        record = RecordStageOperator(task_id=f"record_stage_{k}", units_dir=units_dir, stage=k)
        previous >> wait >> start >> record
        previous = record
    recovered = QueriesRecoveredSensor(task_id="wait_recovered", units_dir=units_dir, timeout_s="{{ params.timeout_s }}",
                                       trigger_rule="none_failed")
    finish = FinishRecoveryOperator(task_id="finish", units_dir=units_dir, trigger_rule="all_done")  # records failures too
    previous >> recovered >> finish
    dag.tasks >> RunFailureWatcher()  # `finish` runs after failures too: this leaf keeps such a run failed

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
