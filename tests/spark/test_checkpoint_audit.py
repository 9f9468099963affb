"""The checkpoint audit (issue 34, item 3): on checkpoints that real queries wrote (PySpark in-process, local[2];
queries written without ftops), every check holds; on tampered copies, the check named for the tampering
fails and names the batch. Three queries: a file source with an event-time windowed aggregate and a file
sink (available-now, run twice on one checkpoint), a rate source with ``foreachBatch`` stopped after some
batches (its old batches purged), and a stream-static join whose ``foreachBatch`` fails in batch 2, then
restarts from the checkpoint and re-runs that batch."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from ft_core.errors import InputError
from spark_jobs.attach.checkpoint_audit import audit_checkpoint


def _failed(audit) -> dict[str, list[int]]:
    return {c.name: c.offending_batches for c in audit.failed()}


def _copy(ck: Path, tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(ck, tmp_path / name))  # copy2: file times kept


def _batches(ck: Path, log: str) -> list[int]:
    return sorted(int(p.name) for p in (ck / log).iterdir() if p.name.isdigit())


def _edit_offset(ck: Path, batch: int, edit, source: int = 0) -> None:
    """Rewrite one source's offset in ``offsets/<batch>`` (line 3 + source) with ``edit(parsed) -> new``."""
    path = ck / "offsets" / str(batch)
    lines = path.read_text().split("\n")
    lines[2 + source] = json.dumps(edit(json.loads(lines[2 + source])), separators=(",", ":"))
    path.write_text("\n".join(lines))


def _wait(predicate, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s:.0f} s for {what}")
        time.sleep(0.2)


def _stop_between_batches(query) -> None:
    # stopping inside a foreachBatch call logs a harmless StackOverflowError (stack notes 6.1): wait for a gap
    deadline = time.monotonic() + 20
    while query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()


@pytest.fixture(scope="module")
def session(spark):
    """The module's Spark session with 2 shuffle partitions (the aggregate's state: 2 stores, not 200)."""
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    return spark


# -- a file source, an event-time windowed aggregate, a file sink: available-now, twice on one checkpoint ---

def _write_events(folder: Path, first: int, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(first, first + count):
        rows = [{"ts": f"2024-01-01T00:{f // 6:02d}:{(f % 6) * 10 + j:02d}", "k": j % 3} for j in range(10)]
        (folder / f"events-{f:03d}.json").write_text("\n".join(json.dumps(r) for r in rows))


def _run_windowed(spark, root: Path) -> None:
    from pyspark.sql import functions as F

    events = (spark.readStream.schema("ts timestamp, k int").option("maxFilesPerTrigger", 1)
              .json(str(root / "in")))
    counts = events.withWatermark("ts", "10 seconds").groupBy(F.window("ts", "10 seconds"), "k").count()
    query = (counts.writeStream.format("json").outputMode("append").option("path", str(root / "out"))
             .option("checkpointLocation", str(root / "ck")).trigger(availableNow=True).start())
    query.awaitTermination()


@pytest.fixture(scope="module")
def windowed(session, tmp_path_factory):
    """The file-source query run over 4 files, then again over 3 more: (root, first run's audit, restart time)."""
    spark = session
    # the file source's log compacts every 3 ids and deletes what it compacted: the audit reads .compact files
    spark.conf.set("spark.sql.streaming.fileSource.log.compactInterval", "3")
    spark.conf.set("spark.sql.streaming.fileSource.log.cleanupDelay", "0")
    root = tmp_path_factory.mktemp("windowed")
    _write_events(root / "in", 0, 4)
    _run_windowed(spark, root)
    first = audit_checkpoint(root / "ck")
    _write_events(root / "in", 4, 3)
    restarted = time.time()
    _run_windowed(spark, root)
    return root, first, restarted


def test_a_file_source_aggregate_holds_over_two_runs_and_counts_their_batches(windowed):
    root, first, restarted = windowed
    assert first.held and first.files == 4 and first.in_flight_batch is None
    assert first.first_batch == 0 and first.last_batch >= 3 and first.committed_batches == first.batches_audited
    both = audit_checkpoint(root / "ck", restarted_at=[restarted])
    assert both.held, both.failed()
    assert both.batches_audited == len(_batches(root / "ck", "offsets")) > first.batches_audited
    assert both.files == 7 and both.sources[0].kind == "file" and both.rerun_batches == []  # a clean stop re-runs none
    assert [b.files for b in both.batches if b.new_input] == [1] * 7  # maxFilesPerTrigger 1
    assert both.batches_without_new_input == both.batches_audited - 7  # batches run to move the watermark on
    assert any(p.name.endswith(".compact") for p in (root / "ck" / "sources" / "0").iterdir())
    assert "planned with the watermark the batch before committed" in next(c.observed for c in both.checks
                                                                   if c.name == "planned_after_commit")
    second = audit_checkpoint(root / "ck", since_batch=first.last_batch)  # the second run's window
    assert second.held and second.first_batch == first.last_batch + 1 and second.files == 3


def test_a_file_offset_past_the_sources_log_is_a_skip(windowed, tmp_path):
    ck = _copy(windowed[0] / "ck", tmp_path, "skip")
    last = _batches(ck, "offsets")[-1]
    _edit_offset(ck, last, lambda o: {"logOffset": o["logOffset"] + 2})
    assert _failed(audit_checkpoint(ck)) == {"nothing_skipped": [last]}


def test_a_file_offset_that_goes_back_is_caught(windowed, tmp_path):
    ck = _copy(windowed[0] / "ck", tmp_path, "back")
    reading = [b.batch_id for b in audit_checkpoint(ck).batches if b.new_input]
    batch = reading[3]
    _edit_offset(ck, batch, lambda o: {"logOffset": o["logOffset"] - 2})
    assert _failed(audit_checkpoint(ck))["offsets_never_back"] == [batch]


def test_a_file_listed_for_two_batches_is_read_twice(windowed, tmp_path):
    ck = _copy(windowed[0] / "ck", tmp_path, "twice")
    reader = [b.batch_id for b in audit_checkpoint(ck).batches if b.new_input][-1]  # read the newest log id
    log = ck / "sources" / "0"
    newest = max((p for p in log.iterdir() if p.name[0].isdigit()), key=lambda p: int(p.name.split(".")[0]))
    with newest.open("a") as fh:  # a plain entry or a compaction (whose lines name their log id)
        fh.write("\n" + json.dumps({"path": _first_listed(log), "timestamp": 0,
                                    "batchId": int(newest.name.split(".")[0])}))
    assert _failed(audit_checkpoint(ck)) == {"no_file_read_twice": [reader]}


def _first_listed(log: Path) -> str:
    for path in sorted((p for p in log.iterdir() if p.name[0].isdigit()), key=lambda p: int(p.name.split(".")[0])):
        lines = [line for line in path.read_text().split("\n")[1:] if line.strip()]
        if lines:
            return json.loads(lines[0])["path"]
    raise AssertionError("no file in the source's log")


def test_a_commit_swapped_in_breaks_the_watermark_chain(windowed, tmp_path):
    ck = _copy(windowed[0] / "ck", tmp_path, "swapped")
    batches = _batches(ck, "commits")
    marks = {b: json.loads((ck / "commits" / str(b)).read_text().split("\n")[1])["nextBatchWatermarkMs"]
             for b in batches}
    a = next(b for b in batches[:-2] if marks[b] != marks[batches[-2]])  # a commit with another watermark
    shutil.copyfile(ck / "commits" / str(batches[-2]), ck / "commits" / str(a))
    assert _failed(audit_checkpoint(ck)) == {"planned_after_commit": [a + 1]}


# -- a rate source with foreachBatch, stopped after some batches; only the newest 3 batches retained -------

def _audited_while(ck: Path, enough, live: list) -> bool:
    """Audit the running query's checkpoint (as a drill does) and say whether it has ``enough`` batches."""
    if (ck / "offsets").is_dir():
        live.append(audit_checkpoint(ck))
    return (ck / "commits").is_dir() and enough(_batches(ck, "commits"))


@pytest.fixture(scope="module")
def rate_run(session, tmp_path_factory):
    """A rate source with foreachBatch, 7 batches, the newest 3 retained: (checkpoint, audits while it ran)."""
    spark = session
    ck = tmp_path_factory.mktemp("rate") / "ck"
    seen: list[tuple[int, int]] = []
    live: list = []
    spark.conf.set("spark.sql.streaming.minBatchesToRetain", "3")
    try:
        query = (spark.readStream.format("rate").option("rowsPerSecond", 20).load().writeStream
                 .foreachBatch(lambda df, batch: seen.append((batch, df.count())))
                 .option("checkpointLocation", str(ck)).trigger(processingTime="500 milliseconds").start())
        try:
            _wait(lambda: _audited_while(ck, lambda commits: len(commits) >= 3 and max(commits) >= 6, live),
                  "7 committed batches of the rate query")
        finally:
            _stop_between_batches(query)
    finally:
        spark.conf.unset("spark.sql.streaming.minBatchesToRetain")
    return ck, live


@pytest.fixture(scope="module")
def rate_checkpoint(rate_run):
    return rate_run[0]


def test_a_rate_source_with_foreach_batch_holds_with_its_old_batches_purged(rate_run):
    rate_checkpoint, live = rate_run
    assert len(live) >= 10 and all(a.held for a in live), [a.failed() for a in live if not a.held]  # while it ran
    assert len({a.last_batch for a in live}) >= 5 and any(a.in_flight_batch is not None for a in live)
    audit = audit_checkpoint(rate_checkpoint)
    assert audit.held, audit.failed()
    assert audit.first_retained_batch >= 3 and audit.first_batch == audit.first_retained_batch  # purged before it
    assert audit.sources[0].kind == "rate" and audit.records is None  # rowsPerSecond is not in the checkpoint
    assert audit.batches_audited == len(_batches(rate_checkpoint, "offsets"))
    window = audit_checkpoint(rate_checkpoint, since_batch=audit.first_batch)
    assert window.held and window.batches_audited == audit.batches_audited - 1
    purged = audit_checkpoint(rate_checkpoint, since_batch=0)
    assert _failed(purged) == {"window_retained": list(range(1, audit.first_retained_batch))}


def test_a_commit_removed_in_the_middle_is_a_gap(rate_checkpoint, tmp_path):
    ck = _copy(rate_checkpoint, tmp_path, "gap")
    middle = _batches(ck, "commits")[1]
    (ck / "commits" / str(middle)).unlink()
    assert _failed(audit_checkpoint(ck)) == {"commits_contiguous": [middle], "only_last_uncommitted": [middle]}


def test_an_offsets_entry_removed_is_a_gap_and_a_commit_without_its_plan(rate_checkpoint, tmp_path):
    ck = _copy(rate_checkpoint, tmp_path, "no-offsets")
    middle = _batches(ck, "commits")[1]
    (ck / "offsets" / str(middle)).unlink()
    assert _failed(audit_checkpoint(ck)) == {"offsets_contiguous": [middle], "commits_have_offsets": [middle]}


def test_a_rate_offset_ahead_of_the_clock_is_a_skip_and_one_going_back_is_caught(rate_checkpoint, tmp_path):
    ahead = _copy(rate_checkpoint, tmp_path, "ahead")
    last = _batches(ahead, "offsets")[-1]
    _edit_offset(ahead, last, lambda seconds: seconds + 600)
    assert _failed(audit_checkpoint(ahead)) == {"nothing_skipped": [last]}
    back = _copy(rate_checkpoint, tmp_path, "back")
    batches = _batches(back, "offsets")
    previous = json.loads((back / "offsets" / str(batches[1])).read_text().split("\n")[2])
    _edit_offset(back, batches[2], lambda seconds: previous - 1)
    assert _failed(audit_checkpoint(back)) == {"offsets_never_back": [batches[2]]}


def test_a_batch_committed_twice_is_two_files_for_one_id(rate_checkpoint, tmp_path):
    ck = _copy(rate_checkpoint, tmp_path, "twice")
    batch = _batches(ck, "commits")[1]
    shutil.copyfile(ck / "commits" / str(batch), ck / "commits" / f"0{batch}")
    (ck / "commits" / f".{batch}.0b7e7a52.tmp").write_text("v1\n{}")  # a write never renamed: not a batch file
    audit = audit_checkpoint(ck)
    assert _failed(audit) == {"no_batch_written_twice": [batch]}
    assert f"commits/0{batch} and commits/{batch}" in audit.failed()[0].observed


def test_the_last_batch_in_flight_holds(rate_checkpoint, tmp_path):
    ck = _copy(rate_checkpoint, tmp_path, "in-flight")
    last = _batches(ck, "offsets")[-1]
    (ck / "commits" / str(last)).unlink(missing_ok=True)
    audit = audit_checkpoint(ck)
    assert audit.held and audit.in_flight_batch == last and not audit.batches[-1].committed


def test_bad_input_names_the_path_and_the_problem(rate_checkpoint, tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        audit_checkpoint(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="is not a Structured Streaming checkpoint: it has no offsets/"):
        audit_checkpoint(tmp_path / "empty")
    ck = _copy(rate_checkpoint, tmp_path, "garbled")
    last = _batches(ck, "offsets")[-1]
    (ck / "offsets" / str(last)).write_text("hello\n{}")
    with pytest.raises(InputError, match=rf"offsets entry '.*/offsets/{last}': the first line is 'hello'"):
        audit_checkpoint(ck)
    (ck / "offsets" / str(last)).write_text('v1\n{"batchWatermarkMs":0}\n{"cut')
    with pytest.raises(InputError, match=rf"offsets entry '.*/offsets/{last}' line 3 is not valid JSON"):
        audit_checkpoint(ck)
    (ck / "offsets" / str(last)).write_text('v7\n{}\n0')
    with pytest.raises(InputError, match="log version v7; this audit reads v1-v2"):
        audit_checkpoint(ck)
    with pytest.raises(InputError, match="since_batch"):
        audit_checkpoint(rate_checkpoint, since_batch=-3)


def test_the_command_exits_0_when_held_1_when_not_and_2_on_bad_input(rate_checkpoint, tmp_path, cli):
    held = cli("checkpoint", "audit", rate_checkpoint, "--json")
    assert held.code == 0 and held.json()["held"] and held.json() == audit_checkpoint(rate_checkpoint).model_dump(
        mode="json")
    ck = _copy(rate_checkpoint, tmp_path, "gap")
    middle = _batches(ck, "commits")[1]
    (ck / "commits" / str(middle)).unlink()
    broken = cli("checkpoint", "audit", ck)
    assert broken.code == 1 and "NOT held: 2 of 10 checks failed" in broken.out
    assert f"commits_contiguous      NO    {middle}" in broken.out
    bad = cli("checkpoint", "audit", tmp_path / "nowhere")
    assert bad.code == 2 and bad.err.strip() == f"ftops: error: checkpoint {str(tmp_path / 'nowhere')!r} does not exist"


# -- a stream-static join, foreachBatch failing in batch 2, restarted from the checkpoint -------------------

ROWS_PER_BATCH = 10


def _start_join(spark, root: Path, fail_in: int | None):
    from pyspark.sql import functions as F

    names = spark.createDataFrame([(0, "zero"), (1, "one"), (2, "two")], "k int, name string")
    stream = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH).load()
              .withColumn("k", (F.col("value") % 3).cast("int")).join(names, "k"))

    def write(df, batch: int) -> None:
        if batch == fail_in:
            raise RuntimeError(f"injected failure in batch {batch}")
        df.write.mode("overwrite").json(str(root / "out" / str(batch)))  # idempotent per batch id

    return (stream.writeStream.foreachBatch(write).option("checkpointLocation", str(root / "ck"))
            .trigger(processingTime="1 second").start())  # idle between batches: stopped in a gap


def test_a_join_restarted_after_a_failed_batch_re_runs_it_and_holds(session, tmp_path):
    spark = session
    from pyspark.errors import StreamingQueryException

    query = _start_join(spark, tmp_path, fail_in=2)
    with pytest.raises(StreamingQueryException, match="injected failure in batch 2"):
        query.awaitTermination(120)
    crashed = audit_checkpoint(tmp_path / "ck")
    assert crashed.held and crashed.in_flight_batch == 2 and crashed.committed_batches == 2

    restarted, live = time.time(), []
    query = _start_join(spark, tmp_path, fail_in=None)
    try:
        _wait(lambda: _audited_while(tmp_path / "ck", lambda commits: len(commits) >= 6, live),
              "6 committed batches after the restart")
    finally:
        _stop_between_batches(query)
    audit = audit_checkpoint(tmp_path / "ck", restarted_at=[restarted])
    assert audit.held, audit.failed()
    assert live and all(a.held for a in live), [a.failed() for a in live if not a.held]  # while it ran
    assert audit.sources[0].kind == "rate-micro-batch" and audit.first_batch == 0
    committed = [b for b in audit.batches if b.committed]
    assert [b.records for b in committed] == [ROWS_PER_BATCH] * len(committed) and len(committed) >= 6
    assert audit.rerun_batches == [2] and audit.records_reprocessed == ROWS_PER_BATCH
    written = {int(p.name) for p in (tmp_path / "out").iterdir()}  # a batch in flight may have begun its output
    assert {b.batch_id for b in committed} <= written <= {b.batch_id for b in committed} | {audit.in_flight_batch}
    assert audit_checkpoint(tmp_path / "ck").rerun_batches is None  # without the restart time: not visible

    # an edited row offset breaks the source's fixed step: the batch and the one after it read other ranges
    ck = _copy(tmp_path / "ck", tmp_path, "moved")
    _edit_offset(ck, 3, lambda o: {**o, "offset": o["offset"] + 4})
    assert _failed(audit_checkpoint(ck)) == {"nothing_skipped": [3, 4]}
