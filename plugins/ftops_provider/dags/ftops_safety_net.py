"""ftops_safety_net: no fault ftops injects outlives the process that injected it.

Every fault ftops injects is in the fault journal (history store) with how to undo it. When an experiment's
holder dies (a drill command SIGKILLed, an Airflow worker lost mid-task, a scheduler gone), its lease expires and
its faults are *orphaned*. This DAG runs continuously (one run after another, never two at once): ``watch``
undoes every orphaned fault at once, then watches the journal from the triggerer (a poll every 15 s, deferred: no
worker slot) and undoes the next orphaned fault as soon as there is one: the domain's capacity given back in the
same failure domain, a partition healed, paused executors continued, the primary resubmitted from its checkpoint,
the replica of the job's applied plan running again, the dead drill recorded ``aborted``. So a job is whole again
within its lease's TTL plus one poll and one repair, with nobody watching.

It is a safety net, not an experiment: it runs with experiment schedules off (``FTOPS_SCHEDULES=manual``) too,
and it is unpaused from the start. ``ftops doctor --repair`` does the same repair by hand.

Beside the watch, every run starts with ``prune_history``: the history store's stream progress rows and rates
profiles past their retention are deleted (``FTOPS_RETENTION``, :mod:`ft_core.store.retention`; ``ftops db prune``
by hand), so the store stays bounded with nobody watching it either.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from ftops_provider.notifications import FtopsNotifier
from ftops_provider.operators.retention import PruneHistoryOperator
from ftops_provider.operators.safety import SafetyNetSensor

with DAG(
    dag_id="ftops_safety_net",
    schedule="@continuous",  # the next run starts when one ends; not FTOPS_SCHEDULES's to turn off
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=False,
    tags=["ftops"],
    doc_md=__doc__,
) as dag:
    SafetyNetSensor(task_id="watch", timeout_s=1800, retries=0, on_failure_callback=FtopsNotifier())
    PruneHistoryOperator(task_id="prune_history", retries=0, on_failure_callback=FtopsNotifier())

if __name__ == "__main__":
    print(f"{dag.dag_id}: {len(dag.tasks)} tasks")
