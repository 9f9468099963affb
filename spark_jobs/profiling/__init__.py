"""Checkpoint-interval profiling runs on real Spark: the profiling step of Chiron (paper 004, Sec. IV-A).

Modules: :mod:`~spark_jobs.profiling.vector` (the checkpoint vector, lineages),
:mod:`~spark_jobs.profiling.settings` (options and checks), :mod:`~spark_jobs.profiling.reports` (samples and
reports), :mod:`~spark_jobs.profiling.measures` (the definitions below, as pure functions),
:mod:`~spark_jobs.profiling.copies` (running copies), :mod:`~spark_jobs.profiling.profiles`,
:mod:`~spark_jobs.profiling.validation` and :mod:`~spark_jobs.profiling.bench` (the three commands),
:mod:`~spark_jobs.profiling.bench_report` (the benchmark's markdown and plots).

Problem: Chiron chooses a checkpoint interval from profiling runs: isolated copies of the job, one per
candidate interval, all reading the same stream, each measured for average and maximum ingress,
average end-to-end latency, recovery after injected failures and warm-up (Sec. IV-A; three failures
per run, Sec. V-A). :mod:`ft_core.checkpoint.tuning` plans from the resulting profiles document
(:mod:`ft_core.checkpoint.profiles`); this module produces it on Spark Structured Streaming and
validates a recommendation against a measured run.

**The checkpoint configuration is a vector** (:class:`CheckpointVector`). Spark has no single
checkpoint interval: offsets, commits and state deltas are written every micro-batch, so the
*trigger interval* is Chiron's CI and the profiled dimension; state snapshots every
``minDeltasForSnapshot`` deltas, the state-store provider and RocksDB changelog checkpointing change
what each commit and each restore costs, and are held fixed for one profiling run (they are recorded
in the document's description and the raw file). A checkpoint *pins* three settings in its offset log
(``offsets/<n>``, field ``conf``): ``spark.sql.shuffle.partitions``, the state-store provider and the
multiple-watermark policy. A job restarted from the same checkpoint keeps the pinned values whatever it
is started with, so a plan that changes one of them needs a new checkpoint lineage (in OSS Spark: a new
checkpoint folder and a replay of the input); :func:`lineage_check` says which, and can read the
pinned values from a running job's checkpoint (:func:`pinned_settings`). The trigger interval and
``minDeltasForSnapshot`` are not pinned: a restart on the same checkpoint applies them.

**Method.** One seeded input folder (:mod:`spark_jobs.pipeline.sample_input`) is fed in real time by a
thread that records when each file became available and the input watermark it carries (Spark's rule,
:class:`~spark_jobs.pipeline.sample_input.InputWatermark`). Every (interval, repetition) is a *copy*:
``spark_jobs.runtime.run_pipeline`` through ``spark-submit`` (:func:`spark_jobs.runtime.launch.launch_run`, own
process group) with its own output, checkpoint, metrics and event-log folders. By default one copy
runs at a time (``parallel`` = 1) and the rest are queued: Chiron runs isolated deployments side by side
on a cluster, and on one small machine side-by-side copies compete for its cores, which inflates restore
and warm-up times (issue 15: 27 s of restore profiled two at a time on two cores against 14.5 s alone),
and the model then predicts a slower recovery than the job has alone. Correcting for contention instead
would need a model of how restore, warm-up and ingress scale with the load, per job and machine, and
would itself need validating; running one copy at a time costs only wall time. Each copy records the
machine's load average (other programs compete too), and validation reruns the profile's conditions
(as many copies at once, the same restart delay) so that it checks the model, not a change of
conditions. Each copy:

1. runs until it is *steady*: three consecutive micro-batches (after its cold first one) whose lag
   (below) is within ``2 max(TI, d) + 2 d + file_s`` (TI the trigger interval, d the median batch
   duration): the closed output is then at most two triggers and two batches behind the input;
2. for each of ``failures`` failures: runs ``duration_s / (failures + 1)`` seconds of steady
   operation (at least three micro-batches), then **SIGKILLs the driver's process group near the end
   of a checkpoint interval** (Khaos): Spark's ``ProcessingTimeExecutor`` starts batches at wall-clock
   multiples of the interval, so the kill falls ``margin`` (10% of TI, 0.2-1 s) before the next
   trigger after the last committed batch, when everything read since that batch's start (about one
   TI of input) is uncommitted; a job whose batches overrun TI runs them back to back, and the kill
   falls ``margin`` before the running batch is expected to commit. After ``detection_timeout_s``
   (T, a setting: the supervisor's detection and restart delay) the same command is relaunched on
   the same checkpoint, and the copy must recover (below);
3. after a last steady period it is stopped between micro-batches, and its whole output is compared
   with the workload's Python reference over the final input (windows its last watermark closed):
   no window lost or duplicated across the restarts.

**Definitions** (wall-clock seconds; batches from the job's own progress events, written by
:class:`~spark_jobs.pipeline.metrics.TaskMetricsListener`: start, duration, rows, watermark):

- *lag* of a batch: its end minus the time the input that lets its watermark close a window was
  available (the first input file after which the input watermark reached the batch's watermark):
  how far behind the input the job's closed output is, the event-time form of Khaos' consumer lag.
- *average ingress* ``I_avg``: rows processed in the steady periods over their length.
- *maximum ingress* ``I_max``: the highest processing rate (rows / batch duration) among the catch-up
  batches after the restarts, the backlog after a failure being Spark's form of the paper's load test
  (a micro-batch's fixed cost makes larger batches faster, so this is the rate at the backlog the
  failures create, not an unbounded peak).
- *latency* of a window (windows excluded as Chiron does): the time the output file holding the
  window was written minus the time the input that closed it (event time ``window_end +
  watermark_s``) was available. The window's own length and the watermark delay are not latency;
  what remains is waiting for the trigger, the batch that reads the input, and the batch whose
  watermark emits the window. Only windows closed and written inside one steady period count;
  the average drops samples above the 99.9th percentile first (the paper's outlier filter).
- *recovery time* (TRT, what Chiron's heuristic predicts): from the kill until the lag is back at the
  pre-failure steady level (the largest lag of that steady period plus one input file, ``file_s``)
  for two micro-batches in a row; the end of the first of them. With a constant input rate, a lag
  back at its steady level means throughput is back at the input rate, so this is Khaos' "throughput
  and lag back to steady state".
- *restore time* ``R``: from the relaunch until the first micro-batch of the restarted job starts
  (JVM, Spark session, query restart from the offset and commit logs). The document's
  ``recovery_time_s`` is R (Chiron's R_avg), averaged over the copy's failures.
- *warm-up time* ``W``: how much longer the first micro-batch after the restart took than its rows
  need at ``I_max`` (state loaded from the checkpoint, code generation, class loading): the time the
  ingress ramp from 0 to full speed costs.
- *detection time* ``T``: the ``detection_timeout_s`` setting (kill to relaunch).
- *checkpoint cost* (optional ``checkpoint_duration_ms``): per steady batch, ``durationMs.walCommit +
  durationMs.commitOffsets + sum(stateOperators.commitTimeMs)`` from the progress events in the
  copy's Spark event log; the median.

Outputs: the profiles document (one ``repetitions`` entry per copy; the mean over its failures of
R, W and the measured recovery time, as the format's R_avg and ``total_recovery_time_s``) and, next to
it, ``<name>.raw.json`` with every sample (feed marks, batches, per-failure timings, latency samples,
output checks, load). :func:`validate_profiles` chooses the recovery-time variant whose model is closest
to the profiled recovery times (:mod:`ft_core.checkpoint.variant_choice`, unless one is given), plans with
:func:`ft_core.checkpoint.tuning.plan_checkpoint`, runs the recommended interval with failures, and
compares predicted with measured latency and recovery time (relative errors ``|p - m| / m``); the
prediction validates when the recovery error is within ``max_recovery_error`` (20%) and the output
equals the reference.
Everything a run starts is stopped whatever happens; a failure raises :class:`ProfilingError` naming
the copy and the step.
"""

import lazy_loader

# Public names load on first use: the CLI imports this package to register its commands, and every
# `ftops` start would otherwise pay for the whole profiler (and matplotlib, through bench_report).
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "bench": ["BenchConfig", "run_bench"],
        "bench_report": ["render_bench"],
        "profiles": ["run_profiling"],
        "settings": ["ProfileConfig", "ProfilingError", "ValidateConfig", "check_intervals"],
        "validation": ["validate_profiles"],
        "vector": ["CheckpointVector", "lineage_check", "pinned_settings"],
    },
)
