"""ftops_profile_and_plan: profile every registered job, recompute its plans, adapt its replica.

A run whose ``job`` Param names a job (the console's Re-plan) operates that job only.

Per registered job (dynamic task mapping): measure the running primary's task rates from its metrics
(``profile``), recompute the replication plan (``plan_replication``: exact up to 200 tasks, structure-aware
above), estimate its tentative accuracy from the job's recent input (``estimate_accuracy``, issue 15: a local
replay, stored on the plan), simulate the failure of each failure domain now (``what_if_recovery``). When the new replication
plan beats the applied one by more than ``of_threshold`` output fidelity (or no replica runs yet), the
replica is resubmitted with the new plan (``submit_replica``, a SparkSubmitOperator through ftops's
detached launcher), the DAG waits, deferred, until it runs (``wait_replica_running``), only then stops the
old one (``stop_old_replica``) and records the applied plan, publishing the ``ftops://plans/replication``
asset; a replica that waits 30 s for standby cores other applications hold fails its wait at once, naming them.
Whatever failed, ``undo_unapplied`` then stops each new replica not recorded and releases its change's lease
(``watcher`` keeps such a run failed). ``undo_orphaned_faults`` undoes the faults of experiments whose holder died (the safety net's repair,
``ftops_safety_net``). Everything goes to the history store (connection ``ftops_db``). Nothing heavy runs at import time.

Per job's apply mode: ``recommend`` stores plans and never resubmits; ``approve`` (the default for jobs
not marked as test jobs) asks a person first: ``approve_replica_changes`` (Airflow's human-in-the-loop
approval, in the UI's "Required actions") lists the plan diffs and the predicted gains, and only an
approval lets those changes through; ``auto`` applies at once. A job's replica changes at most once per
its cooldown. Every task but the approval is retried twice, 30 s apart: each one is idempotent.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG, Asset, task

from ft_core.input.quantities import Fraction
from ftops_provider.arguments import bounded_param, optional_name_param
from ftops_provider.operators.accuracy import EstimateAccuracyOperator
from ftops_provider.operators.planning import PlanReplicationOperator, UpgradeHistoryOperator
from ftops_provider.operators.profiling import ProfileJobOperator, WhatIfRecoveryOperator
from ftops_provider.operators.run_watcher import RunFailureWatcher
from ftops_provider.operators.safety import ReconcileOperator
from ftops_provider.operators.streams import StopStreamOperator, StreamSubmitOperator
from ftops_provider.schedules import dag_schedule
from ftops_provider.sensors.waits import SparkAppSensor

REPLICATION_PLANS = Asset("ftops://plans/replication")


with DAG(
    dag_id="ftops_profile_and_plan",
    schedule=dag_schedule("@hourly"),  # FTOPS_SCHEDULES=manual: manual runs only
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["ftops"],
    doc_md=__doc__,
    params={"of_threshold": bounded_param(0.02, Fraction, "resubmit the replica when the new plan's OF beats the applied "
                                                          "one by more"),
            "job": optional_name_param("registered job to profile and plan (the console's Re-plan); empty (the "
                                       "default, and every scheduled run): every registered job")},
    # every step is idempotent (plans, profiles and applied plans are stored once, a submission of a running
    # replica does nothing), so a database or master that blinks costs a retry, not the hour's run
    default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
) as dag:
    upgrade = UpgradeHistoryOperator(task_id="upgrade_history")
    # the safety net's repair, once an hour here too (ftops_safety_net watches continuously); beside the planning,
    # so a fault it cannot undo fails this run visibly without holding up the plans
    repair = ReconcileOperator(task_id="undo_orphaned_faults")

    @task
    def registered_jobs(params=None) -> list[str]:
        from airflow.sdk.exceptions import AirflowFailException

        from ftops_provider.hooks.history import HistoryStoreHook

        store = HistoryStoreHook().store()
        try:
            if params["job"] and not store.has_job(params["job"]):  # no retry: it will not be registered in 30 s
                raise AirflowFailException(f"job {params['job']!r} is not registered (`ftops job list` shows the fleet)")
            return [params["job"]] if params["job"] else [j["name"] for j in store.jobs()]
        finally:
            store.conn.close()

    jobs = registered_jobs()
    profiled = ProfileJobOperator.partial(task_id="profile").expand(job_name=jobs)
    planned = PlanReplicationOperator.partial(task_id="plan_replication").expand(job_name=jobs)
    what_if = WhatIfRecoveryOperator.partial(task_id="what_if_recovery").expand(job_name=jobs)
    estimated = EstimateAccuracyOperator.partial(task_id="estimate_accuracy").expand(job_name=jobs)

    @task
    def replica_changes(names: list[str], params=None, dag_run=None) -> list[dict]:
        from ftops_provider.arguments import checked
        from ftops_provider.leases import run_holder
        from ftops_provider.operators.replicas import replica_changes as changes

        return changes(names, checked(Fraction, params["of_threshold"], "of_threshold"), holder=run_holder(dag_run.dag_id, dag_run.run_id))

    changes = replica_changes(jobs)

    @task
    def approval_request(proposed: list[dict]) -> str:
        from airflow.sdk.exceptions import AirflowSkipException

        from ftops_provider.operators.replicas import approval_body

        waiting = [c for c in proposed if c["needs_approval"]]
        if not waiting:
            raise AirflowSkipException("no replica change needs an approval")
        return approval_body(waiting)

    request = approval_request(changes)
    approve = ApprovalOperator(task_id="approve_replica_changes", subject="ftops: approve replica changes?",
                               body="{{ ti.xcom_pull(task_ids='approval_request') }}", defaults="Reject",
                               response_timeout=timedelta(hours=24), retries=0)  # a person's answer is not retried
    decided = EmptyOperator(task_id="approval_decided")  # a rejection skips this, not what follows it

    @task(trigger_rule="none_failed")
    def to_apply(proposed: list[dict], ti=None, dag_run=None) -> list[dict]:
        from ftops_provider.leases import run_holder
        from ftops_provider.operators.replicas import approved_changes

        return approved_changes(proposed, ti.xcom_pull(task_ids="approve_replica_changes"), holder=run_holder(dag_run.dag_id, dag_run.run_id))

    applying = to_apply(changes)
    request >> approve >> decided >> applying
    submit = StreamSubmitOperator.partial(task_id="submit_replica", conn_id="spark_standby").expand_kwargs(
        applying.map(lambda c: {"app_name": c["app_name"], "run_args": c["run_args"], "master_ui": c["master_ui"]}))
    # a replica waiting 30 s for standby cores other applications hold would wait until someone stops one: fail
    # then, naming them, not after three 5-minute tries
    running = SparkAppSensor.partial(task_id="wait_replica_running", spark_master_conn_id="ftops_spark_standby",
                                     timeout_s=300, no_room_after_s=30).expand(app_name=applying.map(lambda c: c["app_name"]))
    stop_old = StopStreamOperator.partial(task_id="stop_old_replica").expand(output_dir=applying.map(lambda c: c["old_output"]))

    @task(outlets=[REPLICATION_PLANS])
    def record_applied(applied: list[dict], outlet_events=None, dag_run=None) -> list[dict]:
        from ftops_provider.leases import run_holder
        from ftops_provider.operators.replicas import record_applied as record

        recorded = record(applied, holder=run_holder(dag_run.dag_id, dag_run.run_id))
        outlet_events[REPLICATION_PLANS].extra = {"applied": [{"job": r["job"], "plan_id": r["plan_id"]} for r in recorded]}
        return recorded

    # whatever failed or was rejected: a change not recorded is undone (its new replica stopped, its lease released)
    @task(trigger_rule="all_done")
    def undo_unapplied(ti=None, dag_run=None) -> list[dict]:
        from ftops_provider.leases import run_holder
        from ftops_provider.operators.replicas import undo_unapplied as undo

        return undo(ti.xcom_pull(task_ids="replica_changes") or [], ti.xcom_pull(task_ids="record_applied") or [],
                    holder=run_holder(dag_run.dag_id, dag_run.run_id))

    upgrade >> [repair, jobs]
    profiled >> planned >> what_if >> changes
    planned >> estimated
    submit >> running >> stop_old >> record_applied(applying) >> undo_unapplied()
    dag.tasks >> RunFailureWatcher()  # `undo_unapplied` runs after failures too: this leaf keeps such a run failed

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
