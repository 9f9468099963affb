-- ftops history store, version 5: predicted tentative accuracy (issue 15).
--
-- Output fidelity (the plan's objective) is a model; the predicted accuracy is measured: a recent
-- sample of the job's input replayed whole and restricted to the plan's tasks, scored with the
-- pipeline's accuracy function per window (ft_core.replication.predicted_accuracy). It is estimated
-- after the plan is stored (a task of ftops_profile_and_plan), so it is a column set later, not part
-- of the plan's payload (which, with the input hash, says whether two plans are the same plan).
-- accuracy_estimate keeps the spread: mean, stdev, min, max, windows, per-window scores, the sample.
ALTER TABLE ftops_plan ADD COLUMN predicted_accuracy double precision
    CHECK (predicted_accuracy >= 0 AND predicted_accuracy <= 1);
ALTER TABLE ftops_plan ADD COLUMN accuracy_estimate jsonb;
ALTER TABLE ftops_plan ADD COLUMN accuracy_estimated_at timestamptz;

-- A drill records its plan's predicted accuracy when it starts (like the predicted output fidelity).
ALTER TABLE ftops_drill ADD COLUMN predicted_accuracy double precision
    CHECK (predicted_accuracy >= 0 AND predicted_accuracy <= 1);

-- New columns go last: CREATE OR REPLACE VIEW may only add columns at the end.
CREATE OR REPLACE VIEW ftops_drill_results AS
SELECT j.name AS job, d.drill_id, d.started_at, d.status, d.predicted_output_fidelity, d.tentative_accuracy,
       abs(d.tentative_accuracy - d.predicted_output_fidelity) AS prediction_error,
       d.time_to_first_tentative_s, d.time_to_caught_up_s, d.lost_windows, d.duplicated_windows,
       d.output_equals_reference, d.predicted_accuracy,
       abs(d.tentative_accuracy - d.predicted_accuracy) AS accuracy_prediction_error
FROM ftops_drill d JOIN ftops_job j USING (job_id);
