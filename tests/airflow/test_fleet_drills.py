"""Two jobs due at once whose executors share failure domains are drilled one after the other, each under its own
lease (issue 33, item 2), with ``dag.test()`` of ``ftops_chaos_drill``'s scheduled path (no ``job`` in the conf) on
real Spark and PostgreSQL: a user's two jobs (examples/sensor_alerts.py, no sample job in the store) run on one
local standalone cluster (rack-a, rack-b), both with a drill schedule that is due. The run maps a drill over each;
the second drill's preflight finds the cluster's failure domains held by the first and is refused (skipped: the job
stays due) unless the first has finished; the next scheduled run drills it; the one after that has nothing due."""

from __future__ import annotations

import pytest

from spark_jobs.runtime.waiting import wait_for
from tests.conftest import test_port
from tests.live_jobs import repository_dag, two_running_jobs
from tests.store_fixtures import pg_server  # noqa: F401 - fixture

BASE = test_port(13000)  # the test cluster's ports (below the ephemeral range, as test_port says)
JOBS = ("fleet-a", "fleet-b")
YEARLY = "0 0 1 1 *"  # due once its last drill is over a year old; drilled now, not due again while the test runs


@pytest.fixture(scope="module")
def two_jobs(pg_server, tmp_path_factory):
    """fleet-a and fleet-b running on one cluster, fed the same input (each job one executor, on either rack)."""
    with two_running_jobs(JOBS[0], JOBS[1], tmp_path_factory.mktemp("fleet"), BASE, pg_server.url()) as jobs:
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
    assert {j["name"] for j in store.jobs()} == set(JOBS)  # only the user's jobs
    for job in JOBS:
        store.set_policy(job, {"drill_schedule": YEARLY}, "test")
    with store.conn, store.conn.cursor() as cur:
        cur.execute("UPDATE ftops_job SET drill_schedule_at = now() - interval '400 days'")
    # no job: the scheduled path (said explicitly: dag.test() keeps the last run's conf in the DAG object's Params),
    # with a shorter drill
    conf = {"job": "", "replacement_delay_s": 5, "timeout_s": 900}  # each wait's deadline: a guard, not a speed check

    runs = []
    while len(runs) < 2 and any(not store.drills(job) for job in JOBS):
        for dep in deps.values():
            _keeping_up(dep)
        run = repository_dag("ftops_chaos_drill").test(run_conf=conf)
        assert run.state == "success", {f"{ti.task_id}[{ti.map_index}]": ti.state for ti in run.get_task_instances()
                                        if ti.state not in ("success", "skipped")}
        runs.append(run)
    drills = {job: store.drills(job) for job in JOBS}
    assert all(len(d) == 1 and d[0]["status"] == "passed" for d in drills.values()), drills
    assert {d[0]["dag_run_id"] for d in drills.values()} <= {r.run_id for r in runs}
    first, second = sorted((d[0] for d in drills.values()), key=lambda d: d["started_at"])
    assert first["finished_at"] <= second["started_at"]  # never at the same time
    master = f"spark://127.0.0.1:{BASE + 77}"
    for job in JOBS:
        locked = _events(store, job, ("domains_locked",))
        assert [e["payload"]["domains"] for e in locked] == [[f"{master}#rack-a", f"{master}#rack-b"]]
        holders = {e["payload"]["holder"] for e in _events(store, job, ("lease_acquired",))}
        assert holders <= {f"dag run ftops_chaos_drill/{r.run_id}" for r in runs}  # its own lease, per job
        assert _events(store, job, ("domains_released",)) and store.lease(job) is None
    if len(runs) == 2:  # the first run drilled one job and refused the other: its preflight was skipped
        refused = next(job for job in JOBS if drills[job][0]["dag_run_id"] == runs[1].run_id)
        mine = sorted(ti.map_index for ti in runs[0].get_task_instances()
                      if ti.task_id == "preflight" and ti.state == "skipped")
        assert len(mine) == 1, f"{refused} was not refused in the first run"
    assert store.domain_locks() == []

    idle = repository_dag("ftops_chaos_drill").test(run_conf=conf)  # both drilled since their schedule fired: none due
    assert idle.state == "success"
    assert [t.task_id for t in idle.get_task_instances() if t.task_id == "preflight" and t.state != "skipped"] == []
    assert {job: len(store.drills(job)) for job in JOBS} == {job: 1 for job in JOBS}
