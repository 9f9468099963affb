-- ftops history store, version 14: each stream's newest micro-batch, and the job an attached job's queries belong to.
-- Two reasons, one table (issues 34 and 36): the console's and `ftops job fleet`'s job states read a job's progress
-- from its stream `ftops-<job>-primary`, which only ftops's own drivers write; an attached job's queries write
-- `ftops-<job>-<query name>` (role 'attached'), so every attached job showed "no progress". And the jobs page read each
-- job's newest row of ftops_stream_progress, one index lookup per job (`fleet_states`, 98 ms at 5,000 jobs before this
-- version: docs/benchmarks/fleet.md).
--
-- ftops_stream is kept by triggers on ftops_stream_progress, not by the writers, so drivers started before this
-- version (they write ftops_stream_progress only, without a job) keep it current too. A writer that knows the job
-- says it (ftops_stream_progress.job, written by attached jobs' listeners); otherwise an attached stream's job is the
-- registered job with the longest name the stream starts with (`ftops-<job>-`: job names may hold '-', so job
-- `clicks` with a query `eu-totals` and job `clicks-eu` cannot be told apart by name alone: the newer writers say it).
ALTER TABLE ftops_stream_progress ADD COLUMN job text;

CREATE TABLE ftops_stream (
    stream              text PRIMARY KEY CHECK (stream <> ''),
    job                 text,           -- the registered job the stream is a query of (attached jobs' streams)
    role                text,
    app_id              text NOT NULL,
    batch_id            bigint NOT NULL,
    batch_end           timestamptz NOT NULL,
    watermark_ms        bigint,
    input_watermark_ms  bigint
);
CREATE INDEX ftops_stream_job ON ftops_stream (job) WHERE job IS NOT NULL;

CREATE FUNCTION ftops_attached_job(stream text) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT j.name FROM ftops_job j WHERE left(stream, length(j.name) + 7) = 'ftops-' || j.name || '-'
    ORDER BY length(j.name) DESC LIMIT 1 $$;

-- Per statement, from its written rows: each stream's newest, unless the table has a newer one (a batch written
-- late, after a newer one, leaves it; a restarted application's batch ids start again, so the order is batch_end's).
CREATE FUNCTION ftops_stream_newest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ftops_stream AS s (stream, job, role, app_id, batch_id, batch_end, watermark_ms, input_watermark_ms)
    SELECT DISTINCT ON (n.stream) n.stream,
           coalesce(n.job, CASE WHEN n.role = 'attached' THEN ftops_attached_job(n.stream) END),
           n.role, n.app_id, n.batch_id, n.batch_end, n.watermark_ms, n.input_watermark_ms
    FROM written n ORDER BY n.stream, n.batch_end DESC, n.batch_id DESC
    ON CONFLICT (stream) DO UPDATE SET job = coalesce(EXCLUDED.job, s.job), role = EXCLUDED.role,
        app_id = EXCLUDED.app_id, batch_id = EXCLUDED.batch_id, batch_end = EXCLUDED.batch_end,
        watermark_ms = EXCLUDED.watermark_ms, input_watermark_ms = EXCLUDED.input_watermark_ms
    WHERE EXCLUDED.batch_end >= s.batch_end;
    RETURN NULL;
END $$;
CREATE TRIGGER ftops_stream_newest_inserted AFTER INSERT ON ftops_stream_progress
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION ftops_stream_newest();
CREATE TRIGGER ftops_stream_newest_updated AFTER UPDATE ON ftops_stream_progress
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION ftops_stream_newest();

-- The rows written before this version.
INSERT INTO ftops_stream (stream, job, role, app_id, batch_id, batch_end, watermark_ms, input_watermark_ms)
SELECT stream, CASE WHEN role = 'attached' THEN ftops_attached_job(stream) END, role, app_id, batch_id, batch_end,
       watermark_ms, input_watermark_ms
FROM (SELECT DISTINCT ON (stream) stream, role, app_id, batch_id, batch_end, watermark_ms, input_watermark_ms
      FROM ftops_stream_progress ORDER BY stream, batch_end DESC, batch_id DESC) newest;
