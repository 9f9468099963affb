-- ftops history store, version 7: the micro-batch progress of the streams ftops runs (issue 14, item 5).
--
-- Each streaming driver ftops starts writes one row per micro-batch here (its listener, when the driver has
-- FTOPS_DATABASE_URL), so the triggers that wait on a stream (tentative outputs arriving, a primary caught up)
-- read progress from the store instead of the job's folders: the triggerer needs no disk shared with the
-- drivers. A stream is its query name (the application name ftops gives it); a query restarted in the same
-- driver or resubmitted keeps its name, so rows of one stream come from several runs (app_id, batch_id).
-- lag_files is the file sources' backlog after the batch, counted by the driver (it lists the input anyway);
-- NULL for sources that have no files. Rows older than a week are pruned by the writers.
CREATE TABLE ftops_stream_progress (
    stream          text NOT NULL CHECK (stream <> ''),
    app_id          text NOT NULL,
    batch_id        bigint NOT NULL CHECK (batch_id >= 0),
    role            text,
    batch_end       timestamptz NOT NULL,
    watermark_ms    bigint,
    input_rows      bigint NOT NULL DEFAULT 0 CHECK (input_rows >= 0),
    output_rows     bigint NOT NULL DEFAULT 0 CHECK (output_rows >= 0),
    input_files     integer CHECK (input_files >= 0),
    lag_files       integer CHECK (lag_files >= 0),
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, app_id, batch_id)
);
CREATE INDEX ftops_stream_progress_stream_end ON ftops_stream_progress (stream, batch_end DESC);
