"""ftops_checkpoint_tuning: pick a job's checkpoint (trigger) interval from profiling runs (Chiron, paper 004).

Weekly, or manually with the form. ``profile_interval`` is mapped over the candidate intervals: each runs an
isolated copy of the job's workload at that interval, kills its driver ``failures`` times near the end of a
checkpoint interval and measures ingress, latency, restore and warm-up; the ``ftops_profiling`` pool (one
slot by default) limits how many copies run at once. ``recommend`` fits Chiron's quadratic models and picks
the lowest-latency interval whose predicted recovery time meets the job's bound (stored as a ``checkpoint``
plan with its R^2 and the recovery-time variant chosen by its error against the measured recovery times;
the task fails with the smallest achievable recovery time when none does). ``validate_interval`` runs the
recommended interval as one more copy with the same failures and stores its measured against predicted
recovery beside the plan; ``apply_if_validated`` lets the change through only when the prediction was
within ``max_recovery_error`` (20%) and ``resubmit`` is on, and otherwise logs why the job's interval stays.
Then the primary restarts on its checkpoint with the new interval: the trigger interval is not pinned by a
checkpoint, and two drivers must never share one, so the old primary stops first (``stop_primary``), then
``submit_primary`` and a deferred ``wait_primary_running``.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param, task

from ft_core.home import state_path
from ft_core.input.quantities import NUMBER_LIST_PATTERN, Fraction, PositiveSeconds, TaskCount
from ftops_provider.arguments import bounded_param, name_param
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
APPLY = "ti.xcom_pull(task_ids='apply_interval')"

with DAG(
    dag_id="ftops_checkpoint_tuning",
    schedule=dag_schedule("@weekly"),  # FTOPS_SCHEDULES=manual: manual runs only
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["ftops"],
    doc_md=__doc__,
    render_template_as_native_obj=True,
    params={
        "job": name_param("topk", "registered job whose workload is profiled"),
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
    def candidate_intervals(params=None) -> list[float]:
        from ft_core.input.quantities import check_list
        from ftops_provider.arguments import bad_input_fails_the_task
        from spark_jobs.profiling import check_intervals

        with bad_input_fails_the_task():
            return check_intervals(check_list(PositiveSeconds, str(params["intervals_s"]), "intervals_s", max_items="max_tasks"))

    profiled = ProfileIntervalOperator.partial(
        task_id="profile_interval", pool="ftops_profiling", job_name="{{ params.job }}",
        work_dir=WORK_DIR + "/{{ run_id | replace(':', '_') | replace('+', '_') }}",
        failures="{{ params.failures }}", duration_s="{{ params.duration_s }}",
    ).expand(interval_s=candidate_intervals())
    recommend = RecommendIntervalOperator(task_id="recommend", job_name="{{ params.job }}", variant="{{ params.variant }}",
                                          max_recovery_s="{{ params.max_recovery_s }}", case="{{ params.case }}")
    validate = ValidateIntervalOperator(
        task_id="validate_interval", pool="ftops_profiling", job_name="{{ params.job }}",
        work_dir=WORK_DIR + "/{{ run_id | replace(':', '_') | replace('+', '_') }}", failures="{{ params.failures }}",
        duration_s="{{ params.duration_s }}", max_recovery_error="{{ params.max_recovery_error }}")

    @task.short_circuit
    def apply_if_validated(params=None, ti=None) -> bool:
        from ftops_provider.operators.checkpoint import apply_decision

        return apply_decision(ti.xcom_pull(task_ids="validate_interval"), bool(params["resubmit"]))[0]

    apply = ApplyIntervalOperator(task_id="apply_interval", job_name="{{ params.job }}")
    stop = StopStreamOperator(task_id="stop_primary", output_dir="{{ " + APPLY + "['output'] }}")
    submit = StreamSubmitOperator(task_id="submit_primary", conn_id="spark_primary", app_name="{{ " + APPLY + "['app_name'] }}",
                                  run_args="{{ " + APPLY + "['run_args'] }}", master_ui="{{ " + APPLY + "['master_ui'] }}")
    running = SparkAppSensor(task_id="wait_primary_running", app_name="{{ " + APPLY + "['app_name'] }}",
                             spark_master_conn_id="ftops_spark_master", timeout_s=300)

    @task(trigger_rule="all_done")
    def release_lease(params=None, **context) -> bool:
        from ftops_provider.operators.checkpoint import release_apply_lease

        return release_apply_lease(params["job"], context)

    profiled >> recommend >> validate >> apply_if_validated() >> apply >> stop >> submit >> running >> release_lease()
    dag.tasks >> RunFailureWatcher()  # `release_lease` runs after failures too: this leaf keeps such a run failed

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
