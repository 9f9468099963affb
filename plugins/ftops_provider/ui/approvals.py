"""What waits for a person: the open approval requests of ftops's DAGs (Airflow's human-in-the-loop), for the jobs
page (all of them, and per job in its row) and a job's page (those that name it).

A drill in ``approve`` mode asks before it injects anything (``approve_drill``); a planning run asks before it
changes replicas (``approve_replica_changes``). Both are Airflow HITL requests: this reads the open ones (no
response yet, their task not finished: deferred while it waits, queued while ``dag.test()`` runs its trigger
inline) from Airflow's own database, only of the DAGs whose approval
requests the signed-in user may read (the auth manager decides, as for Airflow's "Required actions" page), and
links each to Airflow's page where it is answered.

    >>> APPROVING_DAGS
    ('ftops_chaos_drill', 'ftops_profile_and_plan')
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from ftops_provider.ui.templates import render

APPROVING_DAGS = ("ftops_chaos_drill", "ftops_profile_and_plan")


def pending_approvals(user) -> list[dict[str, Any]]:
    """The open approval requests of ftops's DAGs that ``user`` may see, oldest first: dag_id, run_id, task_id,
    map_index, subject, since, body."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from airflow.utils.state import State
    from sqlalchemy import select

    manager = get_auth_manager()
    readable = [d for d in APPROVING_DAGS if manager.is_authorized_dag(
        method="GET", access_entity=DagAccessEntity.HITL_DETAIL, details=DagDetails(id=d), user=user)]
    if not readable:
        return []
    query = (select(TaskInstance.dag_id, TaskInstance.run_id, TaskInstance.task_id, TaskInstance.map_index,
                    HITLDetail.subject, HITLDetail.created_at, HITLDetail.body)
             .join(HITLDetail, HITLDetail.ti_id == TaskInstance.id)
             .where(HITLDetail.responded_at.is_(None),
                    TaskInstance.state.in_([s for s in State.unfinished if s is not None]),
                    TaskInstance.dag_id.in_(readable))
             .order_by(HITLDetail.created_at))
    with create_session() as session:
        keys = ("dag_id", "run_id", "task_id", "map_index", "subject", "since", "body")
        return [dict(zip(keys, row)) for row in session.execute(query).all()]


def jobs_named(body: str | None, jobs: set[str]) -> list[str]:
    """The jobs of ``jobs`` a request's body names. Both requests name each job they concern in bold
    (``operators.drills.drill_approval_body``: "under job **topk**"; ``operators.replicas.approval_body``: a line per
    job, "**topk**: plan #4 replaces #2"). A bold word that is not a registered job (the drill's domain) is not one.

    >>> jobs_named("ftops would fail **rack-a** under job **topk** (drill #3)", {"topk", "clicks"})
    ['topk']
    """
    return sorted({name for name in re.findall(r"\*\*([^*\s]+)\*\*", body or "") if name in jobs})


def answerable(pending: list[dict[str, Any]], airflow_root: str) -> list[dict[str, Any]]:
    """Each request with ``answer_path``: where in Airflow it is answered."""
    return [{**p, "answer_path": _answer_path(p, airflow_root)} for p in pending]


def approvals_section(pending: list[dict[str, Any]], airflow_root: str = "", job: str | None = None) -> str:
    """The open approval requests (all, or ``job``'s; nothing when none), each linked to where it is answered."""
    if job is not None:
        pending = [p for p in pending if job in jobs_named(p.get("body"), {job})]
    return render("approvals.html", pending=answerable(pending, airflow_root), airflow_root=airflow_root)


def _answer_path(p: dict[str, Any], root: str) -> str:
    """Airflow's page of the task instance's request (a mapped one's by its index)."""
    task = f"{root}/dags/{quote(p['dag_id'])}/runs/{quote(p['run_id'], safe='')}/tasks/{quote(p['task_id'])}"
    return task + (f"/mapped/{p['map_index']}" if p["map_index"] >= 0 else "") + "/required_actions"

