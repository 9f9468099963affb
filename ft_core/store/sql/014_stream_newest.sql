-- ftops history store, version 14: each stream's newest micro-batch, and the job an attached job's queries belong to.
-- Two reasons, one table (issues 34 and 36): the console's and `ftops job fleet`'s job states read a job's progress
-- from its stream `ftops-<job>-primary`, which only ftops's own drivers write; an attached job's queries write
-- `ftops-<job>-<query name>` (role 'attached'), so every attached job showed "no progress". And at fleet scale the
-- per-job lookup of the newest row of ftops_stream_progress was most of the jobs page's time (98 of 105 ms at 5,000
-- jobs: docs/benchmarks/console.md). The writers keep this table with each batch (StreamProgressRecords.record_batch).
CREATE TABLE ftops_stream (
    stream              text PRIMARY KEY CHECK (stream <> ''),
    job                 text,           -- the registered job the stream is a query of, when its writer said (attached)
    role                text,
    app_id              text NOT NULL,
    batch_id            bigint NOT NULL,
    batch_end           timestamptz NOT NULL,
    watermark_ms        bigint,
    input_watermark_ms  bigint
);
CREATE INDEX ftops_stream_job ON ftops_stream (job) WHERE job IS NOT NULL;

-- Filled from the rows written before this version: each stream's newest batch; an attached stream's job is the
-- registered job with the longest name it starts with (`ftops-<job>-`; job names may hold '-').
INSERT INTO ftops_stream (stream, job, role, app_id, batch_id, batch_end, watermark_ms, input_watermark_ms)
SELECT s.stream,
       CASE WHEN s.role = 'attached' THEN
           (SELECT j.name FROM ftops_job j WHERE left(s.stream, length(j.name) + 7) = 'ftops-' || j.name || '-'
            ORDER BY length(j.name) DESC LIMIT 1) END,
       s.role, s.app_id, s.batch_id, s.batch_end, s.watermark_ms, s.input_watermark_ms
FROM (SELECT DISTINCT ON (stream) stream, role, app_id, batch_id, batch_end, watermark_ms, input_watermark_ms
      FROM ftops_stream_progress ORDER BY stream, batch_end DESC, batch_id DESC) s;
