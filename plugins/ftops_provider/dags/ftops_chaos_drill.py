"""ftops_chaos_drill: a correlated failure under a running job, measured as its users see it.

Trigger it from the Airflow UI with the form (job, failure domain, kill the driver or not, replacement
delay, guards) or on its weekly schedule (defaults; ``FTOPS_SCHEDULES=manual`` turns schedules off).
Steps: ``preflight`` takes the job's lease (one experiment per job: a drill or recovery already running
makes this run end *skipped*, naming the holder), checks the steady-state hypothesis (streams running,
the primary within ``steady_lag_s`` of its input, the replica running) and the blast radius (the domain
holds neither the replica nor the only standby capacity), opens the drill record -> for jobs in
``approve`` mode, ``approve_drill`` asks a person (Airflow's human-in-the-loop approval) ->
``inject_failure`` (SIGKILL of the domain's workers with their executors, optionally the primary driver)
-> deferred waits: ``wait_tentative`` (the replica's tentative outputs arrive) and ``wait_replacement_due``
-> ``add_capacity`` (a new worker, as a cloud replaces a lost node) -> ``ensure_primary`` (resubmits the
primary from its checkpoint if its driver died) -> deferred ``wait_executors``, then ``wait_caught_up``
alongside ``inject_faults`` (optional fault profile) -> ``verify`` (output against the reference,
tentative accuracy against the predicted OF, times, back to steady state) -> ``finish`` (always: the
verdict, the experiment report, the lease released). Every wait checks the abort probes (the drill past
``max_duration_s``, a second domain lost, the primary more than ``max_lag_s`` behind once capacity is
back): one that fires aborts the drill, capacity is restored and the drill is recorded ``aborted``.
No wait holds a worker slot for more than 30 s (a longer one defers); every wait has a timeout. ``finish`` notifies (connection ``ftops_notify``)
when the drill failed or was aborted.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG, Param, task

from ft_core.input.quantities import PositiveSeconds, Seconds, Seed
from ftops_provider.arguments import bounded_param
from ftops_provider.notifications import FtopsNotifier
from ftops_provider.operators.drills import (AddCapacityOperator, DrillPreflightOperator, FinishDrillOperator,
                                             InjectFailureOperator, InjectFaultsOperator, VerifyDrillOperator)
from ftops_provider.operators.streams import StreamSubmitOperator
from ftops_provider.schedules import dag_schedule
from spark_jobs.drills.probes import STEADY_LAG_S
from ftops_provider.sensors.waits import OutputArrivalSensor, SparkCapacitySensor, StreamCaughtUpSensor, WaitUntilSensor

PRE = "ti.xcom_pull(task_ids='preflight')"
INJ = "ti.xcom_pull(task_ids='inject_failure')"
CAP = "ti.xcom_pull(task_ids='add_capacity')"

with DAG(
    dag_id="ftops_chaos_drill",
    schedule=dag_schedule("@weekly"),  # FTOPS_SCHEDULES=manual: manual runs only
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
        "steady_lag_s": bounded_param(STEADY_LAG_S, PositiveSeconds, "steady state: the primary's output at most this far (event-time "
                                      "seconds) behind its input, before the drill and after it", minimum=1),
        "max_duration_s": bounded_param(1800, PositiveSeconds, "abort probe: the drill runs at most this long", minimum=30),
        "max_lag_s": bounded_param(600, PositiveSeconds, "abort probe: once capacity is back, the primary at most this far "
                                   "behind its input", minimum=1),
    },
) as dag:
    preflight = DrillPreflightOperator(task_id="preflight", job_name="{{ params.job }}", domain="{{ params.failure_domain }}",
                                       kill_driver="{{ params.kill_driver }}", replacement_delay_s="{{ params.replacement_delay_s }}",
                                       timeout_s="{{ params.timeout_s }}", steady_lag_s="{{ params.steady_lag_s }}",
                                       max_duration_s="{{ params.max_duration_s }}", max_lag_s="{{ params.max_lag_s }}")

    @task
    def approval_request(ti=None) -> str:
        from airflow.sdk.exceptions import AirflowSkipException

        from ftops_provider.operators.drills import drill_approval_body

        pre = ti.xcom_pull(task_ids="preflight")
        if not pre["needs_approval"]:
            raise AirflowSkipException("the job is in auto mode: no approval needed")
        return drill_approval_body(pre)

    approve = ApprovalOperator(task_id="approve_drill", subject="ftops: run this chaos drill?",
                               body="{{ ti.xcom_pull(task_ids='approval_request') }}", defaults="Reject",
                               response_timeout=timedelta(hours=4))
    decided = EmptyOperator(task_id="approval_decided")  # a rejection skips this, not the injection's own check
    inject = InjectFailureOperator(task_id="inject_failure", trigger_rule="none_failed_min_one_success")
    wait_tentative = OutputArrivalSensor(task_id="wait_tentative", folder="{{ " + INJ + "['replica_output'] or '' }}",
                                         stream="{{ " + INJ + "['replica_stream'] or '' }}",
                                         after_ts="{{ " + INJ + "['t_fail'] }}", timeout_s="{{ params.timeout_s }}",
                                         probes="{{ " + INJ + "['probes'] }}")
    replacement_due = WaitUntilSensor(task_id="wait_replacement_due", moment="{{ " + INJ + "['capacity_due'] }}",
                                      probes="{{ " + INJ + "['probes'] }}")
    add_capacity = AddCapacityOperator(task_id="add_capacity")
    ensure_primary = StreamSubmitOperator(
        task_id="ensure_primary", conn_id="spark_primary", app_name="{{ " + CAP + "['primary_app'] }}",
        run_args="{{ " + CAP + "['primary_run_args'] }}", master_ui="{{ " + CAP + "['deployment']['primary_ui'] }}")
    wait_executors = SparkCapacitySensor(task_id="wait_executors", spark_master_conn_id="ftops_spark_master",
                                         app_name="{{ " + CAP + "['primary_app'] }}", min_app_executors=1,
                                         timeout_s="{{ params.timeout_s }}", probes="{{ " + CAP + "['probes'] }}")
    wait_caught_up = StreamCaughtUpSensor(task_id="wait_caught_up",
                                          checkpoint="{{ " + CAP + "['paths']['primary_checkpoint'] }}",
                                          stream="{{ " + CAP + "['primary_app'] }}",
                                          input_dir="{{ " + CAP + "['paths']['input'] }}",
                                          after_ts="{{ " + CAP + "['t_capacity'] }}", timeout_s="{{ params.timeout_s }}",
                                          max_lag_files="{{ " + PRE + "['caught_up_lag_files'] }}",
                                          output_dir="{{ " + CAP + "['paths']['primary_output'] }}",
                                          watermark_ms="{{ " + CAP + "['backlog_ms'] }}", probes="{{ " + CAP + "['probes'] }}")
    inject_faults = InjectFaultsOperator(task_id="inject_faults", profile="{{ params.fault_profile }}",
                                         duration_s="{{ params.fault_duration_s }}", seed="{{ params.fault_seed }}")
    verify = VerifyDrillOperator(task_id="verify", trigger_rule="none_failed")  # wait_tentative skips without a replica
    finish = FinishDrillOperator(task_id="finish", trigger_rule="all_done", on_failure_callback=FtopsNotifier())

    preflight >> approval_request() >> approve >> decided
    [preflight, decided] >> inject >> [wait_tentative, replacement_due]
    replacement_due >> add_capacity >> ensure_primary >> wait_executors >> [wait_caught_up, inject_faults]
    [wait_tentative, wait_caught_up, inject_faults] >> verify
    # After everything: it restores what an abort left. Not directly after the approval: a rejection skips
    # the approval's direct downstream tasks, and `finish` must still record the drill and release the lease.
    [t for t in dag.tasks if t not in (finish, approve)] >> finish

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
