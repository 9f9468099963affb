"""Discovery's stage deduplication and rate logic on recorded REST answers of a real job.

The recordings in tests/data/discovery/ are what ``ftops profile topology --last-batches 4
--save-responses`` read from tests/spark/plain_streaming_job.py running on PySpark 4.3 (``local[2]``, 3
shuffle partitions, rate source at 20 rows/s): ``broadcast-join`` (broadcast stream-static join),
``shuffle-join`` (sort-merge stream-static join), ``stream-join`` (stream-stream join), and
``file-source-join`` (``--input``: six JSON files of 40 rows written 3 s apart, then none; Spark broadcast
the small file batches itself and planned the last, input-less batch with an empty local relation).
No Spark runs here.
"""

from __future__ import annotations

import pytest

from ft_core.errors import ExternalError, InputError
from ft_core.replication.planners import plan_replication
from ft_core.topology.document import parse_topology
from ft_core.topology.task_graph import build_task_graph
from spark_jobs.discovery.measured_topology import discover
from spark_jobs.discovery.micro_batches import query_batches, spark_time_ms, streaming_batches
from spark_jobs.discovery.rest_client import ApplicationApi, RecordedRestApi, select_application
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "discovery"
VARIANTS = ("broadcast-join", "shuffle-join", "stream-join")
RATE_SOURCE_ROWS_PER_S = 20  # the recorded job's rate source (the stream-stream join's second one: 5)


def recorded(variant: str) -> RecordedRestApi:
    return RecordedRestApi.load(DATA / f"{variant}.json.gz")


def shape(found) -> tuple:
    doc = found.topology
    return ([(o["name"], o["parallelism"], o["input_model"]) for o in doc["operators"]],
            sorted((s["from"], s["to"], s["partitioning"]) for s in doc["streams"]))


def executions(api: RecordedRestApi) -> list[dict]:
    return ApplicationApi(api, select_application(api, None)).executions()


@pytest.mark.parametrize("variant", VARIANTS)
def test_stages_of_every_micro_batch_are_one_operator_each_not_one_per_batch(variant):
    four = discover(recorded(variant), last_batches=4)
    assert len(four.batches) == 4 and len(four.operators) == 4
    for op in four.operators:  # a new stage id every batch, one operator
        assert len(op.stage_ids) == 4, (op.name, op.stage_ids)
    stages = [s for op in four.operators for s in op.stage_ids]
    fused = {s for op in four.operators if op.kind == "source" for s in op.stage_ids} & {
        s for op in four.operators if op.kind == "join" for s in op.stage_ids}
    assert len(set(stages)) == len(stages) - len(fused)  # only a broadcast join shares its source's stage
    assert bool(fused) == (variant == "broadcast-join")
    for n in (1, 2, 3):  # fewer batches read, the same operators and links
        assert shape(discover(recorded(variant), last_batches=n)) == shape(four)


def test_operators_follow_the_plan_not_the_order_of_stage_ids():
    """Spark numbers sibling stages in no fixed order: in the recorded sort-merge join the static scan's
    stage comes before the source's in one batch and after it in the next."""
    found = discover(recorded("shuffle-join"), last_batches=4)
    ops = {op.name: op for op in found.operators}
    before = [scan < source for scan, source in zip(ops["scan"].stage_ids, ops["source"].stage_ids)]
    assert True in before and False in before
    assert ops["join"].stage_ids == [max(s, c) + 1 for s, c in zip(ops["scan"].stage_ids, ops["source"].stage_ids)]


@pytest.mark.parametrize("variant, streams", [
    ("broadcast-join", [("join", "aggregate", "full"), ("scan", "join", "full"), ("source", "join", "one_to_one")]),
    ("shuffle-join", [("join", "aggregate", "full"), ("scan", "join", "full"), ("source", "join", "full")]),
    ("stream-join", [("join", "aggregate", "full"), ("source_1", "join", "full"), ("source_2", "join", "full")]),
])
def test_links_follow_shuffles_and_narrow_join_inputs_and_joins_have_several_inputs(variant, streams):
    found = discover(recorded(variant), last_batches=4)
    ops, links = shape(found)
    assert links == streams
    models = {name: model for name, _, model in ops}
    assert models.pop("join") == "correlated" and set(models.values()) == {"independent"}
    parallelism = {name: p for name, p, _ in ops}
    assert parallelism["aggregate"] == 3  # spark.sql.shuffle.partitions
    assert all(parallelism[n] == 2 for n in parallelism if n.startswith(("source", "scan")))  # numPartitions=2, 2 cores
    assert parallelism["join"] == (2 if variant == "broadcast-join" else 3)  # in the source's stage, or after a shuffle


def _span_s(api: RecordedRestApi, first: int, last: int) -> float:
    """Seconds from the start of the batch before ``first`` to the start of ``last``, from the raw list."""
    starts: dict[int, int] = {}
    for e in executions(api):
        if "\nbatch = " in e["description"]:
            batch = int(e["description"].rsplit("= ", 1)[1])
            starts[batch] = min(starts.get(batch, 1 << 62), spark_time_ms(e["submissionTime"]))
    return (starts[last] - starts[first - 1]) / 1000


@pytest.mark.parametrize("variant", VARIANTS)
def test_task_rates_are_records_read_per_second_over_the_last_batches(variant):
    api = recorded(variant)
    found = discover(api, last_batches=4)
    span = _span_s(api, found.batches[0], found.batches[-1])
    assert found.span_s == pytest.approx(span, abs=1e-3)
    app = select_application(api, None).path
    for op in found.operators:
        if op.kind not in ("source", "join", "aggregate"):
            continue  # read nothing Spark counts: see the fallback test
        for k in range(op.parallelism):
            records = 0
            for stage in op.stage_ids:
                for task in api.get(f"{app}/stages/{stage}/0/taskList?offset=0&length={op.parallelism}"):
                    if task["index"] == k and task["status"] == "SUCCESS":
                        metrics = task["taskMetrics"]
                        records += metrics["inputMetrics"]["recordsRead"] + metrics["shuffleReadMetrics"]["recordsRead"]
            assert found.topology["tasks"][f"{op.name}[{k}]"]["rate"] == pytest.approx(records / span, abs=1e-3)
    sources = sorted(sum(found.topology["tasks"][f"{op.name}[{k}]"]["rate"] for k in range(op.parallelism))
                     for op in found.operators if op.kind == "source")
    expected = [5, 20] if variant == "stream-join" else [RATE_SOURCE_ROWS_PER_S]
    assert sources == pytest.approx(expected, rel=0.2)  # what the rate sources generate, measured from outside


@pytest.mark.parametrize("variant", ("broadcast-join", "shuffle-join"))
def test_a_static_scan_that_reads_nothing_spark_counts_gets_its_rows(variant):
    """The static table (8 rows, re-read every micro-batch) is a scan of an in-memory RDD: its tasks read
    no input Spark counts, so its rate is what it wrote (the shuffle) or, behind a broadcast, its rows."""
    found = discover(recorded(variant), last_batches=4)
    scan = next(op for op in found.operators if op.kind == "scan")
    total = sum(found.topology["tasks"][f"scan[{k}]"]["rate"] for k in range(scan.parallelism))
    assert total == pytest.approx(8 * len(found.batches) / found.span_s, abs=2e-3)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_document_is_valid_plannable_and_every_task_has_its_host(variant):
    found = discover(recorded(variant), last_batches=4)
    graph = build_task_graph(parse_topology(found.topology))
    assert set(found.hosts) == set(graph.task_ids) and set(found.hosts.values()) == {"localhost"}
    plan = plan_replication(graph, 6, "exact")
    assert plan.optimal and len(plan.tasks) == 6 and 0 < plan.output_fidelity < 1
    assert plan_replication(graph, graph.n, "exact").output_fidelity == pytest.approx(1.0)


def test_an_application_without_streaming_query_or_completed_batch_is_refused():
    everything = executions(recorded("shuffle-join"))
    batch_job = [e for e in everything if "batch = " not in e["description"]]
    assert batch_job and batch_job[0]["description"].startswith("collect at")  # the job's phase before streaming
    with pytest.raises(InputError, match="is not a Structured Streaming application: it ran 1 SQL execution"):
        query_batches(batch_job, "local-1", None)
    last = max(b.batch_id for b in streaming_batches(everything))
    running = [e for e in everything if e["description"].endswith(f"batch = {last}")]
    assert {e["status"] for e in running} == {"RUNNING"}  # recorded while its last batch ran
    with pytest.raises(InputError, match="no completed micro-batch yet"):
        query_batches(batch_job + running, "local-1", None)
    with pytest.raises(InputError, match="--query: application local-1 has no streaming query 'other'"):
        query_batches(everything, "local-1", "other")


def test_a_recording_answers_only_what_was_read():
    api = recorded("broadcast-join")
    with pytest.raises(ExternalError, match="not in the recording"):
        api.get("/applications/none/jobs")
    with pytest.raises(InputError, match="--app-id: no application 'app-0'"):
        discover(api, app_id="app-0")


def test_a_batch_planned_without_input_does_not_make_operators_and_a_file_scan_takes_its_widest_batch():
    api = recorded("file-source-join")
    app = select_application(api, None).path
    last = discover(api, last_batches=1)
    assert last.batches == [3]
    nodes = {n["nodeName"] for e in executions(api) if e["description"].endswith("batch = 3") and e["successJobIds"]
             for n in api.get(f"{app}/sql/{e['id']}?details=true&planDescription=false")["nodes"]}
    assert "LocalTableScan" in nodes and "Scan json" not in nodes  # the last batch read no file
    files = next(op for op in last.operators if "Scan json" in op.plan_nodes)
    assert [op.name for op in last.operators] == ["scan_1", files.name, "join", "aggregate"]
    assert files.parallelism == 1 and files.stage_ids == [9]  # from batch 2, the newest that ran every stage
    assert last.topology["tasks"][f"{files.name}[0]"]["rate"] == 0.0  # no file arrived in batch 3
    join = next(op for op in last.operators if op.kind == "join")
    assert sorted(join.inputs) == [("scan_1", "one_to_one"), (files.name, "full")]  # Spark broadcast the stream side
    four = discover(api, last_batches=4)
    assert shape(four)[1] == shape(last)[1]
    assert next(op for op in four.operators if op.name == files.name).parallelism == 2  # 1, 2 and 1 files' partitions
    total = sum(four.topology["tasks"][f"{files.name}[{k}]"]["rate"] for k in range(2))
    assert total == pytest.approx((160 + 40 + 0) / four.span_s, abs=2e-3)  # batches 1..3 read 4, 1 and 0 files
