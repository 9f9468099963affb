"""Fleet recovery through the DAG on real Spark, PostgreSQL and Airflow (issue 33, item 3): a user's two jobs
(examples/sensor_alerts.py) on one local standalone cluster lose every worker at once; capacity comes back one
worker at a time. ``ftops_fleet_recovery`` (``dag.test()``, its waits deferred to the triggerer) finds both jobs
lost, restarts the higher-priority job on the first worker back and the other on the
second, and records each one's planned, predicted and measured time back. The low-priority job was submitted
first: a standalone master left alone would have given it the first worker, so the run holds it down (journaled)
until its stage; the high-priority job keeps its driver and takes the first worker back."""

from __future__ import annotations

import threading
import time

import pytest

from spark_jobs.runtime.waiting import wait_for
from tests.conftest import test_port
from tests.live_jobs import repository_dag, two_running_jobs
from tests.store_fixtures import pg_server  # noqa: F401 - fixture

BASE = test_port(12400)
LOW, HIGH = "fleet-low", "fleet-high"  # LOW is submitted first


@pytest.fixture(scope="module")
def two_jobs(pg_server, tmp_path_factory):
    with two_running_jobs(LOW, HIGH, tmp_path_factory.mktemp("fleet-recovery"), BASE, pg_server.url()) as jobs:
        yield jobs


def _running(store, job: str, since: float) -> bool | None:
    batches = store.job_batches(job, since)
    return True if batches and all(len(rows) >= 5 for rows in batches.values()) else None


def test_the_higher_priority_job_is_back_first_and_times_are_recorded(two_jobs):
    from ft_core.errors import InputError
    from spark_jobs.cluster.seam import cluster_of, give_back
    from spark_jobs.fleet_recovery.inputs import lost_jobs, primary_executors

    store, deps = two_jobs
    store.set_policy(HIGH, {"priority": 3}, "test")
    started = time.time()
    for job in (LOW, HIGH):  # a steady state to read the rates from
        wait_for(lambda job=job: _running(store, job, started) and (primary_executors(deps[job], job) or 0) > 0 or None,
                 timeout_s=300, interval_s=2, what=f"{job} to run micro-batches with executors")

    with pytest.raises(InputError, match="is not lost"):  # naming a healthy job never stops it
        lost_jobs(store, [HIGH], time.time())

    cluster = cluster_of(deps[LOW])
    failed_at = time.time()
    lost = [cluster.lose(domain, "host-down") for domain in ("rack-a", "rack-b")]  # the zone: every primary worker
    back_in = [(25.0, lost[0].undo), (55.0, lost[1].undo)]

    def capacity_returns() -> None:  # replacement workers, one at a time, in the domains they left
        for at_s, undo in back_in:
            time.sleep(max(0.0, failed_at + at_s - time.time()))
            give_back(undo)

    returning = threading.Thread(target=capacity_returns, daemon=True)
    returning.start()
    conf = {"jobs": "", "failed_at": str(failed_at), "arrivals": "1@25,1@55", "timeout_s": 600}
    try:
        run = repository_dag("ftops_fleet_recovery").test(run_conf=conf)
    finally:
        returning.join(timeout=120)
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == "success", states
    assert states["wait_capacity_0"] == "skipped"  # no free core survived: stage 0 restarts nothing

    [recovery] = [r for r in (store.fleet_recovery(i) for i in _run_ids(store)) if r["dag_run_id"] == run.run_id]
    jobs = {r["job"]: r for r in recovery["jobs"]}
    assert recovery["status"] == "done" and set(jobs) == {LOW, HIGH}
    assert (jobs[HIGH]["stage"], jobs[LOW]["stage"]) == (1, 2)
    assert jobs[HIGH]["restarted_at"] < jobs[LOW]["restarted_at"]
    assert jobs[HIGH]["restarted_at"].timestamp() - failed_at >= 25 - 1  # not before its worker was back
    assert jobs[HIGH]["measured_back_s"] < jobs[LOW]["measured_back_s"]  # the higher priority back first
    for r in jobs.values():
        assert r["planned_back_s"] is not None and r["predicted_back_s"] is not None and r["measured_back_s"] > 0
        assert r["inputs"]["input_rate"] > 0 and r["inputs"]["sources"]["streams"] == [f"ftops-{r['job']}-primary"]
    from ftops_provider.ui.sections import fleet_recovery_section

    shown = fleet_recovery_section(store.job_fleet_recoveries(HIGH))  # the job's console page
    assert f"#{recovery['run_id']}" in shown and f"{jobs[HIGH]['measured_back_s']:.1f} s" in shown
    tab = store.dag_run_records(run.run_id)["fleet_recoveries"]  # the run's Fault tolerance tab
    assert {(r["job"], r["run_id"], r["status"]) for r in tab} == {(j, recovery["run_id"], "done") for j in (LOW, HIGH)}
    # LOW would have taken HIGH's core (submitted first): held down, in the journal, and given back; HIGH kept its
    # driver and got the first worker's core without a restart
    faults = {job: [f for f in store.faults(job) if f["holder"].endswith(run.run_id)] for job in (LOW, HIGH)}
    assert [(f["kind"], f["experiment_kind"]) for f in faults[LOW]] == [("driver_killed", "fleet_recovery")]
    assert faults[LOW][0]["closed_at"] is not None and "resubmitted" in faults[LOW][0]["outcome"]
    assert faults[HIGH] == []
    for job in (LOW, HIGH):  # the lease released, running again
        assert store.lease(job) is None
        wait_for(lambda job=job: (primary_executors(deps[job], job) or 0) > 0 or None, timeout_s=60, interval_s=2,
                 what=f"{job}'s primary with executors after the recovery")


def _run_ids(store) -> list[int]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SELECT run_id FROM ftops_fleet_recovery ORDER BY run_id")
        return [r[0] for r in cur.fetchall()]
