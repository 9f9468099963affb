"""What the console's tests share: a history store seeded as the DAGs leave it (a sample job with plans, drills and
recovery runs), the console app behind Airflow's authentication (``ui``), and ftops's DAGs in Airflow's metadata
database (``airflow_dags``) for the actions that trigger them."""

from __future__ import annotations

import json
import re
import time

import pytest
from fastapi.testclient import TestClient

from ft_core.replication.planners import plan_replication
from ft_core.samples import load_sample
from ft_core.store.experiments import Check, Event, ExperimentReport
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from tests.conftest import ROOT


def chart_options(html: str) -> dict[str, dict]:
    """The ECharts option of every chart in ``html`` (ui/templates/chart.html), by the chart's key."""
    found = re.findall(r'<figure class="chart" id="chart-([^"]+)">.*?<script type="application/json" '
                       r'class="chart-option">(.*?)</script>', html, re.S)
    return {key: json.loads(text) for key, text in found}


def chart_series(option: dict, name: str, kind: str | None = None) -> list:
    """The data of the chart's series called ``name`` (of ECharts type ``kind``, when given): exactly one."""
    [found] = [s["data"] for s in option["series"] if s.get("name") == name and kind in (None, s["type"])]
    return found


def drill_windows(start_ms: int, accuracies: list[float]) -> dict:
    return {"failure_window_starts_ms": [start_ms + 2000 * i for i in range(len(accuracies))],
            "tentative_accuracy_per_window": accuracies,
            "tentative_accuracy": sum(accuracies) / len(accuracies)}


def record_drills(store: HistoryStore, plan_id: int) -> list[int]:
    """Three drills as the chaos-drill DAG leaves them: passed, failed (lost output), still running."""
    t0 = int(time.time() * 1000) - 600_000
    passed = store.start_drill("topk", plan_id, {"failure_domain": "rack-a"}, "manual__d1")
    store.finish_drill(passed, {"predicted_output_fidelity": 0.5595, **drill_windows(t0, [0.5, 0.6, 0.7]),
                                "time_to_first_tentative_s": 3.2, "time_to_caught_up_s": 35.0, "lost_windows": 0,
                                "predicted_caught_up_s": 41.5, "duplicated_windows": 0, "output_equals_reference": True},
                       "passed")
    store.save_experiment(ExperimentReport(kind="drill", job="topk", experiment_id=passed, dag_run_id="manual__d1",
                                           verdict="passed", timeline=[Event(at=t0 / 1000, event="failure injected")]))
    failed = store.start_drill("topk", plan_id, {"failure_domain": "rack-b", "kill_driver": True}, "manual__d2")
    store.finish_drill(failed, {"predicted_output_fidelity": 0.5595, **drill_windows(t0 + 60_000, [0.2, 0.3]),
                                "time_to_first_tentative_s": 4.0, "time_to_caught_up_s": None, "lost_windows": 2,
                                "duplicated_windows": 1, "output_equals_reference": False}, "failed")
    running = store.start_drill("topk", plan_id, {"failure_domain": "rack-a"}, "manual__d3")
    return [passed, failed, running]


def record_recovery_runs(store: HistoryStore) -> list[int]:
    """Two recovery runs as the incremental-recovery DAG records them, stage by stage."""
    t_fail = time.time() - 300
    done = store.start_recovery_run("topk", None, {"domain": "rack-a", "time": t_fail, "units": ["u1", "u2", "u3"]},
                                    "manual__r1")
    for k in (1, 2, 3):
        store.record_stage(done, k, float(k), [f"u{k}"], {f"u{k}": "worker-c"}, "pending")
    for k, (start, end) in enumerate([(6.0, 14.0), (20.0, 31.0), (33.0, 40.0)], start=1):
        store.record_stage(done, k, float(k), [f"u{k}"], {f"u{k}": "worker-c"}, "waiting", waiting_at=t_fail + start - 4)
        store.record_stage(done, k, float(k), [f"u{k}"], {f"u{k}": "worker-c"}, "started", started_at=t_fail + start)
        store.record_stage(done, k, float(k), [f"u{k}"], {f"u{k}": "worker-c"}, "done", finished_at=t_fail + end)
    for q, s in (("Q1", 16.0), ("Q2", 33.5), ("Q3", 42.0)):
        store.record_query_recovery(done, q, 1.0, s)
    store.finish_recovery_run(done, "succeeded")
    store.save_experiment(ExperimentReport(
        kind="recovery", job="topk", experiment_id=done, dag_run_id="manual__r1", verdict="passed",
        hypothesis_after=[Check(name="Q2 available again", expected="recovered", observed="after 33.5 s", held=True)],
        timeline=[Event(at=t_fail + 6.0, event="stage 1 started")],
        measurements={"query_recovered_s": {"Q1": 16.0, "Q2": 33.5, "Q3": 42.0}, "predicted_back_s": {"Q2": 30.0}}))
    running = store.start_recovery_run("topk", None, {"domain": "rack-b", "time": time.time() - 60}, "manual__r2")
    store.record_stage(running, 1, 1.0, ["u4"], {}, "done", finished_at=time.time() - 30)  # done without a start time
    store.record_stage(running, 2, 2.0, ["u5"], {}, "waiting")
    store.record_stage(running, 3, 3.0, ["u6"], {}, "pending")
    store.record_query_recovery(running, "Q4", 2.0, None)
    return [done, running]


def seed_history(conn) -> dict:
    """Job ``topk`` with its topology, two replication plans (budgets 4 and 8), drills and recovery runs."""
    upgrade(conn)
    store = HistoryStore(conn)
    store.register_job(JobSpec(name="topk", workload="topk", replication_budget=8))
    graph = load_sample("q1-topk")
    topology_id = store.save_topology("topk", graph.topology.to_document())
    plan_ids = []
    for budget in (4, 8):
        plan = plan_replication(graph, budget, "exact")
        plan_ids.append(store.save_plan("topk", "replication", algorithm=plan.algorithm, objective=plan.output_fidelity,
                                        optimal=plan.optimal, payload=plan.model_dump(mode="json"), input_hash=plan.input_hash,
                                        parameters={"budget": budget}, topology_id=topology_id).plan_id)
    drills = record_drills(store, plan_ids[-1])
    runs = record_recovery_runs(store)
    return {"plans": plan_ids, "drills": drills, "runs": runs, "store": store}


@pytest.fixture
def ui(pg_server, pg_conn, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_FTOPS_DB", pg_server.url())
    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    from ftops_provider.ui.app import app

    manager = init_auth_manager()
    token = manager.generate_jwt(SimpleAuthManagerUser(username="admin", role="ADMIN"))
    return TestClient(app), token, seed_history(pg_conn)



@pytest.fixture
def airflow_dags():
    """ftops's DAGs in Airflow's metadata database, as its DAG processor leaves them (an action triggers those);
    the runs the test creates are deleted afterwards."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    sync_dags()
    before = {r.id for r in ftops_runs()}
    yield
    with create_session() as session:
        session.query(DagRun).filter(DagRun.id.in_({r.id for r in ftops_runs()} - before)).delete(
            synchronize_session=False)


def sync_dags() -> None:
    """Write ftops's DAGs (the repository's dags folder) to Airflow's metadata database, as its DAG processor does."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    DagBundlesManager().sync_bundles_to_db()
    bag = DagBag(dag_folder=str(ROOT / "dags"))
    assert not bag.import_errors, bag.import_errors
    sync_bag_to_db(bag, "dags-folder", None)


def ftops_runs():
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        runs = session.query(DagRun).filter(DagRun.dag_id.like("ftops_%")).all()
        session.expunge_all()
        return runs


def set_paused(dag_id: str, paused: bool) -> None:
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        session.query(DagModel).filter(DagModel.dag_id == dag_id).update({DagModel.is_paused: paused})
