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

from html import escape
from typing import Any
from urllib.parse import quote

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
    """The tab's page when it is not one report: a list of what the run recorded, or why there is nothing."""
    run = f"run {escape(run_id)} of {escape(dag_id)}"
    if dag_id not in RECORDS:
        return f"<p id='not-ftops'>The {run} is not a run of one of ftops's DAGs: ftops recorded nothing for it.</p>"
    if not records:
        return (f"<p id='nothing-yet'>ftops has recorded nothing for the {run} yet (a drill or recovery run is "
                "recorded when it starts, plans when they are computed; a run that failed first records none).</p>")
    items = "".join(f"<li>{_link(RECORDS[dag_id][0], r)}</li>" for r in records)
    return f"<p>What the {run} recorded:</p><ul id='records'>{items}</ul>"


def _link(kind: str, r: dict[str, Any]) -> str:
    job = escape(quote(r["job"], safe=""), quote=True)
    if kind == "plans":
        return f"{escape(r['kind'])} plan #{r['plan_id']} of <a href='../../jobs/{job}#plans'>{escape(r['job'])}</a>"
    if kind == "fleet_recoveries":
        return (f"fleet recovery #{r['run_id']} of <a href='../../jobs/{job}#fleet-recovery'>{escape(r['job'])}</a>: "
                f"{escape(r['status'])}")
    what, key, page, section = (("drill", "drill_id", "drills", "drills") if kind == "drills"
                                else ("recovery run", "run_id", "recovery-runs", "recovery"))
    href = f"../../jobs/{job}/{page}/{r[key]}" if r["has_report"] else f"../../jobs/{job}#{section}"
    return f"<a href='{href}'>{what} #{r[key]}</a> of {escape(r['job'])}: {escape(r['status'])}"
