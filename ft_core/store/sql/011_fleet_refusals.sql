-- ftops history store, version 11: why a scheduled run could not operate a due job (issue 33).
--
-- A due job whose drill cannot start (its primary stopped, its cluster unreachable, no executor in a domain) is
-- skipped by the scheduled run, not failed: one stopped job must not fail every hourly run of the fleet. The
-- refusal is kept here so `ftops job status` and `ftops job fleet` say why the job's drill did not run; it stands
-- until the operation next starts (a newer drill or tuning start hides it).
ALTER TABLE ftops_fleet_turn ADD COLUMN refused_at timestamptz;
ALTER TABLE ftops_fleet_turn ADD COLUMN refused_reason text CHECK (length(refused_reason) <= 2000);
