-- ftops history store, version 16: a drill's forecast of when its primary is caught up (issue 38, item 2).
--
-- Before its fault a drill forecasts, from the job's batches and its earlier drills, when the primary will be caught
-- up (spark_jobs.drills.catch_up); the forecast is kept beside the measurement, so the error of every drill is one
-- query away. The forecast's inputs and their sources stay in the report (report->'caught_up_forecast').
ALTER TABLE ftops_drill ADD COLUMN predicted_caught_up_s double precision;

-- New columns go last: CREATE OR REPLACE VIEW may only add columns at the end.
CREATE OR REPLACE VIEW ftops_drill_results AS
SELECT j.name AS job, d.drill_id, d.started_at, d.status, d.predicted_output_fidelity, d.tentative_accuracy,
       abs(d.tentative_accuracy - d.predicted_output_fidelity) AS prediction_error,
       d.time_to_first_tentative_s, d.time_to_caught_up_s, d.lost_windows, d.duplicated_windows,
       d.output_equals_reference, d.predicted_accuracy,
       abs(d.tentative_accuracy - d.predicted_accuracy) AS accuracy_prediction_error,
       d.predicted_caught_up_s,
       (d.predicted_caught_up_s - d.time_to_caught_up_s) / nullif(d.time_to_caught_up_s, 0) AS caught_up_prediction_error
FROM ftops_drill d JOIN ftops_job j USING (job_id);
