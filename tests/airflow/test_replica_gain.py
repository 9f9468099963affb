"""When a new replication plan replaces the running replica: its gain is measured on today's rates.

Found by CI: a replica of plan #1 was resubmitted as plan #4 although both replicate the same tasks,
because #4's objective (on newly measured rates) was compared with #1's stored objective (on older rates).
"""

from __future__ import annotations

import pytest

from ft_core.replication.planners import plan_replication
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from ft_core.topology.document import parse_topology
from ft_core.topology.task_graph import build_task_graph
from ftops_provider.operators.replicas import replacement_gain
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


def _topk(rate0: float, rate1: float) -> dict:
    """The topk workload's shape (O1 x2 -> O2 -> O3) with measured O1 rates."""
    return {"name": "topk-p2",
            "operators": [{"name": "O1", "parallelism": 2}, {"name": "O2", "parallelism": 1}, {"name": "O3", "parallelism": 1}],
            "streams": [{"from": "O1", "to": "O2", "partitioning": "merge"}, {"from": "O2", "to": "O3", "partitioning": "one_to_one"}],
            "tasks": {"O1[0]": {"rate": rate0}, "O1[1]": {"rate": rate1}}}


def _profile_and_plan(store: HistoryStore, doc: dict) -> dict:
    """What ftops_profile_and_plan stores: the measured topology, then the plan computed on it."""
    plan = plan_replication(build_task_graph(parse_topology(doc)), 3, "exact")
    stored = store.save_plan("topk", "replication", algorithm=plan.algorithm, objective=plan.output_fidelity,
                             optimal=plan.optimal, payload=plan.model_dump(mode="json"), input_hash=plan.input_hash,
                             topology_id=store.save_topology("topk", doc))
    assert stored.created
    return store.current_plan("topk", "replication")


def test_the_same_tasks_on_drifted_rates_gain_nothing_and_other_tasks_gain_on_todays_rates(pg_conn):
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name="topk", workload="topk", replication_budget=3))
    applied = _profile_and_plan(store, _topk(29.0, 21.0))
    assert replacement_gain(store, "topk", applied, None) == pytest.approx(0.58)  # nothing runs yet

    drifted = _profile_and_plan(store, _topk(32.0, 18.0))
    assert drifted["payload"]["tasks"] == applied["payload"]["tasks"] == ["O1[0]", "O2[0]", "O3[0]"]
    assert drifted["objective"] - applied["objective"] == pytest.approx(0.06)  # above the DAG's 0.02 threshold
    assert replacement_gain(store, "topk", drifted, applied["plan_id"]) == pytest.approx(0.0)

    # the heavy O1 task changed: the plan that follows it gains what the running replica now loses
    swapped = _profile_and_plan(store, _topk(18.0, 32.0))
    assert swapped["payload"]["tasks"] == ["O1[1]", "O2[0]", "O3[0]"]
    assert replacement_gain(store, "topk", swapped, applied["plan_id"]) == pytest.approx(0.64 - 0.36)
