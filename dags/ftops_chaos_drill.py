"""ftops_chaos_drill: a correlated failure under a running job, measured as its users see it.

Trigger it from the Airflow UI with the form (job, failure domain, kill the driver or not, replacement
delay) or on its weekly schedule (defaults). Steps: ``preflight`` (streams running, domain known, plan
stored; opens the drill record) -> ``inject_failure`` (SIGKILL of the domain's workers with their
executors, optionally the primary driver) -> deferred waits: ``wait_tentative`` (the replica's tentative
outputs arrive) and ``wait_replacement_due`` -> ``add_capacity`` (a new worker, as a cloud replaces a lost
node) -> ``ensure_primary`` (resubmits the primary from its checkpoint if its driver died; a no-op when it
runs) -> deferred ``wait_executors``, then ``wait_caught_up`` alongside ``inject_faults`` (optional: a fault
profile's slowdowns and crashes applied to the primary while it catches up) -> ``verify`` (the primary's output against the
reference, tentative accuracy against the predicted OF, times; stored) which fails the run, visibly, when
output was lost or duplicated or the job missed its recovery-time bound. ``mark_failed`` closes the drill
record when an earlier step failed. No wait holds a worker slot; every wait has a timeout.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param

from ft_core.input.quantities import PositiveSeconds, Seconds, Seed
from ftops_provider.arguments import bounded_param
from ftops_provider.operators.drills import (AddCapacityOperator, DrillPreflightOperator, InjectFailureOperator,
                                             InjectFaultsOperator, MarkDrillFailedOperator, VerifyDrillOperator)
from ftops_provider.operators.streams import StreamSubmitOperator
from ftops_provider.sensors.waits import (OutputArrivalSensor, SparkCapacitySensor, StreamCaughtUpSensor,
                                          WaitUntilSensor)

PRE = "ti.xcom_pull(task_ids='preflight')"
INJ = "ti.xcom_pull(task_ids='inject_failure')"
CAP = "ti.xcom_pull(task_ids='add_capacity')"

with DAG(
    dag_id="ftops_chaos_drill",
    schedule="@weekly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["ftops"],
    doc_md=__doc__,
    render_template_as_native_obj=True,
    params={
        "job": Param("topk", type="string", minLength=1, description="registered job to drill"),
        "failure_domain": Param("auto", type="string", minLength=1,
                                description="failure domain of the primary pool to kill ('auto': where the primary's executors run)"),
        "kill_driver": Param(False, type="boolean", description="kill the primary driver too (restarted from its checkpoint)"),
        "replacement_delay_s": bounded_param(30, Seconds, "seconds until replacement capacity arrives"),
        "timeout_s": bounded_param(600, PositiveSeconds, "deadline of each wait", minimum=30),
        "fault_profile": Param("", type="string", description="optional fault profile (YAML/JSON, absolute path) applied "
                               "to the primary once it runs again: slowdowns, crashes (empty: none)"),
        "fault_duration_s": bounded_param(60, PositiveSeconds, "how long the profile's faults run", minimum=1, maximum=3600),
        "fault_seed": bounded_param(1, Seed, "seed of the fault schedule (same seed, same faults)"),
    },
) as dag:
    preflight = DrillPreflightOperator(task_id="preflight", job_name="{{ params.job }}", domain="{{ params.failure_domain }}",
                                       kill_driver="{{ params.kill_driver }}", replacement_delay_s="{{ params.replacement_delay_s }}")
    inject = InjectFailureOperator(task_id="inject_failure")
    wait_tentative = OutputArrivalSensor(task_id="wait_tentative", folder="{{ " + INJ + "['replica_output'] or '' }}",
                                         after_ts="{{ " + INJ + "['t_fail'] }}", timeout_s="{{ params.timeout_s }}")
    replacement_due = WaitUntilSensor(task_id="wait_replacement_due", moment="{{ " + INJ + "['capacity_due'] }}")
    add_capacity = AddCapacityOperator(task_id="add_capacity")
    ensure_primary = StreamSubmitOperator(
        task_id="ensure_primary", conn_id="spark_primary",
        app_name="{{ ti.xcom_pull(task_ids='add_capacity')['primary_app'] }}",
        run_args="{{ ti.xcom_pull(task_ids='add_capacity')['primary_run_args'] }}",
        master_ui="{{ ti.xcom_pull(task_ids='add_capacity')['deployment']['primary_ui'] }}")
    wait_executors = SparkCapacitySensor(task_id="wait_executors", spark_master_conn_id="ftops_spark_master",
                                         app_name="{{ " + CAP + "['primary_app'] }}", min_app_executors=1,
                                         timeout_s="{{ params.timeout_s }}")
    wait_caught_up = StreamCaughtUpSensor(task_id="wait_caught_up",
                                          checkpoint="{{ " + CAP + "['deployment']['root'] }}/primary-ckpt",
                                          input_dir="{{ " + CAP + "['deployment']['root'] }}/input",
                                          after_ts="{{ " + CAP + "['t_capacity'] }}", timeout_s="{{ params.timeout_s }}",
                                          max_lag_files="{{ " + PRE + "['steady_lag_files'] }}",
                                          output_dir="{{ " + CAP + "['deployment']['root'] }}/primary",
                                          watermark_ms="{{ " + CAP + "['backlog_ms'] }}")
    inject_faults = InjectFaultsOperator(task_id="inject_faults", profile="{{ params.fault_profile }}",
                                         duration_s="{{ params.fault_duration_s }}", seed="{{ params.fault_seed }}")
    verify = VerifyDrillOperator(task_id="verify", trigger_rule="none_failed")  # wait_tentative skips without a replica
    mark_failed = MarkDrillFailedOperator(task_id="mark_failed", trigger_rule="one_failed")

    preflight >> inject >> [wait_tentative, replacement_due]
    replacement_due >> add_capacity >> ensure_primary >> wait_executors >> [wait_caught_up, inject_faults]
    [wait_tentative, wait_caught_up, inject_faults] >> verify
    [preflight, inject, wait_tentative, replacement_due, add_capacity, ensure_primary, wait_executors,
     wait_caught_up, inject_faults, verify] >> mark_failed

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
