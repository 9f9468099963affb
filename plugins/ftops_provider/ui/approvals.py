"""What waits for a person: the open approval requests of ftops's DAGs (Airflow's human-in-the-loop), for the jobs page.

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

from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import quote

APPROVING_DAGS = ("ftops_chaos_drill", "ftops_profile_and_plan")


def pending_approvals(user) -> list[dict[str, Any]]:
    """The open approval requests of ftops's DAGs that ``user`` may see, oldest first: dag_id, run_id, task_id,
    map_index, subject, since."""
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
                    HITLDetail.subject, HITLDetail.created_at)
             .join(HITLDetail, HITLDetail.ti_id == TaskInstance.id)
             .where(HITLDetail.responded_at.is_(None),
                    TaskInstance.state.in_([s for s in State.unfinished if s is not None]),
                    TaskInstance.dag_id.in_(readable))
             .order_by(HITLDetail.created_at))
    with create_session() as session:
        keys = ("dag_id", "run_id", "task_id", "map_index", "subject", "since")
        return [dict(zip(keys, row)) for row in session.execute(query).all()]


def approvals_section(pending: list[dict[str, Any]], airflow_root: str = "") -> str:
    """The jobs page's list of open approval requests (nothing when none), each linked to where it is answered."""
    if not pending:
        return ""
    items = "".join(f"<li>{escape(p['subject'])}: <a href='{escape(_answer_path(p, airflow_root), quote=True)}'>"
                    f"{escape(p['task_id'])} of {escape(p['dag_id'])} run {escape(p['run_id'])}</a>, waiting since "
                    f"{_since(p['since'])}</li>" for p in pending)
    return (f"<section id='approvals'><h2>Waiting for a person ({len(pending)})</h2><ul>{items}</ul>"
            f"<p class='caption'>Answered in Airflow (<a href='{escape(airflow_root, quote=True)}/required_actions?"
            "response_received=false'>Required actions</a>): a drill asks before it injects anything, a planning "
            "run before it changes replicas.</p></section>")


def _answer_path(p: dict[str, Any], root: str) -> str:
    """Airflow's page of the task instance's request (a mapped one's by its index)."""
    task = f"{root}/dags/{quote(p['dag_id'])}/runs/{quote(p['run_id'], safe='')}/tasks/{quote(p['task_id'])}"
    return task + (f"/mapped/{p['map_index']}" if p["map_index"] >= 0 else "") + "/required_actions"


def _since(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"
