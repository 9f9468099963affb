-- ftops history store, version 17: the fleet recoveries still running, found without a scan (issue 33, item 3).
--
-- The safety net records a fleet recovery whose holder died as failed (spark_jobs.fleet_recovery.runs); it looks at
-- the running ones on every pass, a handful among a fleet's years of finished runs.
CREATE INDEX ftops_fleet_recovery_running ON ftops_fleet_recovery (run_id) WHERE status = 'running';
