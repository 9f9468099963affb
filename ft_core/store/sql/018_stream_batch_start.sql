-- ftops history store, version 18: when each micro-batch started, beside when it ended (issue 33, item 3).
--
-- A fleet recovery measures each restarted job's restart delay, from its restart to its first micro-batch, and plans
-- the next recoveries with it. Measured to the first batch's *end*, it held that batch's work: after a restart the
-- first batch reads the whole backlog of the outage, which on a busy cluster took 90 s and more (the fleet-recovery
-- benchmark of 2026-11-30: restart delays of 91 s and 98 s), so the planner then counted the backlog twice (as restart,
-- and again as catch-up) and judged holding jobs down too costly. Drivers write the start (Spark's progress
-- `timestamp`); rows written before this version have none (NULL), and readers fall back to the end.
ALTER TABLE ftops_stream_progress ADD COLUMN batch_start timestamptz;
