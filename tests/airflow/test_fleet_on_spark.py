"""A user's two jobs (examples/sensor_alerts.py, no sample job in the store) on one local standalone cluster (rack-a,
rack-b), operated as a fleet on real Spark, PostgreSQL and Airflow (``dag.test()``), one deployment for both tests
(issue 37: a cluster and two jobs started once; the drills leave the failure domains as they found them and the
jobs running, which the recovery checks first; the low-priority job stays the first submitted: no drill kills a driver):

1. Two jobs due at once whose executors share failure domains are drilled one after the other, each under its own
   lease (issue 33, item 2): ``ftops_chaos_drill``'s scheduled path (no ``job`` in the conf) maps a drill over each;
   the second drill's preflight finds the cluster's failure domains held by the first and is refused (skipped: the
   job stays due) unless the first has finished; the next scheduled run drills it; the one after that has nothing due.
2. Fleet recovery (issue 33, item 3): the jobs lose every worker at once; capacity comes back one worker at a time.
   The fleet watch (``ftops_fleet_watch``) sees the loss and starts one ``ftops_fleet_recovery`` run for it (a second
   watch starts none); that run (its waits deferred to the triggerer) finds both jobs lost, restarts the higher-priority
   job on the first worker back and the other on the second, and records each one's planned, predicted and measured
   time back. The low-priority job was submitted first: a standalone master left alone would have given it the first
   worker, so the run holds it down (journaled) until its stage; the high-priority job keeps its driver and takes the
   first worker back."""

from __future__ import annotations

import threading
import time

import pytest

from spark_jobs.runtime.waiting import wait_for
from tests.conftest import test_port
from tests.live_jobs import repository_dag, two_running_jobs
from tests.store_fixtures import pg_server  # noqa: F401 - fixture

BASE = test_port(13000)  # the test cluster's ports (below the ephemeral range, as test_port says)
LOW, HIGH = "fleet-low", "fleet-high"  # LOW is submitted first
YEARLY = "0 0 1 1 *"  # due once its last drill is over a year old; drilled now, not due again while the test runs


@pytest.fixture(scope="module")
def two_jobs(pg_server, tmp_path_factory):
    """LOW and HIGH running on one cluster, fed the same input (each job one executor, on either rack)."""
    with two_running_jobs(LOW, HIGH, tmp_path_factory.mktemp("fleet"), BASE, pg_server.url()) as jobs:
        yield jobs


def _keeping_up(dep, bound_s: float = 30, polls: int = 3) -> None:
    """Well within the preflight's steady-state bound, several polls in a row (as tests/airflow/test_dag_runs.py)."""
    from spark_jobs.drills.probes import event_lag_s

    streak: list[float] = []

    def steady() -> bool | None:
        lag = event_lag_s(dep.pipeline, dep.params, dep.input, dep.primary_output)
        streak[:] = streak + [lag] if lag is not None and lag < bound_s else []
        return True if len(streak) >= polls else None

    wait_for(steady, timeout_s=400, interval_s=3, what=f"{dep.root} to stay within {bound_s:.0f} s of its input")


def _events(store, job: str, kinds: tuple[str, ...]) -> list[dict]:
    return [e for e in reversed(store.events(job, limit=200)) if e["kind"] in kinds]


def test_two_due_jobs_sharing_failure_domains_are_drilled_one_after_the_other_each_under_its_own_lease(two_jobs):
    store, deps = two_jobs
    assert {j["name"] for j in store.jobs()} == {LOW, HIGH}  # only the user's jobs
    for job in (LOW, HIGH):
        store.set_policy(job, {"drill_schedule": YEARLY}, "test")
    with store.conn, store.conn.cursor() as cur:
        cur.execute("UPDATE ftops_job SET drill_schedule_at = now() - interval '400 days'")
    # no job: the scheduled path (said explicitly: dag.test() keeps the last run's conf in the DAG object's Params),
    # with a shorter drill
    conf = {"job": "", "replacement_delay_s": 5, "timeout_s": 900}  # each wait's deadline: a guard, not a speed check

    runs = []
    while len(runs) < 2 and any(not store.drills(job) for job in (LOW, HIGH)):
        for dep in deps.values():
            _keeping_up(dep)
        run = repository_dag("ftops_chaos_drill").test(run_conf=conf)
        assert run.state == "success", {f"{ti.task_id}[{ti.map_index}]": ti.state for ti in run.get_task_instances()
                                        if ti.state not in ("success", "skipped")}
        runs.append(run)
    drills = {job: store.drills(job) for job in (LOW, HIGH)}
    assert all(len(d) == 1 and d[0]["status"] == "passed" for d in drills.values()), drills
    assert {d[0]["dag_run_id"] for d in drills.values()} <= {r.run_id for r in runs}
    first, second = sorted((d[0] for d in drills.values()), key=lambda d: d["started_at"])
    assert first["finished_at"] <= second["started_at"]  # never at the same time
    master = f"spark://127.0.0.1:{BASE + 77}"
    for job in (LOW, HIGH):
        locked = _events(store, job, ("domains_locked",))
        assert [e["payload"]["domains"] for e in locked] == [[f"{master}#rack-a", f"{master}#rack-b"]]
        holders = {e["payload"]["holder"] for e in _events(store, job, ("lease_acquired",))}
        assert holders <= {f"dag run ftops_chaos_drill/{r.run_id}" for r in runs}  # its own lease, per job
        assert _events(store, job, ("domains_released",)) and store.lease(job) is None
    if len(runs) == 2:  # the first run drilled one job and refused the other: its preflight was skipped
        refused = next(job for job in (LOW, HIGH) if drills[job][0]["dag_run_id"] == runs[1].run_id)
        mine = sorted(ti.map_index for ti in runs[0].get_task_instances()
                      if ti.task_id == "preflight" and ti.state == "skipped")
        assert len(mine) == 1, f"{refused} was not refused in the first run"
    assert store.domain_locks() == []

    idle = repository_dag("ftops_chaos_drill").test(run_conf=conf)  # both drilled since their schedule fired: none due
    assert idle.state == "success"
    assert [t.task_id for t in idle.get_task_instances() if t.task_id == "preflight" and t.state != "skipped"] == []
    assert {job: len(store.drills(job)) for job in (LOW, HIGH)} == {job: 1 for job in (LOW, HIGH)}


def _running(store, job: str, since: float) -> bool | None:
    batches = store.job_batches(job, since)
    return True if batches and all(len(rows) >= 5 for rows in batches.values()) else None


def test_the_higher_priority_job_is_back_first_and_times_are_recorded(two_jobs):
    from ft_core.errors import InputError
    from spark_jobs.cluster.seam import cluster_of, give_back
    from spark_jobs.fleet_recovery.inputs import lost_jobs, primary_executors
    from spark_jobs.fleet_recovery.watch import find_losses

    store, deps = two_jobs
    cluster = cluster_of(deps[LOW])
    # what this test needs of the deployment it shares with the drills before it: both domains up, nothing held
    assert cluster.capacity() == {"rack-a": 1, "rack-b": 1}
    assert all(store.lease(job) is None and not [f for f in store.faults(job) if f["closed_at"] is None]
               for job in (LOW, HIGH))
    store.set_policy(HIGH, {"priority": 3}, "test")
    started = time.time()
    for job in (LOW, HIGH):  # a steady state to read the rates from
        wait_for(lambda job=job: _running(store, job, started) and (primary_executors(deps[job], job) or 0) > 0 or None,
                 timeout_s=300, interval_s=2, what=f"{job} to run micro-batches with executors")

    with pytest.raises(InputError, match="is not lost"):  # naming a healthy job never stops it
        lost_jobs(store, [HIGH], time.time())
    assert find_losses(store) == []  # the fleet watch: both jobs run with executors

    failed_at = time.time()
    lost = [cluster.lose(domain, "host-down") for domain in ("rack-a", "rack-b")]  # the zone: every primary worker
    # the watch first, with nothing back yet: capacity returning before it fires would be taken by whichever job's
    # driver asks first, and that job is running again, not lost (seen in CI: fleet-low got the first worker back)
    started = _watched(failed_at)
    watched_s = time.time() - failed_at
    store.acquire_lease(HIGH, "recovery", "test", ttl_s=60)  # an experiment on the master: the watch leaves it be
    assert find_losses(store) == []
    store.release_lease(HIGH, "test")
    [loss] = find_losses(store)
    assert loss.jobs == [HIGH, LOW] and loss.run_id() == started.run_id  # the same loss, the same run
    assert loss.model_copy(update={"jobs": [LOW]}).run_id() != started.run_id  # a job left out: a run of its own
    back_in = [(watched_s + 25.0, lost[0].undo), (watched_s + 55.0, lost[1].undo)]

    def capacity_returns() -> None:  # replacement workers, one at a time, in the domains they left
        for at_s, undo in back_in:
            time.sleep(max(0.0, failed_at + at_s - time.time()))
            give_back(undo)

    returning = threading.Thread(target=capacity_returns, daemon=True)
    returning.start()
    try:  # its run is queued for the scheduler; run here with the capacity this test brings back
        arrivals = ",".join(f"1@{at_s:.0f}" for at_s, _ in back_in)
        run = repository_dag("ftops_fleet_recovery").test(run_conf={**started.conf, "arrivals": arrivals,
                                                                     "timeout_s": 600})
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
    assert jobs[HIGH]["restarted_at"].timestamp() - failed_at >= back_in[0][0] - 1  # not before its worker was back
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
    assert find_losses(store) == []  # recovered: nothing for the watch


def _watched(failed_at: float):
    """``ftops_fleet_watch`` run as the scheduler would (opt-in: both its DAG and the recovery's unpaused) while the
    jobs are down: it sees the loss and starts one ``ftops_fleet_recovery`` run for it, named after the loss, with the
    lost jobs and the failure time; a second watch sees the same loss and starts nothing more. That run, returned."""
    from airflow.models.dagrun import DagRun

    from tests.console_fixtures import set_paused, sync_dags

    sync_dags()  # the DAGs in Airflow's database (as dag.test() writes them), then the recovery unpaused
    set_paused("ftops_fleet_recovery", False)
    runs = [repository_dag("ftops_fleet_watch").test(run_conf={"watch_s": 120}) for _ in range(2)]
    states = [{ti.task_id: ti.state for ti in run.get_task_instances()} for run in runs]
    assert [run.state for run in runs] == ["success", "success"], states
    assert states[0]["recover"] == "success" and states[1]["recover"] == "skipped", states  # one run per loss
    [watched] = [ti for ti in runs[0].get_task_instances() if ti.task_id == "watch"]
    [loss] = watched.xcom_pull(task_ids="watch")  # one loss: both jobs on one master
    [started] = DagRun.find(dag_id="ftops_fleet_recovery", run_id=loss["trigger_run_id"])
    assert started.run_id.startswith("fleet_watch__") and started.conf["jobs"] == ",".join(sorted((HIGH, LOW)))
    assert failed_at - 10 <= float(started.conf["failed_at"]) <= failed_at + 1  # the dead workers' last heartbeat
    return started


def _run_ids(store) -> list[int]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SELECT run_id FROM ftops_fleet_recovery ORDER BY run_id")
        return [r[0] for r in cur.fetchall()]
