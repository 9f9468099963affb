"""ftops_fleet_watch: start a fleet recovery when a failure domain is lost under jobs, with nobody watching
(issue 33, item 3's sensor). Opt-in: paused at creation; unpause it (and ``ftops_fleet_recovery``) to let ftops
act on a lost rack or zone by itself.

It runs continuously (one run after another, never two at once). ``watch`` defers on a trigger that polls every
15 s from the triggerer: the jobs with no lease (not under a drill or a recovery) whose newest micro-batch is over
10 s old, then each one's master: a job is lost when its primary runs no executor and its master lists a worker
dead that was heartbeating when the job's last micro-batch ended
(:mod:`spark_jobs.fleet_recovery.watch`). Once two polls in a row see the same loss, ``recover`` starts ``ftops_fleet_recovery``
for it, one DAG run per master, with the lost jobs and the failure time (the dead workers' last heartbeat); the rest
of that DAG's Params are its defaults (capacity back: each dead worker, one every ``replacement_s``). The run is
named after the loss (``fleet_watch__<master>__<failed_at>__<digest of its jobs>``), so a loss is recovered once: a
loss seen again is skipped, and a job whose newest fleet recovery is about this loss is left to whoever that run's outcome went to. A
watch with no loss ends after ``watch_s`` (30 minutes by default; ``watch`` and ``recover`` skipped) and the next
run starts.
"""

from __future__ import annotations

import pendulum
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG

from ft_core.input.quantities import PositiveSeconds
from ftops_provider.arguments import bounded_param
from ftops_provider.notifications import FtopsNotifier
from ftops_provider.operators.fleet_watch import FleetLossSensor

with DAG(
    dag_id="ftops_fleet_watch",
    schedule="@continuous",  # a remedy, not an experiment: not FTOPS_SCHEDULES's to turn off
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=True,  # opt-in: ftops restarts drivers by itself once this runs
    tags=["ftops"],
    doc_md=__doc__,
    params={"watch_s": bounded_param(1800, PositiveSeconds, "how long one run watches before the next starts",
                                     minimum=60)},
) as dag:
    watch = FleetLossSensor(task_id="watch", timeout_s="{{ params.watch_s }}", retries=0,
                            on_failure_callback=FtopsNotifier())
    TriggerDagRunOperator.partial(
        task_id="recover", trigger_dag_id="ftops_fleet_recovery", skip_when_already_exists=True,
        fail_when_dag_is_paused=True, on_failure_callback=FtopsNotifier(),
    ).expand_kwargs(watch.output)

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
