-- ftops history store, version 9: the fault journal, the fleet-wide halt, and names that are identifiers (issue 35).
--
-- Every fault ftops injects (a failure domain down, a network partition, a driver killed, executors paused) is
-- written here *before* it is applied, with how to undo it (`undo`: a document the cluster seam can act on alone,
-- spark_jobs.cluster.seam) and by when (`undo_by`). Undoing it (capacity given back, the partition healed, the
-- driver resubmitted) closes it. A fault still open whose experiment's holder no longer holds the job's lease was
-- left behind by a holder that died: whoever finds it (the next experiment, the reconciler, `ftops doctor
-- --repair`) undoes it first (Chaos Mesh's model: restore from your own records).
CREATE TABLE ftops_fault (
    fault_id        bigserial PRIMARY KEY,
    job_id          bigint NOT NULL REFERENCES ftops_job ON DELETE CASCADE,
    experiment_kind text NOT NULL CHECK (experiment_kind IN ('drill', 'recovery', 'fault_profile')),
    experiment_id   bigint,
    holder          text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('domain_down', 'partition', 'driver_killed', 'executors_paused')),
    target          text NOT NULL,
    undo            jsonb NOT NULL,
    undo_by         timestamptz NOT NULL,
    opened_at       timestamptz NOT NULL DEFAULT now(),
    applied_at      timestamptz,
    closed_at       timestamptz,
    closed_by       text,
    outcome         text
);
CREATE INDEX ftops_fault_open ON ftops_fault (job_id) WHERE closed_at IS NULL;
CREATE INDEX ftops_fault_job_time ON ftops_fault (job_id, opened_at DESC);

-- A halt stops every experiment in the fleet and refuses new ones until `ftops resume` (Gremlin's "halt all
-- attacks"). One row at most: present means halted.
CREATE TABLE ftops_halt (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    reason     text NOT NULL,
    halted_by  text NOT NULL,
    halted_at  timestamptz NOT NULL DEFAULT now()
);

-- Job names are identifiers (ft_core.input.names): checked for every row written from now on; rows stored
-- before the rule stay readable (NOT VALID) and `ftops doctor` lists them.
ALTER TABLE ftops_job ADD CONSTRAINT ftops_job_name_is_identifier
    CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$') NOT VALID;
