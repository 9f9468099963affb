-- ftops history store, version 12: the store at fleet scale (issue 33, item 4; `ftops bench fleet`, with 5,000 jobs
-- and a year of history: docs/benchmarks/fleet.md). Each change makes one query of a page or a DAG index-backed.

-- A job's newest profile of a kind (`latest_profile`: the jobs page, every ftops_profile_and_plan run; `save_profile`
-- reads it too): was a scan of the whole table filtered on kind.
CREATE INDEX ftops_profile_job_kind_time ON ftops_profile (job_id, kind, created_at DESC, profile_id DESC);

-- A job's applied plans (`applied_plans`, `running_replica_plan`: ftops_profile_and_plan, the safety net): only the
-- running ones had an index (partial, stopped_at IS NULL).
CREATE INDEX ftops_applied_plan_job_time ON ftops_applied_plan (job_id, started_at DESC, applied_id DESC);

-- The views ran DISTINCT ON / PARTITION BY the job's id, so a filter on the job's name could not pass through them:
-- every job's plans were read to return one job's. Names are unique, so grouping by the name gives the same rows,
-- and the filter reaches ftops_plan_job_kind_time. Same columns, same order (CREATE OR REPLACE keeps them).
CREATE OR REPLACE VIEW ftops_current_plan AS
SELECT DISTINCT ON (j.name, p.kind) j.name AS job, p.plan_id, p.job_id, p.kind, p.algorithm, p.parameters, p.objective,
       p.optimal, p.payload, p.input_hash, p.topology_id, p.dag_run_id, p.created_at
FROM ftops_plan p JOIN ftops_job j USING (job_id)
ORDER BY j.name, p.kind, p.created_at DESC, p.plan_id DESC;

CREATE OR REPLACE VIEW ftops_plan_changes AS
SELECT j.name AS job, p.kind, p.plan_id, p.created_at, p.algorithm, p.objective,
       p.objective - lag(p.objective) OVER w AS objective_change,
       lag(p.plan_id) OVER w AS previous_plan_id, p.dag_run_id
FROM ftops_plan p JOIN ftops_job j USING (job_id)
WINDOW w AS (PARTITION BY j.name, p.kind ORDER BY p.created_at, p.plan_id);
