"""ftops_chaos_drill: a correlated failure under a running job, measured as its users see it; the fleet's drills.

Which jobs: a run with ``job`` in its conf (the trigger form) drills that job, due or not. A run without one (the
hourly scheduled run; ``FTOPS_SCHEDULES=manual`` turns schedules off) drills every job whose drill schedule is due
(``ftops job set NAME --drill-schedule CRON|@weekly|...``: due when it fired since the job's last drill), at most
Airflow's ``[core] max_map_length`` per run (the rest next run, least recently picked first), and succeeds doing
nothing when none is due. ``due_jobs`` lists them; the drill below is a task group mapped over them, one drill per
job, each under the job's own lease. Two jobs whose executors share a failure domain are never drilled at once: the
preflight of the second is skipped (the job stays due for the next run), as it is beyond the fleet's limit on
drills at once (``ftops job fleet --max-drills N``, default 2).

Each drill's steps are steps of the drill engine (``spark_jobs.drills.engine``), the same as ``ftops drill job``:

``preflight`` takes the job's lease (one experiment per job: a drill or recovery already running, a drill of
another job on a shared failure domain, or a halt (``ftops halt``), makes the job's drill end *skipped*, naming why),
undoes what a dead experiment left on the job, checks the blast radius, takes the failure domains and opens the drill
record -> ``wait_steady`` (deferred: the primary and the replica keep up with
their input) -> for jobs in ``approve`` mode, ``approve_drill`` asks a person (Airflow's human-in-the-loop
approval) -> ``inject_failure`` (each fault written to the fault journal with its undo, then applied: the domain's
workers and executors killed or its hosts cut off, optionally the primary driver) -> deferred waits:
``wait_tentative`` (the replica's tentative outputs arrive) and ``wait_replacement_due`` -> ``add_capacity`` (the
domain's capacity given back, in that domain) -> ``ensure_primary`` (resubmitted from its checkpoint if its driver
died) -> deferred ``wait_executors``, then ``wait_caught_up`` alongside ``inject_faults`` (optional fault profile)
-> ``verify`` (output against the reference, tentative accuracy against the predicted OF, times, back to steady
state, the failure domains as before) -> ``finish`` (always: the drill's open faults undone, the verdict, the
experiment report, the lease released). Every wait checks the halt, renews the lease and checks the abort probes
(the drill past ``max_duration_s``, a second domain lost, the primary more than ``max_lag_s`` behind once
capacity is back): one that fires aborts the drill, ``finish`` undoes its faults and records it ``aborted``.
No wait holds a worker slot for more than 30 s (a longer one defers); every wait has a timeout. ``finish``
notifies (connection ``ftops_notify``) when the drill failed or was aborted. A run whose worker or scheduler dies
leaves its faults in the journal: the safety net (``ftops_safety_net``) undoes them once the lease has expired.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG, Param, task, task_group

from ft_core.input.quantities import PositiveSeconds, Seconds, Seed
from ftops_provider.arguments import bounded_param, name_param, optional_name_param
from ftops_provider.notifications import FtopsNotifier
from ftops_provider.operators.drills import (AddCapacityOperator, DrillPreflightOperator, EnsurePrimaryOperator,
                                             FinishDrillOperator, InjectFailureOperator, InjectFaultsOperator,
                                             VerifyDrillOperator)
from ftops_provider.schedules import dag_schedule
from ftops_provider.sensors.waits import DrillWaitSensor
from spark_jobs.drills.probes import STEADY_LAG_S, STEADY_WAIT_S

SETTINGS = {key: "{{ params.%s }}" % param for key, param in (  # the job comes from the mapped group
    ("domain", "failure_domain"), ("fault", "fault"), ("kill_driver", "kill_driver"),
    ("replacement_delay_s", "replacement_delay_s"), ("timeout_s", "timeout_s"), ("steady_lag_s", "steady_lag_s"),
    ("max_duration_s", "max_duration_s"), ("max_lag_s", "max_lag_s"), ("lease_ttl_s", "lease_ttl_s"))}

with DAG(
    dag_id="ftops_chaos_drill",
    schedule=dag_schedule("@hourly"),  # wakes to drill the due jobs; FTOPS_SCHEDULES=manual: manual runs only
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["ftops"],
    doc_md=__doc__,
    render_template_as_native_obj=True,
    params={
        "job": optional_name_param("registered job to drill, due or not; empty (the default, and every scheduled run): "
                                   "every job whose drill schedule is due"),
        "failure_domain": name_param("auto", "failure domain of the primary pool to fail ('auto': where the primary's "
                                     "executors run)"),
        "fault": Param("host-down", enum=["host-down", "partition"], description="host-down: the domain's workers and "
                       "executors die; partition: its hosts are cut off the network (a cluster on namespace hosts)"),
        "kill_driver": Param(False, type="boolean", description="kill the primary driver too (restarted from its checkpoint)"),
        "replacement_delay_s": bounded_param(30, Seconds, "seconds until the domain's capacity is given back"),
        "timeout_s": bounded_param(600, PositiveSeconds, "deadline of each wait", minimum=30),
        "fault_profile": Param("", type="string", description="optional fault profile (YAML/JSON, absolute path) applied "
                               "to the primary once it runs again: slowdowns, crashes (empty: none)"),
        "fault_duration_s": bounded_param(60, PositiveSeconds, "how long the profile's faults run", minimum=1, maximum=3600),
        "fault_seed": bounded_param(1, Seed, "seed of the fault schedule (same seed, same faults)"),
        "steady_lag_s": bounded_param(STEADY_LAG_S, PositiveSeconds, "steady state: the primary's output at most this far "
                                      "(event-time seconds) behind its input, before the drill and after it", minimum=1),
        "max_duration_s": bounded_param(1800, PositiveSeconds, "abort probe: the drill runs at most this long", minimum=30),
        "max_lag_s": bounded_param(600, PositiveSeconds, "abort probe: once capacity is back, the primary at most this far "
                                   "behind its input", minimum=1),
        "lease_ttl_s": bounded_param(300, PositiveSeconds, "the job's lease outlives a dead run this long; then the "
                                     "safety net undoes its faults", minimum=30, maximum=86_400),
    },
) as dag:

    @task
    def due_jobs(params=None, dag_run=None) -> list[str]:
        from ftops_provider.leases import run_holder
        from ftops_provider.operators.fleet import jobs_to_operate

        return jobs_to_operate("drill", params["job"], run_holder(dag_run.dag_id, dag_run.run_id))

    @task_group(group_id="drill", prefix_group_id=False)  # one drill per job; task ids as in a single drill
    def drill(job: str):
        preflight = DrillPreflightOperator(task_id="preflight", settings={**SETTINGS, "job": job})
        steady = DrillWaitSensor(task_id="wait_steady", wait="steady", state_task_id="preflight", timeout_s=STEADY_WAIT_S)

        @task
        def approval_request(ti=None) -> str:
            from airflow.sdk.exceptions import AirflowSkipException

            from ftops_provider.operators.drills import drill_approval_body
            from ftops_provider.operators.fleet import pulled

            state = pulled(ti, "preflight")
            if not state["needs_approval"]:
                raise AirflowSkipException("the job is in auto mode: no approval needed")
            return drill_approval_body(state)

        request = approval_request()
        approve = ApprovalOperator(task_id="approve_drill", subject="ftops: run this chaos drill?",
                                   body="{{ ti.xcom_pull(task_ids='approval_request', map_indexes=ti.map_index) }}",
                                   defaults="Reject", response_timeout=timedelta(hours=4))
        decided = EmptyOperator(task_id="approval_decided")  # a rejection skips this, not the injection's own check
        inject = InjectFailureOperator(task_id="inject_failure", state_task_id="preflight",
                                       trigger_rule="none_failed_min_one_success")
        wait_tentative = DrillWaitSensor(task_id="wait_tentative", wait="tentative", state_task_id="inject_failure",
                                         timeout_s="{{ params.timeout_s }}")
        replacement_due = DrillWaitSensor(task_id="wait_replacement_due", wait="capacity_due",
                                          state_task_id="inject_failure", timeout_s="{{ params.replacement_delay_s + 60 }}")
        add_capacity = AddCapacityOperator(task_id="add_capacity", state_task_id="inject_failure")
        ensure_primary = EnsurePrimaryOperator(task_id="ensure_primary", state_task_id="add_capacity")
        wait_executors = DrillWaitSensor(task_id="wait_executors", wait="executors", state_task_id="ensure_primary",
                                         timeout_s="{{ params.timeout_s }}")
        wait_caught_up = DrillWaitSensor(task_id="wait_caught_up", wait="caught_up", state_task_id="ensure_primary",
                                         timeout_s="{{ params.timeout_s }}")
        inject_faults = InjectFaultsOperator(task_id="inject_faults", state_task_id="ensure_primary",
                                             profile="{{ params.fault_profile }}", duration_s="{{ params.fault_duration_s }}",
                                             seed="{{ params.fault_seed }}")
        verify = VerifyDrillOperator(task_id="verify", state_task_id="ensure_primary", trigger_rule="none_failed")
        # finish is idempotent: a database restart costs a retry here, not a wait for the safety net (lease TTL)
        finish = FinishDrillOperator(task_id="finish", trigger_rule="all_done", retries=4, retry_delay=timedelta(seconds=30),
                                     on_failure_callback=FtopsNotifier())

        preflight >> steady >> request >> approve >> decided
        [steady, decided] >> inject >> [wait_tentative, replacement_due]
        replacement_due >> add_capacity >> ensure_primary >> wait_executors >> [wait_caught_up, inject_faults]
        [wait_tentative, wait_caught_up, inject_faults] >> verify
        # After everything: it undoes what an abort left. Not directly after the approval: a rejection skips the
        # approval's direct downstream tasks, and `finish` must still record the drill and release the lease.
        [preflight, steady, request, decided, inject, wait_tentative, replacement_due, add_capacity, ensure_primary,
         wait_executors, wait_caught_up, inject_faults, verify] >> finish

    drill.expand(job=due_jobs())

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
