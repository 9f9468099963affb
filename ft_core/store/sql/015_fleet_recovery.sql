-- ftops history store, version 15: fleet-wide staged recovery (issue 33, item 3). One run restarts the jobs lost
-- with a failure domain in the order ft_core.fleet.recovery_order plans, as capacity returns; each job's row keeps
-- what was planned (its stage, start and time back), what was predicted when its stage started (the actual start and
-- the restart delay measured then) and what was measured (restart delay, time back), all in seconds after the failure.
CREATE TABLE ftops_fleet_recovery (
    run_id       bigserial PRIMARY KEY,
    dag_run_id   text UNIQUE,                 -- a retried or resumed DAG run gets its run back
    policy       text NOT NULL CHECK (policy IN ('staged', 'density', 'fifo')),
    failed_at    timestamptz NOT NULL,        -- the moment times are counted from
    status       text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'failed')),
    plan         jsonb NOT NULL,              -- the planner's answer and its inputs (capacity, order rule)
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    outcome      text
);

CREATE TABLE ftops_fleet_recovery_job (
    run_id            bigint NOT NULL REFERENCES ftops_fleet_recovery ON DELETE CASCADE,
    job_id            bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    priority          double precision NOT NULL CHECK (priority > 0),
    stage             integer,                -- NULL: the plan never restarts it (no capacity fits, or never back)
    planned_start_s   double precision,
    planned_back_s    double precision,
    inputs            jsonb NOT NULL,         -- the planner's job (rates, cores, restart delay) and each input's source
    restarted_at      timestamptz,
    predicted_back_s  double precision,       -- at its restart: the actual start and the stage's restart delay
    restart_delay_s   double precision,       -- measured: restart to its first micro-batch
    back_at           timestamptz,
    measured_back_s   double precision,
    PRIMARY KEY (run_id, job_id)
);
CREATE INDEX ftops_fleet_recovery_job_of ON ftops_fleet_recovery_job (job_id, run_id DESC);

-- a fleet recovery journals the drivers it stops, under its own run id (not an incremental recovery run's)
ALTER TABLE ftops_fault DROP CONSTRAINT ftops_fault_experiment_kind_check;
ALTER TABLE ftops_fault ADD CONSTRAINT ftops_fault_experiment_kind_check
    CHECK (experiment_kind IN ('drill', 'recovery', 'fault_profile', 'fleet_recovery'));
