-- ftops history store, version 13: what a DAG run recorded, found from the run (issue 36, item 4: the console's view on
-- Airflow's DAG run page asks for the drills, recovery runs and plans of one run id). The unique indexes on
-- (job_id, dag_run_id) serve a job's own lookups only; at fleet scale (a year of 5,000 jobs: docs/benchmarks/fleet.md)
-- a lookup by the run alone read the whole table.
CREATE INDEX ftops_drill_dag_run ON ftops_drill (dag_run_id);
CREATE INDEX ftops_recovery_run_dag_run ON ftops_recovery_run (dag_run_id);
CREATE INDEX ftops_plan_dag_run ON ftops_plan (dag_run_id);
