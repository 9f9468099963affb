-- ftops history store, version 8: when the input behind a micro-batch's watermark arrived (issue 14, item 5).
--
-- A query is back after a failure when its event-time lag (now, less the arrival of the input that carried
-- its watermark) is near its steady lag again (paper 003, relative latency). The drivers of a staged
-- recovery's units know both ends: they read the input, so they write the arrival time beside each batch's
-- watermark, and QueriesRecoveredTrigger computes every query's lag from the store, not from the input folder.
-- NULL for drivers that do not write it (the job's primary and replica) and for batches without a watermark.
ALTER TABLE ftops_stream_progress ADD COLUMN watermark_arrived timestamptz;
