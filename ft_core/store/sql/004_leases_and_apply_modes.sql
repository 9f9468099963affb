-- ftops history store, version 4: one experiment per job at a time, and how a job's changes are applied.
--
-- A lease says who is experimenting on a job (a drill, a staged recovery, a checkpoint-interval change, a replica
-- change) and until when. At most one row per job; taking it succeeds only when there is none, it has
-- expired (its holder died without releasing it), or the same holder takes it again (a retried task).
CREATE TABLE ftops_lease (
    job_id      bigint PRIMARY KEY REFERENCES ftops_job (job_id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('drill', 'recovery', 'checkpoint_change', 'replica_change')),
    holder      text NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);

-- apply: 'auto' acts on a new plan or a drill at once, 'approve' waits for a person (Airflow's
-- human-in-the-loop operators), 'recommend' stores plans and never acts. Test jobs default to auto.
ALTER TABLE ftops_job ADD COLUMN apply_mode text NOT NULL DEFAULT 'approve'
    CHECK (apply_mode IN ('auto', 'approve', 'recommend'));
ALTER TABLE ftops_job ADD COLUMN test_job boolean NOT NULL DEFAULT false;
ALTER TABLE ftops_job ADD COLUMN replica_cooldown_s double precision NOT NULL DEFAULT 3600 CHECK (replica_cooldown_s >= 0);

-- A drill stopped on purpose (an abort probe fired, the steady state did not hold, nobody approved it)
-- is neither passed nor failed: 'aborted', with the reason in its report.
ALTER TABLE ftops_drill DROP CONSTRAINT ftops_drill_status_check;
ALTER TABLE ftops_drill ADD CONSTRAINT ftops_drill_status_check CHECK (status IN ('running', 'passed', 'failed', 'aborted'));

-- The experiment report of a drill or a recovery run (ft_core.store.experiments.ExperimentReport): its
-- steady-state hypothesis, abort probes, timeline and verdict, written when the experiment ends.
ALTER TABLE ftops_drill ADD COLUMN experiment jsonb;
ALTER TABLE ftops_recovery_run ADD COLUMN experiment jsonb;
