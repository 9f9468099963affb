"""The predicted tentative accuracy on real Spark (issue 15): a replay of a seeded sample through the
pipeline, whole and restricted to a plan, scored per complete window. A full plan predicts 1.0, an
empty plan 0.0, a partial plan exactly what the plain-Python query restricted to the same key groups
scores, and a drill with that plan then measures an accuracy within the predicted spread."""

from __future__ import annotations

import json

import pytest

from spark_jobs.accuracy.replay import complete_windows, replay_estimates
from spark_jobs.accuracy.replay_input import seeded_sample
from spark_jobs.drills.documents import DrillConfig
from spark_jobs.drills.local import run_drill
from spark_jobs.pipeline.accuracy import TopKOverlap
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.sample_input import read_records
from spark_jobs.workloads.topk import python_reference
from tests.conftest import test_port

# The drill tests' small topk: O1 x2 -> O2 -> O3, 2-second windows, 50 records/s; top-10 of 40 pages.
PARAMS = ["rate=50", "window_s=2", "watermark_s=1", "n_pages=40", "p1=2"]
HALF = ["O1[0]", "O2[0]", "O3[0]"]  # one of the two server groups: 3 of 4 tasks, one of two MC-trees
BASE_DRILL = test_port(12000)  # a block of its own: a drill uses base .. base + 299


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    workload = load_workload("topk", PARAMS)
    return workload, seeded_sample(workload, tmp_path_factory.mktemp("replay") / "input", seconds=40, first=6)


def test_full_plan_predicts_one_and_empty_plan_zero_on_complete_windows(spark, sample):
    workload, s = sample
    full, empty = replay_estimates(spark, workload, s.input_dir, [workload.task_ids(), []], s.span_ms, s.description)
    assert full.mean == 1.0 and full.stdev == 0.0 and full.tasks == sorted(workload.task_ids())
    assert empty.mean == 0.0 and empty.max == 0.0
    # 40 s of tumbling 2 s windows from file 6 (event second 6): exactly the 20 windows inside the sample
    assert full.windows == empty.windows == 20
    assert s.span_ms == (workload.start_ms + 6000, workload.start_ms + 46000)


def test_partial_plan_scores_what_the_restricted_python_query_scores(spark, sample):
    workload, s = sample
    (half,) = replay_estimates(spark, workload, s.input_dir, [HALF], s.span_ms, s.description)
    records = read_records(workload, s.input_dir, "requests")
    accurate = python_reference(workload.params, records)
    tentative = python_reference(workload.params, records, frozenset(HALF))
    windows = complete_windows(accurate, s.span_ms)
    expected = TopKOverlap("page")(tentative, accurate, windows)
    assert half.per_window == pytest.approx([expected[w] for w in sorted(expected)])
    assert 0.0 < half.mean < 1.0 and half.windows == 20 and half.min < half.max


def test_partial_windows_at_the_sample_ends_are_not_scored():
    rows = [{"window_start": s, "window_end": s + 4000} for s in (-2000, 0, 2000, 4000, 6000)]
    assert complete_windows(rows, (0, 8000)) == [(0, 4000), (2000, 6000), (4000, 8000)]
    assert complete_windows(rows, None) == []


def test_a_half_plan_drill_measures_within_the_predicted_spread(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"tasks": HALF}))
    report = run_drill(DrillConfig(pipeline="topk", params=PARAMS, plan=plan, primary_workers=1, new_capacity_after_s=5,
                                   port_base=BASE_DRILL, timeout_s=300, work_dir=tmp_path / "drill", accuracy_sample_s=60))
    est = report.predicted_accuracy_estimate
    assert est is not None and est.tasks == HALF and report.predicted_accuracy == est.mean
    assert est.windows == 30 and 0.0 < est.mean < 1.0  # 60 s of 2 s windows, from an input range the drill never reads
    assert "from file 100000" in est.sample
    assert report.tentative_accuracy is not None and len(report.tentative_accuracy_per_window) >= 1
    assert est.covers(report.tentative_accuracy), (est.spread(), report.tentative_accuracy)
    assert report.output_equals_reference
