"""Predicted tentative accuracy in the PostgreSQL history store (issue 15), for real: set on a plan
after it is stored, copied by a drill when it starts, compared in ftops_drill_results."""

from __future__ import annotations

import pytest

from ft_core.errors import InputError
from ft_core.replication.predicted_accuracy import summarize
from ft_core.store.migrations import migrations
from tests.core.test_history_store import _replication_plan, _report, _store
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


def _estimate(store, plan_id: int, scores: list[float]) -> dict:
    tasks = store.plan(plan_id)["payload"]["tasks"]
    return summarize(tasks, scores, "seeded sample input: 4 windows").model_dump(mode="json")


def test_migration_5_adds_the_columns(pg_conn):
    store = _store(pg_conn)
    assert [v for v, _, _ in migrations()][-1] >= 5
    plan_id = _replication_plan(store)
    assert store.predicted_accuracy(plan_id) == {"predicted_accuracy": None, "accuracy_estimate": None,
                                                 "accuracy_estimated_at": None}


def test_an_estimate_is_stored_on_its_plan_and_a_new_one_replaces_it(pg_conn):
    store = _store(pg_conn)
    plan_id = _replication_plan(store)
    store.record_predicted_accuracy(plan_id, _estimate(store, plan_id, [0.5, 1.0, 0.75, 0.75]))
    stored = store.predicted_accuracy(plan_id)
    assert stored["predicted_accuracy"] == 0.75 and stored["accuracy_estimate"]["windows"] == 4
    assert stored["accuracy_estimate"]["stdev"] == pytest.approx(0.1767767, abs=1e-6)
    store.record_predicted_accuracy(plan_id, _estimate(store, plan_id, [0.9, 0.9]))
    assert store.predicted_accuracy(plan_id)["predicted_accuracy"] == pytest.approx(0.9)
    [plan] = store.plans("topk", "replication")
    assert plan["predicted_accuracy"] == pytest.approx(0.9) and store.plan(plan_id)["accuracy_estimate"]["windows"] == 2
    assert [e["kind"] for e in store.events("topk")].count("accuracy_estimated") == 2


def test_an_estimate_of_other_tasks_or_a_missing_plan_is_refused(pg_conn):
    store = _store(pg_conn)
    plan_id = _replication_plan(store)
    with pytest.raises(InputError, match=f"not those of plan {plan_id}"):
        store.record_predicted_accuracy(plan_id, summarize(["O9[9]"], [1.0], "s").model_dump(mode="json"))
    with pytest.raises(InputError, match="no replication plan"):
        store.record_predicted_accuracy(plan_id + 100, _estimate(store, plan_id, [1.0]))
    with pytest.raises(InputError, match="accuracy estimate"):
        store.record_predicted_accuracy(plan_id, {"tasks": [], "mean": 2.0})


def test_a_drill_records_its_plans_predicted_accuracy_next_to_of_and_measured(pg_conn):
    store = _store(pg_conn)
    plan_id = _replication_plan(store, 8)
    store.record_predicted_accuracy(plan_id, _estimate(store, plan_id, [0.5, 0.7]))
    drill_id = store.start_drill("topk", plan_id, {"failure_domain": "rack-a"}, "manual__1")
    [running] = store.drills("topk")
    assert running["predicted_accuracy"] == pytest.approx(0.6)  # from the plan, before measuring
    store.finish_drill(drill_id, _report([0.5, 0.75, 1.0]), "passed")
    [drill] = store.drills("topk")
    assert drill["predicted_accuracy"] == pytest.approx(0.6) and drill["tentative_accuracy"] == pytest.approx(0.75)
    with pg_conn, pg_conn.cursor() as cur:
        cur.execute("SELECT prediction_error, accuracy_prediction_error FROM ftops_drill_results")
        of_error, accuracy_error = cur.fetchone()
    assert of_error == pytest.approx(abs(0.75 - 0.5595), abs=1e-4) and accuracy_error == pytest.approx(0.15)


def test_a_report_with_its_own_prediction_sets_it(pg_conn):
    store = _store(pg_conn)
    drill_id = store.start_drill("topk", _replication_plan(store), {}, "manual__2")  # plan not estimated
    assert store.drills("topk")[0]["predicted_accuracy"] is None
    store.finish_drill(drill_id, _report([0.8], predicted_accuracy=0.85), "passed")
    assert store.drills("topk")[0]["predicted_accuracy"] == pytest.approx(0.85)
