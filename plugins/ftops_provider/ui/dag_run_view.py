"""The "Fault tolerance" tab on Airflow's own DAG run page (an external view with destination ``dag_run``): what
that run of one of ftops's DAGs recorded in the history store.

A run of ``ftops_chaos_drill`` recorded drills, one of ``ftops_incremental_recovery`` recovery runs, one of
``ftops_fleet_recovery`` a fleet recovery (each of its jobs linked to its page's fleet recoveries), and runs of
``ftops_profile_and_plan`` and ``ftops_checkpoint_tuning`` plans (replication and what-if recovery plans, and
checkpoint plans). One drill or recovery run with its report written: that report's page; otherwise a list
linking to each report, or (a run still going, or one that died before writing it) to the job's drills or recovery
runs, with its status.
Airflow shows the tab on every DAG's runs; another DAG's run says it is not one of ftops's.

    >>> sorted(RECORDS)[:2]
    ['ftops_chaos_drill', 'ftops_checkpoint_tuning']
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ftops_provider.ui.templates import render

# DAG -> (the kind of record its runs leave, the plan kinds it stores)
RECORDS: dict[str, tuple[str, frozenset[str]]] = {
    "ftops_chaos_drill": ("drills", frozenset()),
    "ftops_incremental_recovery": ("recovery_runs", frozenset()),
    "ftops_fleet_recovery": ("fleet_recoveries", frozenset()),
    "ftops_profile_and_plan": ("plans", frozenset({"replication", "recovery"})),
    "ftops_checkpoint_tuning": ("plans", frozenset({"checkpoint"})),
}


def run_records(dag_id: str, found: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Of ``HistoryStore.dag_run_records``, what ``dag_id``'s runs record (its plan kinds only)."""
    kind, plan_kinds = RECORDS[dag_id]
    return [r for r in found[kind] if kind != "plans" or r["kind"] in plan_kinds]


def single_report_path(dag_id: str, records: list[dict[str, Any]]) -> str | None:
    """The page of the run's only drill or recovery run (under /ftops) once its report is written, else None."""
    kind = RECORDS[dag_id][0]
    if len(records) != 1 or kind == "plans" or not records[0]["has_report"]:
        return None
    r = records[0]
    job = quote(r["job"], safe="")
    return f"/jobs/{job}/drills/{r['drill_id']}" if kind == "drills" else f"/jobs/{job}/recovery-runs/{r['run_id']}"


def records_body(dag_id: str, run_id: str, records: list[dict[str, Any]]) -> str:
    """The tab's page when it is not one report: a list of what the run recorded, or why there is nothing
    (``templates/records.html``)."""
    kind = RECORDS[dag_id][0] if dag_id in RECORDS else None
    return render("records.html", dag_id=dag_id, run_id=run_id, kind=kind, records=records)
