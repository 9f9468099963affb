"""ftops_checkpoint_tuning: pick a job's checkpoint (trigger) interval from profiling runs (Chiron, paper 004); the
fleet's tunings.

Which jobs: a run with ``job`` in its conf (the trigger form) tunes that job, due or not. A run without one (the
hourly scheduled run; ``FTOPS_SCHEDULES=manual`` turns schedules off) tunes every job whose tuning schedule is due
(``ftops job set NAME --tuning-schedule CRON|@weekly|...``: due when it fired since the job's last tuning started),
at most Airflow's ``[core] max_map_length`` per run (the rest next run), and succeeds doing nothing when none is
due. ``due_jobs`` lists them; the tuning below is a task group mapped over them, one per job (``start_tuning``
records its start: the schedule counts from there).

Per job, ``profile_interval`` runs an isolated copy of the job's workload at each candidate interval, one after the
other, kills its driver ``failures`` times near the end of a checkpoint interval and measures ingress, latency,
restore and warm-up; the ``ftops_profiling`` pool (one slot by default) limits how many jobs' copies run at once.
``recommend`` fits Chiron's quadratic models and picks the lowest-latency interval whose predicted recovery time
meets the job's bound (stored as a ``checkpoint`` plan with its R^2 and the recovery-time variant chosen by its error
against the measured recovery times; the task fails with the smallest achievable recovery time when none does).
``validate_interval`` runs the recommended interval as one more copy with the same failures and stores its measured
against predicted recovery beside the plan; ``apply_if_validated`` lets the change through only when the prediction
was within ``max_recovery_error`` (20%) and ``resubmit`` is on, and otherwise is skipped, saying why the job's
interval stays (the steps after it are skipped with it).
Then the primary restarts on its checkpoint with the new interval: the trigger interval is not pinned by a
checkpoint, and two drivers must never share one, so the old primary stops first (``stop_primary``), then
``submit_primary`` and a deferred ``wait_primary_running``.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param, task, task_group

from ft_core.home import state_path
from ft_core.input.quantities import NUMBER_LIST_PATTERN, Fraction, PositiveSeconds, TaskCount
from ftops_provider.arguments import bounded_param, optional_name_param
from ftops_provider.operators.checkpoint import (
    ApplyIntervalOperator,
    ProfileIntervalOperator,
    RecommendIntervalOperator,
    ValidateIntervalOperator,
)
from ftops_provider.operators.run_watcher import RunFailureWatcher
from ftops_provider.operators.streams import StopStreamOperator, StreamSubmitOperator
from ftops_provider.schedules import dag_schedule
from ftops_provider.sensors.waits import SparkAppSensor

WORK_DIR = str(state_path("profiling"))  # $FTOPS_HOME/profiling
APPLY = "ti.xcom_pull(task_ids='apply_interval', map_indexes=ti.map_index)"  # this job's, in the mapped group
RUN_DIR = WORK_DIR + "/{{ run_id | replace(':', '_') | replace('+', '_') }}"  # a folder per job under it

with DAG(
    dag_id="ftops_checkpoint_tuning",
    schedule=dag_schedule("@hourly"),  # wakes to tune the due jobs; FTOPS_SCHEDULES=manual: manual runs only
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["ftops"],
    doc_md=__doc__,
    render_template_as_native_obj=True,
    params={
        "job": optional_name_param("registered job whose workload is profiled, due or not; empty (the default, and "
                                   "every scheduled run): every job whose tuning schedule is due"),
        "intervals_s": Param("1,2,4", type="string", pattern=NUMBER_LIST_PATTERN,
                             description="candidate trigger intervals in seconds, comma-separated (>= 3)"),
        "failures": bounded_param(1, TaskCount, "driver kills per profiling copy"),
        "duration_s": bounded_param(60, PositiveSeconds, "steady seconds per copy", minimum=10),
        "max_recovery_s": bounded_param(None, PositiveSeconds | None, "bound (default: the job's max_recovery_s)"),
        "case": Param("max", enum=["min", "avg", "max"], description="Chiron's recovery-time case (max: as the "
                      "validation's failures, just before a checkpoint)"),
        "variant": Param("auto", enum=["auto", "paper_eq4", "eq2", "closed_form", "warmup_elapsed"],
                         description="recovery-time variant (auto: the closest to the measured recovery times)"),
        "max_recovery_error": bounded_param(0.2, Fraction, "apply only when |predicted - measured| / measured "
                                            "recovery of the validation is at most this"),
        "resubmit": Param(False, type="boolean", description="restart the primary with the recommended interval "
                          "(only when it validated)"),
    },
) as dag:

    @task
    def due_jobs(params=None, dag_run=None) -> list[str]:
        from ftops_provider.leases import run_holder
        from ftops_provider.operators.fleet import jobs_to_operate

        return jobs_to_operate("tuning", params["job"], run_holder(dag_run.dag_id, dag_run.run_id))

    @task
    def candidate_intervals(params=None) -> list[float]:
        from ft_core.input.quantities import check_list
        from ftops_provider.arguments import bad_input_fails_the_task
        from spark_jobs.profiling import check_intervals

        with bad_input_fails_the_task():
            return check_intervals(check_list(PositiveSeconds, str(params["intervals_s"]), "intervals_s", max_items="max_tasks"))

    intervals = candidate_intervals()

    @task_group(group_id="tune", prefix_group_id=False)  # one tuning per job; task ids as in a single tuning
    def tune(job: str):
        @task
        def start_tuning(job: str) -> str:
            from ftops_provider.operators.fleet import tuning_started

            return tuning_started(job)

        started = start_tuning(job)
        profiled = ProfileIntervalOperator(task_id="profile_interval", pool="ftops_profiling", job_name=job,
                                           interval_s=intervals, work_dir=RUN_DIR, failures="{{ params.failures }}",
                                           duration_s="{{ params.duration_s }}")
        recommend = RecommendIntervalOperator(task_id="recommend", job_name=job, variant="{{ params.variant }}",
                                              max_recovery_s="{{ params.max_recovery_s }}", case="{{ params.case }}")
        validate = ValidateIntervalOperator(task_id="validate_interval", pool="ftops_profiling", job_name=job,
                                            work_dir=RUN_DIR, failures="{{ params.failures }}",
                                            duration_s="{{ params.duration_s }}",
                                            max_recovery_error="{{ params.max_recovery_error }}")

        @task  # skipped, not a short circuit: in a mapped group a short circuit misses the tasks not expanded yet
        def apply_if_validated(params=None, ti=None) -> bool:
            from airflow.sdk.exceptions import AirflowSkipException

            from ftops_provider.operators.checkpoint import apply_decision
            from ftops_provider.operators.fleet import pulled

            apply, why = apply_decision(pulled(ti, "validate_interval"), bool(params["resubmit"]))
            if not apply:
                raise AirflowSkipException(why)  # the steps after it are skipped by their trigger rules
            return True

        apply = ApplyIntervalOperator(task_id="apply_interval", job_name=job)
        stop = StopStreamOperator(task_id="stop_primary", output_dir="{{ " + APPLY + "['output'] }}")
        submit = StreamSubmitOperator(task_id="submit_primary", conn_id="spark_primary",
                                      app_name="{{ " + APPLY + "['app_name'] }}", run_args="{{ " + APPLY + "['run_args'] }}",
                                      master_ui="{{ " + APPLY + "['master_ui'] }}")
        running = SparkAppSensor(task_id="wait_primary_running", app_name="{{ " + APPLY + "['app_name'] }}",
                                 spark_master_conn_id="ftops_spark_master", timeout_s=300)

        @task(trigger_rule="all_done")
        def release_lease(job: str, **context) -> bool:
            from ftops_provider.operators.checkpoint import release_apply_lease

            return release_apply_lease(job, context)

        started >> profiled >> recommend >> validate >> apply_if_validated() >> apply >> stop >> submit >> running
        running >> release_lease(job)

    tune.expand(job=due_jobs())
    dag.tasks >> RunFailureWatcher()  # `release_lease` runs after failures too: this leaf keeps such a run failed

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
