-- ftops history store, version 3: drills and recovery runs as DAG runs write them.
--
-- A DAG task that is retried (or a DAG run that is cleared and resumed) repeats its writes, so a DAG run
-- owns at most one drill and one recovery run per job: the store finds the existing record instead of
-- opening a second one. Airflow run ids are unique per DAG only, hence per job rather than global
-- (version 1 made ftops_recovery_run.dag_run_id globally unique). NULLs stay distinct: runs started
-- outside Airflow (no DAG run) are never merged.
CREATE UNIQUE INDEX ftops_drill_job_dag_run ON ftops_drill (job_id, dag_run_id);
ALTER TABLE ftops_recovery_run DROP CONSTRAINT ftops_recovery_run_dag_run_id_key;
CREATE UNIQUE INDEX ftops_recovery_run_job_dag_run ON ftops_recovery_run (job_id, dag_run_id);

-- When a stage began waiting for its capacity: the recovery chart draws the wait apart from the restart.
ALTER TABLE ftops_recovery_stage ADD COLUMN waiting_at timestamptz;

-- The drill chart and the plan diff read by job and time; applied plans are looked up while open.
CREATE INDEX ftops_drill_job_time ON ftops_drill (job_id, started_at, drill_id);
CREATE INDEX ftops_applied_plan_open ON ftops_applied_plan (job_id, role) WHERE stopped_at IS NULL;

-- Recovery stages on one time axis per run: seconds from the run's start to each stage's wait, start
-- and finish (NULL where the stage has not reached that point).
CREATE VIEW ftops_recovery_stage_timeline AS
SELECT j.name AS job, r.run_id, r.status AS run_status, s.stage_no, s.status, s.capacity, s.partitions,
       extract(epoch FROM s.waiting_at - r.started_at) AS waiting_s,
       extract(epoch FROM s.started_at - r.started_at) AS started_s,
       extract(epoch FROM s.finished_at - r.started_at) AS finished_s
FROM ftops_recovery_stage s JOIN ftops_recovery_run r USING (run_id) JOIN ftops_job j USING (job_id);
