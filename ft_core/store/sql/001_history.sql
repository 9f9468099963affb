-- ftops history store, version 1: jobs, topology versions, profiles, plans, applied plans, drills,
-- recovery runs and their stages, and an event log keyed by job (after the Flink Kubernetes
-- operator's JDBC autoscaler store: a state table plus an event table per job).

CREATE TABLE ftops_job (
    job_id           bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    workload         text NOT NULL,
    primary_master   text,
    standby_master   text,
    replication_budget integer NOT NULL DEFAULT 0 CHECK (replication_budget >= 0),
    query_priorities jsonb NOT NULL DEFAULT '{}'::jsonb,
    max_recovery_s   double precision CHECK (max_recovery_s IS NULL OR max_recovery_s > 0),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ftops_topology_version (
    topology_id  bigserial PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    version      integer NOT NULL,
    doc          jsonb NOT NULL,
    doc_hash     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (job_id, version),
    UNIQUE (job_id, doc_hash)
);

CREATE TABLE ftops_profile (
    profile_id   bigserial PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('rates', 'checkpoint')),
    doc          jsonb NOT NULL,
    dag_run_id   text,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ftops_plan (
    plan_id      bigserial PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('replication', 'recovery', 'checkpoint')),
    algorithm    text NOT NULL,
    parameters   jsonb NOT NULL DEFAULT '{}'::jsonb,
    objective    double precision NOT NULL,
    optimal      boolean NOT NULL DEFAULT false,
    payload      jsonb NOT NULL,
    input_hash   text NOT NULL,
    topology_id  bigint REFERENCES ftops_topology_version,
    dag_run_id   text,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ftops_plan_job_kind_time ON ftops_plan (job_id, kind, created_at DESC, plan_id DESC);

CREATE TABLE ftops_applied_plan (
    applied_id   bigserial PRIMARY KEY,
    plan_id      bigint NOT NULL REFERENCES ftops_plan ON DELETE CASCADE,
    job_id       bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    role         text NOT NULL CHECK (role IN ('primary', 'replica', 'unit')),
    spark_app_id text,
    master_url   text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    stopped_at   timestamptz
);

CREATE TABLE ftops_drill (
    drill_id                  bigserial PRIMARY KEY,
    job_id                    bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    plan_id                   bigint REFERENCES ftops_plan,
    params                    jsonb NOT NULL DEFAULT '{}'::jsonb,
    status                    text NOT NULL CHECK (status IN ('running', 'passed', 'failed')),
    predicted_output_fidelity double precision,
    tentative_accuracy        double precision,
    time_to_first_tentative_s double precision,
    time_to_caught_up_s       double precision,
    lost_windows              integer,
    duplicated_windows        integer,
    output_equals_reference   boolean,
    report                    jsonb,
    dag_run_id                text,
    started_at                timestamptz NOT NULL DEFAULT now(),
    finished_at               timestamptz
);

CREATE TABLE ftops_drill_window (
    drill_id      bigint NOT NULL REFERENCES ftops_drill ON DELETE CASCADE,
    window_start  timestamptz NOT NULL,
    accuracy      double precision NOT NULL,
    PRIMARY KEY (drill_id, window_start)
);

CREATE TABLE ftops_recovery_run (
    run_id       bigserial PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    plan_id      bigint REFERENCES ftops_plan,
    status       text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    failure      jsonb NOT NULL DEFAULT '{}'::jsonb,
    dag_run_id   text UNIQUE,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);

CREATE TABLE ftops_recovery_stage (
    run_id       bigint NOT NULL REFERENCES ftops_recovery_run ON DELETE CASCADE,
    stage_no     integer NOT NULL CHECK (stage_no >= 1),
    capacity     double precision NOT NULL,
    partitions   jsonb NOT NULL,
    placement    jsonb NOT NULL DEFAULT '{}'::jsonb,
    status       text NOT NULL CHECK (status IN ('pending', 'waiting', 'started', 'done', 'failed')),
    started_at   timestamptz,
    finished_at  timestamptz,
    PRIMARY KEY (run_id, stage_no)
);

CREATE TABLE ftops_recovery_query (
    run_id       bigint NOT NULL REFERENCES ftops_recovery_run ON DELETE CASCADE,
    query        text NOT NULL,
    priority     double precision NOT NULL DEFAULT 1,
    recovered_s  double precision,
    PRIMARY KEY (run_id, query)
);

CREATE TABLE ftops_event (
    event_id     bigserial PRIMARY KEY,
    job_id       bigint REFERENCES ftops_job ON DELETE CASCADE,
    kind         text NOT NULL,
    payload      jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ftops_event_job_time ON ftops_event (job_id, created_at DESC);

-- The questions users ask.
CREATE VIEW ftops_current_plan AS
SELECT DISTINCT ON (p.job_id, p.kind) j.name AS job, p.*
FROM ftops_plan p JOIN ftops_job j USING (job_id)
ORDER BY p.job_id, p.kind, p.created_at DESC, p.plan_id DESC;

CREATE VIEW ftops_plan_changes AS
SELECT j.name AS job, p.kind, p.plan_id, p.created_at, p.algorithm, p.objective,
       p.objective - lag(p.objective) OVER w AS objective_change,
       lag(p.plan_id) OVER w AS previous_plan_id, p.dag_run_id
FROM ftops_plan p JOIN ftops_job j USING (job_id)
WINDOW w AS (PARTITION BY p.job_id, p.kind ORDER BY p.created_at, p.plan_id);

CREATE VIEW ftops_drill_results AS
SELECT j.name AS job, d.drill_id, d.started_at, d.status, d.predicted_output_fidelity, d.tentative_accuracy,
       abs(d.tentative_accuracy - d.predicted_output_fidelity) AS prediction_error,
       d.time_to_first_tentative_s, d.time_to_caught_up_s, d.lost_windows, d.duplicated_windows,
       d.output_equals_reference
FROM ftops_drill d JOIN ftops_job j USING (job_id);

CREATE VIEW ftops_recovery_timeline AS
SELECT j.name AS job, r.run_id, r.status AS run_status, r.started_at AS run_started_at,
       q.query, q.priority, q.recovered_s
FROM ftops_recovery_run r JOIN ftops_job j USING (job_id) LEFT JOIN ftops_recovery_query q USING (run_id);
