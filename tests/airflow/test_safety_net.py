"""No fault outlives the process that injected it (issue 35), end to end on real Spark, PostgreSQL and Airflow:
a drill command SIGKILLed after it failed a domain leaves its fault in the journal; with nobody acting and no
other experiment, the safety net (``ftops_safety_net``, run by a real scheduler and triggerer with experiment
schedules off) gives the domain's capacity back in that domain within the lease's TTL plus two minutes and
records the dead drill aborted; the next drill passes and leaves the domains as it found them. ``ftops halt``
aborts a running drill, undoes its fault and refuses new drills until ``ftops resume``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ftops_provider.local_airflow import LocalAirflow
from spark_jobs.cluster.seam import cluster_of
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import ROOT, run_cli, test_port
from tests.live_jobs import running_job
from tests.store_fixtures import pg_server  # noqa: F401 - fixture

BASE = test_port(15400)  # the test cluster's ports
AIRFLOW_PORT = test_port(16830)
JOB = "gauges"
TTL_S = 30


@pytest.fixture(scope="module")
def job(pg_server, tmp_path_factory):
    os.environ["FTOPS_DATABASE_URL"] = pg_server.url()  # the commands this module runs, and the drivers they start
    try:
        with running_job(JOB, tmp_path_factory.mktemp("job"), BASE, pg_server.url()) as running:
            yield running
    finally:
        os.environ.pop("FTOPS_DATABASE_URL", None)


@pytest.fixture(scope="module")
def airflow(job, pg_server):
    """A real Airflow whose experiment schedules are off: only the safety net runs on its own."""
    home = ROOT / ".state" / "airflow-safety-net-test"
    shutil.rmtree(home, ignore_errors=True)
    from pathlib import Path

    from ftops_provider.local_stack import stack_connections
    from spark_jobs.cluster.standalone import ClusterState

    local = LocalAirflow(home=home, port=AIRFLOW_PORT)
    masters = ClusterState.load(Path(job[0].cluster_state)).masters()  # the replica's submission needs the standby
    local.up(extra_env={**stack_connections(pg_server.url(), masters), "FTOPS_SCHEDULES": "manual"})
    try:
        token = local.token()
        wait_for(lambda: _watching(local, token), timeout_s=300, interval_s=3, what="the safety net's first run to watch")
        yield local
    finally:
        local.down()
        shutil.rmtree(home, ignore_errors=True)


def _watching(local: LocalAirflow, token: str) -> bool:
    runs = local.api("GET", "/api/v2/dags/ftops_safety_net/dagRuns?state=running", token=token).get("dag_runs", [])
    return any(local.task_instances("ftops_safety_net", r["dag_run_id"]).get("watch", {}).get("state") == "deferred"
               for r in runs)


def _drill(*extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ft_core.cli.main", "drill", "job", JOB, "--timeout-s", "400",
                             "--json", *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _applied_fault(store) -> dict | None:
    return next((f for f in store.open_faults(JOB) if f["applied_at"] is not None), None)


def test_a_sigkilled_drill_is_undone_by_the_safety_net_and_the_next_drill_passes(job, airflow):
    dep, store = job
    cluster = cluster_of(dep)
    before = cluster.capacity()
    assert before == {"rack-a": 1, "rack-b": 1}
    command = _drill("--lease-ttl-s", str(TTL_S), "--replacement-delay-s", "900", "--max-duration-s", "3000")
    try:
        fault = wait_for(lambda: _applied_fault(store), timeout_s=400, interval_s=0.5, what="the drill to fail a domain")
    finally:
        command.kill()  # SIGKILL: no finish, no release; the fault stays in place
        command.wait(timeout=30)
    killed_at = time.time()
    assert fault["kind"] == "domain_down"
    wait_for(lambda: cluster.capacity().get(fault["target"], 0) == 0 or None, timeout_s=30, interval_s=0.2,
             what=f"{fault['target']}'s worker to die")

    # The safety net closes the fault, then the dead drill: whole again is both (and the capacity back).
    wait_for(lambda: (cluster.capacity() == before and not store.open_faults(JOB)
                      and store.drills(JOB)[-1]["status"] != "running") or None, timeout_s=TTL_S + 300, interval_s=1,
             what=lambda: f"the safety net to give {fault['target']} back and close the drill ({cluster.capacity()}, "
                          f"drill {store.drills(JOB)[-1]['status']}, lease {store.lease(JOB)})")
    took = time.time() - killed_at
    assert took <= TTL_S + 120, f"the job was whole again {took:.0f} s after the kill (bound {TTL_S + 120} s)"
    [closed] = [f for f in store.faults(JOB) if f["fault_id"] == fault["fault_id"]]
    assert closed["closed_by"].startswith("safety net ftops_safety_net/") and "joined " + fault["target"] in closed["outcome"]
    drill = store.drills(JOB)[-1]
    assert drill["status"] == "aborted" and "holder stopped without finishing it" in drill["error"]
    assert store.lease(JOB) is None

    nxt = _drill("--replacement-delay-s", "5")
    out, err = nxt.communicate(timeout=900)
    assert nxt.returncode == 0, err[-3000:]
    report = json.loads(out)
    assert report["verdict"] == "passed"
    assert cluster.capacity() == before  # the domains it found


def test_a_halt_aborts_the_running_drill_undoes_its_fault_and_refuses_new_ones_until_resume(job):
    dep, store = job
    cluster = cluster_of(dep)
    before = cluster.capacity()
    command = _drill("--replacement-delay-s", "900", "--max-duration-s", "3000")
    try:
        wait_for(lambda: _applied_fault(store), timeout_s=400, interval_s=0.5, what="the drill to fail a domain")
        halted = run_cli("halt", "--reason", "storage incident", "--wait-s", "120", "--json")
        out, err = command.communicate(timeout=300)
    finally:
        command.kill()
    assert halted.code == 0, halted.err
    doc = halted.json()
    assert doc["reason"] == "storage incident" and doc["still_drilling"] == []
    assert command.returncode == 1, err[-3000:]  # aborted, visibly
    report = json.loads(out)
    assert report["verdict"] == "aborted" and "halted by" in report["reasons"][0]
    drill = store.drills(JOB)[-1]
    assert drill["status"] == "aborted" and "halted" in drill["error"]
    assert cluster.capacity() == before and store.open_faults(JOB) == []
    refused = run_cli("drill", "job", JOB, "--replacement-delay-s", "5")
    assert refused.code == 3 and "experiments are halted" in refused.err and "storage incident" in refused.err
    doctor = run_cli("doctor", "--json")
    assert doctor.code == 1 and [f["what"] for f in doctor.json()["findings"]] == ["halted"]
    assert run_cli("resume").code == 0
    assert run_cli("doctor").code == 0 and store.halted() is None


def test_registering_a_running_job_again_says_it_applies_at_the_next_submission(job):
    """Issue 37 (item 9): re-registering a running job does not suggest `job start` (it already runs)."""
    from tests.live_jobs import registration

    dep, store = job
    res = run_cli(*registration(JOB, dep.input.parent, BASE), "--test-job")
    assert res.code == 0, res.err
    assert "its primary already runs" in res.out and f"`ftops job stop {JOB}`, then `ftops job start {JOB}`" in res.out
    assert "next: `ftops job start" not in res.out
    doc = run_cli(*registration(JOB, dep.input.parent, BASE), "--test-job", "--json").json()
    assert doc["primary_running"] is True


def test_job_protect_without_a_local_stack_registers_starts_and_says_what_waits_for_whom(job):
    """Issue 37 (item 2): ``ftops job protect`` where no local stack runs: registered, the primary running (here
    already), its first micro-batch seen, and the next step named for the job's apply mode; exit 0."""
    from tests.live_jobs import registration

    dep, store = job
    args = registration(JOB, dep.input.parent, BASE)[2:]
    res = run_cli("job", "protect", *args, "--test-job", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["local_stack"] is False and doc["primary"]["submitted"] is False and doc["first_batch_s"] >= 0
    assert doc["apply_mode"] == "auto" and doc["next"].startswith("ftops_profile_and_plan's next run (hourly)")
    refused = run_cli("job", "protect", *args, "--test-job", "--drill")
    assert refused.code == 2 and "--drill: a first drill runs through the local stack's Airflow" in refused.err


def test_job_protect_says_who_holds_the_standby_and_why_no_drill_ran(job, airflow):
    """Issue 37's new-user trial: after `make demo` the standby's one core was another job's, and `job protect` sat
    20 minutes in a failing plan run and said nothing; its drill was then refused (a lease the failed run kept) and
    it printed "drill #None: not recorded". Now it checks the standby before anything slow, names the holder and
    what to do; a plan run meeting a full standby (a scheduled one) fails its wait at its first try naming the holder, stops the
    replica and releases the job; a drill refused before it starts says why. (The way through, a standby worker
    added and the replica running on it, is the next test's.)"""
    from ft_core.cli.main import build_parser
    from ftops_provider.protect_cli import _first_drill, _plan_and_replica, _protected, protect
    from spark_jobs.cluster.web_ui import master_state
    from tests.live_jobs import registration, standby_holder

    dep, store = job
    said: list[str] = []
    with standby_holder(dep, "standby-holder"):
        flags = [*map(str, registration(JOB, dep.input.parent, BASE)[2:])]
        doc = protect(build_parser().parse_args(["job", "protect", *flags, "--no-add-worker"]), airflow, said.append)
        assert not _protected(doc, drilled=False) and "primary" not in doc  # stopped before starting anything
        assert "has 0 of 1 cores free" in doc["standby"] and "held by standby-holder (1 core)" in doc["standby"]
        assert "`ftops cluster add-worker --pool standby --domain standby`" in doc["standby"], doc["standby"]
        assert said[-1] == f"not started: {doc['standby']}"

        out = _plan_and_replica(airflow, dep.standby_ui, JOB, None, said.append)  # as a scheduled run meets it
        assert out["plan_run"] == "failed" and out["replica"]["state"] == "not running", out
        assert "wait_replica_running" in out["replica"]["why"] and "held by standby-holder (1 core)" in out["replica"]["why"]
        assert store.lease(JOB) is None and store.running_replica_plan(JOB) is None  # released; no replica recorded
        apps = {a["name"]: a["state"] for a in master_state(dep.standby_ui)["activeapps"]}
        assert apps.get("standby-holder") == "RUNNING" and not [n for n in apps if n.startswith(f"ftops-{JOB}-replica")]
        # the wait failed in its first try (a retry would wait the same way; it used to time out three times, 15
        # minutes, and leave the replica WAITING to run later unrecorded) and the run undid its change
        tis = airflow.task_instances("ftops_profile_and_plan", out["plan_run_id"])
        assert (tis["wait_replica_running"]["state"], tis["wait_replica_running"]["try_number"]) == ("failed", 1), tis
        assert tis["record_applied"]["state"] == "upstream_failed" and tis["undo_unapplied"]["state"] == "success"
        assert tis["watcher"]["state"] == "failed"
        [undone] = airflow.api("GET", f"/api/v2/dags/ftops_profile_and_plan/dagRuns/{out['plan_run_id']}/taskInstances/"
                                      "undo_unapplied/xcomEntries/return_value")["value"]
        assert undone["job"] == JOB

    store.acquire_lease(JOB, "recovery", "a test's recovery", ttl_s=600)
    try:
        drill = _first_drill(airflow, JOB, None, said.append, dep)
    finally:
        store.release_lease(JOB, "a test's recovery")
    assert drill["status"] == "not run" and drill["drill_id"] is None
    assert "busy" in drill["why"] and "a test's recovery" in drill["why"], drill
    assert said[-1].startswith("no drill ran (ftops_chaos_drill ")


def test_job_protect_through_airflow_adds_a_standby_worker_plans_the_job_and_starts_its_replica(job, airflow):
    """The local-stack path of ``ftops job protect`` on a real Airflow (this module's) and the job's real standby,
    whose one core another application holds (as after `make demo`): by default, on the stack's own cluster, a
    standby worker is added, ftops_profile_and_plan runs, the plan is stored and its replica runs on the standby
    master; the primary's failure domains are untouched."""
    from ft_core.cli.main import build_parser
    from ftops_provider.protect_cli import _protected, protect
    from tests.live_jobs import registration, standby_holder

    dep, store = job
    before = cluster_of(dep).capacity()
    said: list[str] = []
    with standby_holder(dep, "standby-holder"):
        args = build_parser().parse_args(["job", "protect", *map(str, registration(JOB, dep.input.parent, BASE)[2:])])
        doc = protect(args, airflow, said.append)
        assert _protected(doc, drilled=False) and doc["plan_run"] == "success", (doc, said)
        assert doc["standby_worker_added"].startswith("worker-standby-standby-"), doc
        assert any(m.startswith("the standby (") and "added standby worker" in m for m in said), said
    plan = store.current_plan(JOB, "replication")
    assert doc["plan"] == {"plan_id": plan["plan_id"], "output_fidelity": plan["objective"],
                           "tasks": sorted(plan["payload"]["tasks"])} and doc["plan"]["tasks"]
    assert doc["replica"]["state"] == "RUNNING", doc
    assert store.running_replica_plan(JOB)["plan_id"] == plan["plan_id"]
    assert doc["apply_mode"] == "auto"  # the local stack's default when neither --apply nor --test-job says
    assert said[0].startswith("the local stack: apply mode auto") and said[1].startswith("1/4 registered")
    assert any(m.startswith("4/4 plan #") and m.endswith("replica RUNNING") for m in said), said
    # while the run works, its progress names the tasks at work (a 20-minute wait said only "running")
    assert any(m.startswith("ftops_profile_and_plan: running (") and m.endswith(")") for m in said), said
    assert cluster_of(dep).capacity() == before  # the primary's failure domains are untouched


def test_a_primary_its_restarted_master_forgot_is_submitted_again_from_its_checkpoint(job):
    """A standalone master restarted without recovery forgets its running applications: the driver lives on with no
    executors (the self-chaos bench's spark-master-restarted left the job stalled). The repair every drill's finish,
    the safety net and `ftops doctor --repair` run stops that driver and submits the primary again from its
    checkpoint; `ftops doctor` lists it until then. Last in the module: it restarts the module's master."""
    from pathlib import Path

    from spark_jobs.cluster.standalone import restart_master
    from spark_jobs.cluster.web_ui import master_state
    from spark_jobs.drills.reconcile import ORPHAN_GRACE_S, make_whole
    from spark_jobs.runtime.job_streams import primary_app_name

    dep, store = job
    name = primary_app_name(JOB)

    def app() -> dict | None:
        return next((a for a in master_state(dep.primary_ui).get("activeapps", []) if a["name"] == name), None)

    before = app()
    assert before is not None and before["state"] == "RUNNING"
    restart_master(Path(dep.cluster_state), "primary", down_s=5)
    time.sleep(10)  # the driver's client would register again now if it could
    assert app() is None  # forgotten: the driver lives on without executors
    submitted = (dep.primary_output / "_submit.json").stat().st_mtime  # a driver this young may still be registering
    time.sleep(max(0.0, submitted + ORPHAN_GRACE_S + 1 - time.time()))
    doctor = run_cli("doctor", "--json")
    assert doctor.code == 1 and [(f["what"], f["job"]) for f in doctor.json()["findings"]] == [("orphaned primary", JOB)]
    repaired = run_cli("doctor", "--repair", "--json")  # no fault of the job is open: the orphan alone is repaired
    assert repaired.code == 0, repaired.out
    assert [(r["kind"], r["outcome"]) for r in repaired.json()["repairs"]] == [("primary", "resubmitted from its checkpoint")]
    wait_for(lambda: (a := app()) is not None and a["state"] == "RUNNING" and a["id"] != before["id"] or None,
             timeout_s=180, interval_s=2, what="the primary running again on the restarted master")
    assert cluster_of(dep).executor_domains(name)  # with executors again
    assert make_whole(store, JOB, by="test", driver_env={}) == []  # whole: nothing more to do
