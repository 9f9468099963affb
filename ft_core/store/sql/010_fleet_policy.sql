-- ftops history store, version 10: the fleet (issue 33). Per-job policy, its changes, the scheduled runs' turns,
-- and the fleet's failure-domain lock.
--
-- Policy: when the scheduled runs drill the job and tune its checkpoint interval (a 5-field cron in UTC or one of
-- @hourly @daily @weekly @monthly; NULL: never on a schedule, only by hand), and its priority (the weight fleet-wide
-- staged recovery gives it). The apply mode is the column of version 4. `*_schedule_at`: when that schedule was
-- set; a job never drilled (tuned) is due from then on (ft_core.fleet.schedules).
ALTER TABLE ftops_job ADD COLUMN drill_schedule text;
ALTER TABLE ftops_job ADD COLUMN drill_schedule_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE ftops_job ADD COLUMN tuning_schedule text;
ALTER TABLE ftops_job ADD COLUMN tuning_schedule_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE ftops_job ADD COLUMN priority double precision NOT NULL DEFAULT 1
    CHECK (priority > 0 AND priority <= 1000000);
-- the scheduled runs read only the jobs that have a schedule
CREATE INDEX ftops_job_drill_scheduled ON ftops_job (job_id) WHERE drill_schedule IS NOT NULL;
CREATE INDEX ftops_job_tuning_scheduled ON ftops_job (job_id) WHERE tuning_schedule IS NOT NULL;

-- Every policy change: who (a command's user and holder, a DAG run), when, and each field's old and new value
-- ({"drill_schedule": {"from": null, "to": "@weekly"}}). job_id NULL: the fleet's own policy (ftops_fleet).
CREATE TABLE ftops_policy_change (
    change_id   bigserial PRIMARY KEY,
    job_id      bigint REFERENCES ftops_job ON DELETE CASCADE,
    changed_by  text NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now(),
    changes     jsonb NOT NULL
);
CREATE INDEX ftops_policy_change_job_time ON ftops_policy_change (job_id, changed_at DESC);

-- The fleet's policy, one row: how many drills may hold failure domains at once, fleet-wide.
CREATE TABLE ftops_fleet (
    only_row    boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    max_drills  integer NOT NULL DEFAULT 2 CHECK (max_drills >= 1 AND max_drills <= 1000)
);
INSERT INTO ftops_fleet DEFAULT VALUES;

-- A scheduled run's turn per job and operation: when a run last picked the job (runs take the least recently
-- picked due jobs first, so jobs refused this run, busy or blocked, do not starve the others), and when its
-- last tuning started (a drill's start is its ftops_drill row).
CREATE TABLE ftops_fleet_turn (
    job_id      bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    operation   text NOT NULL CHECK (operation IN ('drill', 'tuning')),
    picked_at   timestamptz,
    picked_by   text,
    started_at  timestamptz,
    PRIMARY KEY (job_id, operation)
);

-- The failure domains a drill holds for its lease's lifetime: the domain it fails and every domain where its job's
-- executors run or may land meanwhile (spark_jobs.drills.fleet_lock), each named with its cluster (`<master>#<domain>`). A drill whose domains overlap another live
-- drill's is refused like a busy job. A row is live while its (job, holder) holds a live lease: a holder that
-- died leaves rows that expire with its lease (no separate renewal, the same crash safety).
CREATE TABLE ftops_domain_lock (
    domain      text NOT NULL,
    job_id      bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    holder      text NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (domain, job_id)
);
CREATE INDEX ftops_domain_lock_job ON ftops_domain_lock (job_id);
