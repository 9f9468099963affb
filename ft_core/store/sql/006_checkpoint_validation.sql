-- ftops history store, version 5: the validation of a checkpoint recommendation (Chiron, paper 004; issue 15).
--
-- A recommended checkpoint interval is applied only when its prediction validated: a validation run (a
-- profiling copy at the recommended interval with injected failures) measured a recovery time within
-- max_recovery_error of the predicted one. One row per validation run, kept beside the checkpoint plan it
-- validates; whether the plan was applied is in ftops_applied_plan. Only checkpoint plans are validated here.
CREATE TABLE ftops_checkpoint_validation (
    validation_id        bigserial PRIMARY KEY,
    plan_id              bigint NOT NULL REFERENCES ftops_plan ON DELETE CASCADE,
    job_id               bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    interval_ms          double precision NOT NULL CHECK (interval_ms > 0),
    variant              text NOT NULL,
    predicted_recovery_s double precision NOT NULL CHECK (predicted_recovery_s >= 0),
    measured_recovery_s  double precision NOT NULL CHECK (measured_recovery_s >= 0),
    recovery_error       double precision CHECK (recovery_error IS NULL OR recovery_error >= 0),
    max_recovery_error   double precision NOT NULL CHECK (max_recovery_error >= 0),
    validated            boolean NOT NULL,
    reason               text NOT NULL,
    report               jsonb NOT NULL DEFAULT '{}'::jsonb,
    dag_run_id           text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (plan_id, dag_run_id)
);
CREATE INDEX ftops_checkpoint_validation_job_time ON ftops_checkpoint_validation (job_id, created_at DESC);
