"""The fleet-scale store benchmark (issue 33, item 4) on a small fleet, on the real PostgreSQL history store: the fill's
sizes follow its parameters, the fleet reads back through HistoryStore, and every listed store call is timed with a
parsed EXPLAIN. Nothing here depends on how fast the machine is."""

from __future__ import annotations

import pytest

from ft_core.bench.fleet_store import BIG_TABLE, CALLS, TARGET_MS, fill_fleet, measure_queries, plan_summary
from ft_core.errors import InputError
from ft_core.store.history import HistoryStore
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

# 50 jobs over 30 days (4 weeks): jobs 10, 20, ... plan-only (45 runnable); multiples of 5 have no drill schedule
# (40 drilled); runnable multiples of 3 are tuned (15: 3 ... 48 but 30), with one checkpoint plan (week 2); jobs 7
# and 8 drill now, job 8's lease expired; jobs 20 and 40 are the discovered plan-only ones (rates profiles).
JOBS, DAYS, WEEKS, RUNNABLE, DRILLED, TUNED = 50, 30, 4, 45, 40, 15


def test_the_fill_writes_what_its_parameters_say_and_the_store_reads_it_back(pg_conn):
    steps = []
    size = fill_fleet(pg_conn, jobs=JOBS, days=DAYS, progress=lambda step, rows: steps.append(step))
    rows = size.rows
    assert steps[0].startswith("ftops_job") and steps[-1] == "ftops_stream_progress"
    assert rows["ftops_job"] == JOBS
    assert rows["ftops_topology_version"] == JOBS * WEEKS
    assert rows["ftops_profile"] == (RUNNABLE + 2) * WEEKS
    assert rows["ftops_plan"] == JOBS * WEEKS + TUNED
    assert rows["ftops_checkpoint_validation"] == TUNED
    assert rows["ftops_drill"] == DRILLED * WEEKS + 2  # a drill a week, and the two running now
    assert rows["ftops_drill_window"] == 3 * DRILLED * WEEKS
    assert rows["ftops_fault"] == 2 * DRILLED * WEEKS + 2
    assert rows["ftops_lease"] == 2 and rows["ftops_domain_lock"] == 4
    assert rows["ftops_fleet_turn"] == DRILLED + TUNED
    assert rows["ftops_policy_change"] == JOBS  # 30 days: the registration only
    assert rows["ftops_stream_progress"] == RUNNABLE * 288 and rows["ftops_stream"] == RUNNABLE  # each one's newest (its trigger)
    assert rows["ftops_recovery_run"] == RUNNABLE and rows["ftops_recovery_stage"] == 3 * RUNNABLE  # 1 in 4 weeks
    assert rows["ftops_recovery_query"] == 2 * rows["ftops_recovery_run"]
    assert rows["ftops_applied_plan"] == RUNNABLE  # one in 4 weeks
    assert rows["ftops_event"] == (rows["ftops_plan"] + 2 * DRILLED * WEEKS + 2 + rows["ftops_fault"] + 2 * DRILLED * WEEKS
                                   + 2 * rows["ftops_recovery_run"] + rows["ftops_applied_plan"])

    store = HistoryStore(pg_conn)
    names = [j["name"] for j in store.jobs()]
    assert len(names) == JOBS and names[:2] == ["job-00001", "job-00002"]
    assert len(store.scheduled("drill")) == DRILLED and len(store.scheduled("tuning")) == TUNED
    assert store.job("job-00001")["deployment"]["pipeline"] == "topk" and store.job("job-00010")["deployment"] is None
    drills = store.drills("job-00001")
    assert len(drills) == WEEKS and all(len(d["windows"]) == 3 and d["status"] != "running" for d in drills)
    assert len(store.plans("job-00001", "replication")) == WEEKS
    assert len(store.faults("job-00001")) == 2 * WEEKS
    assert [(len(r["stages"]), len(r["queries"])) for r in store.recovery_runs("job-00001")] == [(3, 2)]
    assert store.latest_topology("job-00001")["version"] == WEEKS
    assert store.latest_profile("job-00020", "rates")["doc"]["rediscover"]
    assert sorted(f["job"] for f in store.open_faults()) == ["job-00007", "job-00008"]
    assert [f["job"] for f in store.orphaned_faults()] == ["job-00008"]  # its holder's lease expired
    assert {lock["job"] for lock in store.domain_locks()} == {"job-00007"}
    assert store.refusals().keys() == {"job-00003"}
    assert store.progress_since("ftops-job-00001-primary", 0).batches == 288
    with pytest.raises(InputError, match="empty history store"):
        fill_fleet(pg_conn, jobs=3, days=7)


def test_every_listed_store_call_is_timed_and_explained(pg_conn):
    fill_fleet(pg_conn, jobs=30, days=15)
    report = measure_queries(pg_conn, repeats=2)
    listed = [(side, page, name) for (side, page), calls in CALLS.items() for name, _ in calls]
    assert [(q.side, q.page, q.name) for q in report.queries] == listed
    for q in report.queries:
        assert q.median_ms >= 0 and q.runs in (1, 2) and q.statements >= 1, q.name
        assert q.explain and all("Plan" in p and "Execution Time" in p for p in q.explain), q.name
        assert q.node_types and q.index_backed == (not q.seq_scans), q.name
    by_name = {(q.page, q.name): q for q in report.queries}
    assert by_name[("jobs page", "fleet_states()")].statements == 1  # every job's state in one query ...
    assert by_name[("jobs page", "fleet_states()")].rows == 30  # ... one row per job
    assert by_name[("jobs page", "fleet_overview(100 names)")].rows == 30  # the page's jobs (all 30 here)
    assert by_name[("ftops job list", "job_kinds()")].rows == 30
    assert by_name[("job page", "recovery_runs(job)")].statements == 3
    assert by_name[("job page", "drills(job)")].rows == 2 + 2 * 3  # 2 drills, their windows
    assert by_name[("ftops_chaos_drill due_jobs", "pick('drill', due jobs)")].rows > 0
    pages = {(p.side, p.page): p for p in report.pages}
    assert list(pages) == list(CALLS)
    job_page = pages[("ui", "job page")]
    assert job_page.total_ms == pytest.approx(sum(q.median_ms for q in report.queries if q.page == "job page"), abs=0.01)
    assert job_page.within_target == (job_page.total_ms <= TARGET_MS)


def test_a_seq_scan_is_flagged_only_on_a_big_table():
    plan = {"Plan": {"Node Type": "Nested Loop", "Plans": [
        {"Node Type": "Seq Scan", "Relation Name": "ftops_profile", "Actual Rows": 1, "Rows Removed by Filter": 9,
         "Actual Loops": 1},
        {"Node Type": "Index Scan", "Relation Name": "ftops_job", "Index Name": "ftops_job_name_key", "Actual Rows": 1,
         "Actual Loops": 3}]}}
    big = plan_summary([plan], {"ftops_profile": BIG_TABLE + 1, "ftops_job": 5})
    assert big["seq_scans"] == ["ftops_profile"] and not big["index_backed"] and big["rows_read"] == 10
    assert big["indexes"] == ["ftops_job_name_key"] and big["node_types"] == ["Index Scan", "Nested Loop", "Seq Scan"]
    small = plan_summary([plan], {"ftops_profile": BIG_TABLE, "ftops_job": 5})
    assert small["seq_scans"] == [] and small["index_backed"]


def test_job_kinds_reads_every_jobs_kind_in_one_query_as_the_pages_did_one_by_one(pg_conn):
    """The jobs page and ``ftops job list`` read every job's kind with one query (``job_kinds``), where they made one
    per job (a store call per job: 1.7 s at 5,000 jobs); same answer as the per-job reads."""
    fill_fleet(pg_conn, jobs=JOBS, days=DAYS)
    store = HistoryStore(pg_conn)
    kinds = store.job_kinds()
    assert list(kinds) == sorted(j["name"] for j in store.jobs())
    for name, info in kinds.items():
        dep = store.job(name)["deployment"]
        assert info["deployment"] == (None if dep is None else dep.get("kind", "runnable"))
        profile = store.latest_profile(name, "rates") if dep is None else None
        assert info["rediscover"] == ((profile or {}).get("doc") or {}).get("rediscover")
    assert sum(1 for i in kinds.values() if i["rediscover"]) == 2  # jobs 20 and 40 were discovered
    assert store.job_kinds("job-00020") == {"job-00020": kinds["job-00020"]}
    assert store.job_kinds(["job-00020", "job-00003", "job-99999"]) == {n: kinds[n] for n in ("job-00003", "job-00020")}
    assert store.job_kinds([]) == {}
    assert store.has_job("job-00001") and not store.has_job("job-99999")


def test_the_jobs_pages_two_reads_agree_with_each_other(pg_conn):
    """``fleet_states`` (every job, the page's deciding columns) says of each job what ``fleet_overview`` (the page's
    rows in full, all of them or a list) says; a list reads those jobs only, by name."""
    fill_fleet(pg_conn, jobs=JOBS, days=DAYS)
    store = HistoryStore(pg_conn)
    states, full = store.fleet_states(), store.fleet_overview()
    assert [r["job"] for r in states] == [r["job"] for r in full] == sorted(j["name"] for j in store.jobs())
    for short, long in zip(states, full):
        assert short == {k: long[k] for k in short}, short["job"]
    assert sum(1 for r in states if r["experiment"]) == 1  # job 7's live drill (job 8's lease expired)
    assert sum(1 for r in states if r["last_batch_at"] is not None) == sum(1 for r in full if r["workload"] != "plan-only")
    some = store.fleet_overview(["job-00030", "job-00007", "job-99999"])
    assert some == [r for r in full if r["job"] in ("job-00007", "job-00030")] and store.fleet_overview([]) == []


def test_bench_fleet_quick_writes_its_four_sections_on_a_private_store_it_removes(tmp_path):
    """``ftops bench fleet --quick`` end to end: the planner table and plot, the store's calls with their EXPLAIN
    verdicts, the max_map_length runs (deterministic: 60 due jobs, 16 a run, 4 runs, none twice) and the retention
    prune; its PostgreSQL is its own, stopped and removed afterwards. No figure of speed is asserted."""
    from tests.conftest import ROOT, assert_plot, run_cli
    from tests.store_fixtures import TEST_PORT

    home = ROOT / ".state" / f"test-bench-home-{TEST_PORT}"  # under the project: the server's user must reach it
    out = tmp_path / "fleet.md"
    try:
        res = run_cli("bench", "fleet", "--quick", "--out", out, "--json", env={"FTOPS_HOME": str(home)}, timeout=600)
        assert res.code == 0, res.err
        report = res.json()["report"]
        assert report == out.read_text()
        for policy in ("staged", "density", "fifo"):
            assert f"| 200 | 44 | {policy} |" in report
        assert "| ui | jobs page | `fleet_states()` |" in report and "| dag | ftops_chaos_drill due_jobs |" in report
        # 60 jobs, the 2 drilling now not due: 58, 16 a run; the last run takes 6 again, after every job had its turn
        assert "58 jobs due for a drill at once, `max_map_length` 16: scheduled runs took 16, 16, 16, 16 jobs (4 runs), " \
               "58 distinct, 0 picked twice before all once. Target: every due job operated, in 4 runs: **met**." in report
        assert "## 4. Retention: the safety net's prune at this size" in report
        assert "; the next one, as every later run finds the store, deleted 0 and 0 in" in report  # idempotent
        assert_plot(tmp_path / "fleet-planner.svg", report, "Predicted weighted mean time back", "staged", "fifo")
        assert not (home / "bench-fleet-postgres").exists()
    finally:
        import shutil

        shutil.rmtree(home, ignore_errors=True)
