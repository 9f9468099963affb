"""Which jobs a run of a fleet DAG operates (issue 33): the one its ``job`` Param names, or the due ones.

A run of ``ftops_chaos_drill`` or ``ftops_checkpoint_tuning`` with ``job`` in its conf (a manual run) operates that
job, due or not. A run without one (as the scheduler starts it) operates every job whose drill (tuning) schedule is
due (:mod:`ft_core.fleet.schedules`), each in its own mapped task group; none due, the groups expand to nothing and
the run succeeds doing nothing. At most Airflow's ``[core] max_map_length`` jobs per run (a longer list would fail
the task that returns it): the least recently picked first; the rest stay due and come first in the next run. The
jobs a run takes are recorded as picked (``ftops_fleet_turn``), so jobs refused run after run (busy, their failure
domains held) never keep the others out.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from ftops_provider.arguments import bad_input_fails_the_task, checked_name
from ftops_provider.hooks.history import HistoryStoreHook

log = logging.getLogger(__name__)


def max_map_length() -> int:
    """Airflow's ``[core] max_map_length`` (``AIRFLOW__CORE__MAX_MAP_LENGTH``): the most mapped instances one list
    may expand to."""
    from airflow.sdk.configuration import conf

    return conf.getint("core", "max_map_length", fallback=1024)


def jobs_to_operate(operation: str, job: str | None, picked_by: str, conn_id: str = "ftops_db") -> list[str]:
    """``[job]`` when one is named (it must be registered), else this run's share of the due jobs (module docstring)."""
    from ft_core.fleet.schedules import Scheduled, due, take

    store = HistoryStoreHook(conn_id).store()
    try:
        if job:
            checked_name(job, field="job")
            with bad_input_fails_the_task():
                store.job(job)
            log.info("manual run: %s of job %s", operation, job)
            return [job]
        scheduled = [Scheduled(**row) for row in store.scheduled(operation)]
        now = datetime.now(timezone.utc)
        with bad_input_fails_the_task():
            batch, rest = take(due(scheduled, now), max_map_length())
        names = [r.job for r in batch]
        if names:
            store.pick(operation, names, picked_by)
    finally:
        store.conn.close()
    log.info("%d job(s) with a %s schedule, %d due: %s this run%s", len(scheduled), operation, len(batch) + len(rest),
             ", ".join(names) or "none", f"; {len(rest)} left for the next run ([core] max_map_length "
             f"{max_map_length()})" if rest else "")
    return names


def pulled(ti, task_id: str, key: str = "return_value"):
    """The XCom ``key`` of ``task_id`` for the same map index as ``ti``: in a task group mapped over jobs, the same
    job's (``-1``, an unmapped task's, outside one). In Airflow 3.3 ``ti.xcom_pull(task_ids=...)`` without
    ``map_indexes`` returns every map index's value, a list, once the group maps over two jobs or more."""
    return ti.xcom_pull(task_ids=task_id, key=key, map_indexes=ti.map_index)


def tuning_started(job: str, conn_id: str = "ftops_db") -> str:
    """Record that the checkpoint tuning of ``job`` starts now (its schedule counts from here); returns the job."""
    checked_name(job, field="job")
    store = HistoryStoreHook(conn_id).store()
    try:
        with bad_input_fails_the_task():
            store.tuning_started(job)
    finally:
        store.conn.close()
    return job
