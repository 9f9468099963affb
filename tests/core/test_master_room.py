"""Whether an application can get cores on a standalone master, and who holds them
(spark_jobs.cluster.master_room): the reading behind a replica wait that fails early naming the holders and
`ftops job protect`'s standby check. The states are shaped as a standalone master's ``/json/`` (the wait and the
check run on real masters in tests/airflow/test_dag_runs.py and tests/airflow/test_safety_net.py)."""

from __future__ import annotations

from spark_jobs.cluster.master_room import room
from spark_jobs.runtime.job_streams import app_job


def _state(workers, apps):
    return {"workers": [{"state": s, "cores": c, "coresused": u} for s, c, u in workers],
            "activeapps": [{"name": n, "state": st, "cores": c} for n, st, c in apps]}


def test_a_waiting_application_on_a_master_others_fill_is_told_who_holds_the_cores():
    state = _state([("ALIVE", 1, 1), ("DEAD", 4, 0)], [("ftops-topk-replica-p2", "RUNNING", 1),
                                                       ("ftops-shop-replica-p7", "WAITING", 0)])
    r = room(state, but="ftops-shop-replica-p7")
    assert (r.cores_free, r.cores_alive) == (0, 1)  # a dead worker's cores are nobody's
    assert not r.fits(1) and r.held_by_others
    assert r.why_not(1, "x", "the standby") == "the standby has 0 of 1 cores free and x needs 1: held by " \
                                               "ftops-topk-replica-p2 (1 core)"


def test_a_replica_to_be_replaced_counts_as_free_and_an_idle_application_holds_nothing():
    state = _state([("ALIVE", 2, 2)], [("ftops-shop-replica-p3", "RUNNING", 1), ("idle", "WAITING", 0),
                                       ("other", "RUNNING", 1)])
    r = room(state, also_free=("ftops-shop-replica-p3",))
    assert r.cores_free == 1 and r.fits(1) and r.holders == (("other", 1),)


def test_a_master_without_alive_workers_is_not_held_by_anyone_it_has_no_capacity():
    r = room(_state([("DEAD", 1, 0)], [("a", "WAITING", 0)]), but="b")
    assert not r.fits(1) and not r.held_by_others
    assert r.why_not(2, "b", "the standby") == "the standby has no alive worker; b needs 2 cores"


def test_the_job_of_an_application_is_read_from_ftops_names_only():
    assert [app_job(n) for n in ("ftops-topk-replica-p12", "ftops-topk-primary", "ftops-a-b-primary-t1.5",
                                 "ftops-topk-units-A", "standby-holder")] == ["topk", "topk", "a-b", None, None]
