-- ftops history store, version 2: where a registered job's running streams live.
-- The DAGs read it to profile, drill and resubmit a job (input folder, primary/replica output and
-- checkpoint folders, workload parameters, trigger interval). NULL: a job registered with a topology
-- only, whose streams ftops does not manage.
ALTER TABLE ftops_job ADD COLUMN deployment jsonb
    CHECK (deployment IS NULL OR jsonb_typeof(deployment) = 'object');
