"""What one DAG run recorded in the history store, found from its run id (the console's tab on Airflow's DAG run
page: ``plugins/ftops_provider/ui/dag_run_view.py``).

Drills, recovery runs, fleet recoveries and plans each keep the id of the Airflow DAG run that made them (``dag_run_id``); migration
013 indexes the lookups. Run ids are unique per DAG only (two hourly DAGs share ``scheduled__...`` ids), so this
returns every kind of record of the id and the caller keeps what its DAG records.
"""

from __future__ import annotations

from typing import Any

from ft_core.store.base import StoreBase

_QUERIES = {
    "drills": ("SELECT j.name, d.drill_id, d.status, d.experiment IS NOT NULL FROM ftops_drill d JOIN ftops_job j "
               "USING (job_id) WHERE d.dag_run_id = %s ORDER BY d.drill_id", ("job", "drill_id", "status", "has_report")),
    "recovery_runs": ("SELECT j.name, r.run_id, r.status, r.experiment IS NOT NULL FROM ftops_recovery_run r JOIN "
                      "ftops_job j USING (job_id) WHERE r.dag_run_id = %s ORDER BY r.run_id",
                      ("job", "run_id", "status", "has_report")),
    "plans": ("SELECT j.name, p.plan_id, p.kind FROM ftops_plan p JOIN ftops_job j USING (job_id) "
              "WHERE p.dag_run_id = %s ORDER BY p.plan_id", ("job", "plan_id", "kind")),
    "fleet_recoveries": ("SELECT j.name, f.run_id, f.status, false FROM ftops_fleet_recovery f JOIN "
                         "ftops_fleet_recovery_job r USING (run_id) JOIN ftops_job j USING (job_id) "
                         "WHERE f.dag_run_id = %s ORDER BY j.name", ("job", "run_id", "status", "has_report")),
}


class DagRunRecords(StoreBase):
    """Read what a DAG run recorded."""

    def dag_run_records(self, dag_run_id: str) -> dict[str, list[dict[str, Any]]]:
        """The records of DAG runs with this run id: ``drills`` (job, drill_id, status, has_report: its experiment
        report is written), ``recovery_runs`` (job, run_id, status, has_report), ``plans`` (job, plan_id, kind) and
        ``fleet_recoveries`` (a row per job: job, run_id, status; no report), each oldest first; four index-backed
        queries."""
        found = {}
        with self.conn, self.conn.cursor() as cur:
            for name, (sql, keys) in _QUERIES.items():
                cur.execute(sql, (dag_run_id,))
                found[name] = [dict(zip(keys, r)) for r in cur.fetchall()]
        return found
