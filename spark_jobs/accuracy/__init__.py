"""Predicted tentative accuracy on Spark (issue 15): replay an input sample through a pipeline, whole
and restricted to replication plans, and score the restricted output with the pipeline's accuracy.

- :mod:`.replay_input`: the sample to replay (the job's recent input files, or a pipeline's seeded
  :class:`~spark_jobs.pipeline.SampleInput`) and the event-time span whose windows it closes;
- :mod:`.replay`: the Spark side: one application, the whole pipeline once, every plan after it;
- :mod:`.estimator`: :func:`~.estimator.estimate_accuracy`, the replay submitted locally (never on
  the job's cluster cores) and read back as :class:`~ft_core.replication.predicted_accuracy.AccuracyEstimate`;
- :mod:`.objective`: ``--objective accuracy``: candidate plans from the planners, scored, the best taken.
"""
