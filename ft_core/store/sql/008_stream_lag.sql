-- ftops history store, version 8: how far behind its input a micro-batch left its stream (issue 14, item 5).
--
-- watermark_arrived: when the input behind the batch's watermark arrived. A query is back after a failure when
-- its event-time lag (now, less that arrival) is near its steady lag again (paper 003, relative latency). The
-- drivers of a staged recovery's units read the input, so they write it, and QueriesRecoveredTrigger computes
-- every query's lag from the store, not from the input folder.
-- input_watermark_ms: the input's watermark when the row was written (each file source's newest event time less
-- its delay, the minimum), counted by the driver with the backlog; with watermark_ms it gives the event-time
-- lag the drill's abort probe bounds, for a triggerer that does not see the input folder.
-- Both NULL for drivers that do not write them and for sources that are not folders of files.
ALTER TABLE ftops_stream_progress ADD COLUMN watermark_arrived timestamptz;
ALTER TABLE ftops_stream_progress ADD COLUMN input_watermark_ms bigint;
