"""The "Fault tolerance" view: registered as an Airflow plugin, behind Airflow's authentication,
showing plan history, topology, plan diffs, drills and recovery runs from the real PostgreSQL history
store (written through the store API the DAGs use)."""

from __future__ import annotations

import re
import time
from datetime import timezone
from urllib.parse import quote

import pytest

from ft_core.store.experiments import ExperimentReport
from ft_core.store.history import JobSpec
from ft_core.store.stream_progress import BatchProgress
from tests.conftest import ROOT
from tests.console_fixtures import chart_options, chart_series, drill_windows, seed_history, ui  # noqa: F401 - a fixture
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

ROUTES = ("/", "/jobs/topk", "/jobs/topk/diff?a=1&b=2", "/api/jobs/topk/plans", "/api/jobs/topk/drills",
          "/api/jobs/topk/recovery-runs", "/api/jobs/topk/diff?a=1&b=2", "/jobs/topk/recovery-runs/1",
          "/api/jobs/topk/recovery-runs/1/experiment", "/api/jobs/topk/faults", "/api/halt",
          "/runs/ftops_chaos_drill/manual__d1", "/api/jobs/topk/progress", "/api/jobs/topk/fleet-recoveries",
          "/jobs/topk/last-hour", "/fleet", "/jobs/topk/activity")


def test_unauthenticated_requests_are_refused(ui):
    client, _, _ = ui
    for path in ROUTES:
        refused = client.get(path)
        assert refused.status_code == 401, path
        assert refused.json() == {"detail": "Not authenticated"}  # API clients get Airflow's JSON error
        assert "topk" not in refused.text


def test_a_refused_browser_gets_a_login_link_and_no_content(ui):
    client, _, _ = ui
    page = client.get("/jobs/topk", headers={"Accept": "text/html"})
    assert page.status_code == 401 and "<svg" not in page.text and "Drills" not in page.text
    login = re.search(r"id='login' href='([^']+)'", page.text).group(1)
    assert login.startswith("/auth/login?next=") and "ftops" not in login.split("?")[0]
    client.cookies.set("_token", "not-a-token")
    forged = client.get("/jobs/topk", headers={"Accept": "text/html"})
    assert forged.status_code == 403 and "<svg" not in forged.text and "id='login'" in forged.text


def test_job_page_shows_history_topology_and_diff(ui):
    client, token, _ = ui
    client.cookies.set("_token", token)
    index = client.get("/")
    assert index.status_code == 200 and "jobs/topk" in index.text
    page = client.get("/jobs/topk")
    assert page.status_code == 200
    history = chart_options(_section(page.text, "history"))["history"]
    assert chart_series(history, "predicted output fidelity") == [pytest.approx(0.25), pytest.approx(0.5595, abs=1e-4)]
    topology = chart_options(_section(page.text, "topology"))["topology"]
    nodes = topology["series"][0]["data"]
    assert len(nodes) == 13  # the 13 tasks of Q1
    assert sum(n["category"] == 0 for n in nodes) == 8  # the current plan's replicated tasks, filled
    assert "Current plan" in page.text and "proven optimal" in page.text
    assert "id='diff'" in page.text and "class='added'" in page.text
    plans = client.get("/api/jobs/topk/plans").json()
    assert [round(p["objective"], 4) for p in plans] == [0.25, 0.5595]
    assert client.get("/jobs/unknown").status_code == 404


def test_the_job_page_shows_its_last_hour_of_lag_and_throughput_and_an_attached_jobs_queries(ui):

    client, token, ids = ui
    client.cookies.set("_token", token)
    store = ids["store"]
    now = time.time()
    # alerts' primary: a batch of 500 rows every 5 s for 20 minutes, 8 s behind, then 40 s behind; nothing for the
    # 3 minutes before the last two batches (it was down); and an older batch, two hours ago, not drawn
    store.register_job(JobSpec(name="alerts", workload="topk", deployment={"pipeline": "topk", "root": "/tmp/alerts"}))
    # its first batch alone in its minute, whatever the seconds between this `now` and the page's (a loaded machine)
    ends = [now - 1500] + [now - 1430 + 5 * i for i in range(239)] + [now - 90, now - 30]
    for i, end in enumerate([now - 7200, *ends]):
        lag_s = 40 if end > now - 600 else 8
        mark = 0 if i == 1 else 1_000_000  # before its first window closed, Spark reports the epoch: no lag yet
        store.record_batch(BatchProgress(stream="ftops-alerts-primary", app_id="a", batch_id=i, batch_end=end,
                                         input_rows=500, watermark_ms=mark, input_watermark_ms=1_000_000 + lag_s * 1000))
    store.register_job(JobSpec(name="clicks", workload="attached", deployment={"kind": "attached"}))
    for query in ("per-region", "totals"):
        for i in range(3):
            store.record_batch(BatchProgress(stream=f"ftops-clicks-{query}", app_id="b", batch_id=i, role="attached",
                                             job="clicks", batch_end=now - 100 + 30 * i, input_rows=60))
    page = client.get("/jobs/alerts").text
    live = _section(page, "last-hour")
    charts = chart_options(live)
    assert set(charts) == {"lag", "rate"} and "Lag: output behind input" in live and "rows read per second" in live
    # the lag line breaks where the job was down: a run before the stop, and the two batches after it
    lag = chart_series(charts["lag"], "primary")
    assert [v for _, v in lag].count(None) == 1 and lag[-1][1] == lag[-2][1] == 40
    assert charts["lag"]["xAxis"]["type"] == "time" and lag[-1][0] <= charts["lag"]["xAxis"]["max"]
    now_line = _section(page, "live-now", "p")
    assert re.search(r"primary: 40 s behind \(peak 40 s\), [\d.]+ rows/s in its newest minute", now_line), now_line
    minutes = client.get("/api/jobs/alerts/progress", params={"minutes": 60}).json()
    assert {m["stream"] for m in minutes} == {"ftops-alerts-primary"}
    full = [m for m in minutes if m["batches"] == 12]  # a whole minute of batches every 5 s: 6,000 rows, 100 rows/s
    assert len(full) >= 18 and all(m["rows_per_s"] == 100.0 for m in full)
    assert sum(m["batches"] for m in minutes) == len(ends)  # the batch of two hours ago is not in the hour
    lags = [m["max_lag_s"] for m in minutes]
    assert lags[0] is None and max(lags[1:]) == 40.0 and min(lags[1:]) == 8.0  # its first minute: the epoch's batch
    # an attached job: one line per query, named by the query
    attached = _section(client.get("/jobs/clicks").text, "last-hour")
    assert [s["name"] for s in chart_options(attached)["rate"]["series"]] == ["clicks-per-region", "clicks-totals"]
    store.register_job(JobSpec(name="idle", workload="topk", deployment={"pipeline": "topk", "root": "/tmp/idle"}))
    assert "No micro-batch of this job in the last week" in _section(client.get("/jobs/idle").text, "last-hour")
    plan_only = client.get("/jobs/topk").text  # no streams: no last hour, and no link to one
    assert "id='last-hour'" not in plan_only and "#live" not in plan_only
    assert client.get("/api/jobs/alerts/progress", params={"minutes": 0}).status_code == 422
    assert client.get("/api/jobs/nobody/progress").status_code == 404


def test_drills_chart_has_both_series_and_one_row_per_drill(ui):
    client, token, ids = ui
    client.cookies.set("_token", token)
    page = client.get("/jobs/topk").text
    chart = chart_options(_section(page, "drill-chart"))["drills"]
    assert None not in chart_series(chart, "predicted output fidelity")  # every drill has its plan's prediction
    # the running drill is not measured yet
    assert chart_series(chart, "measured tentative accuracy") == [pytest.approx(0.6), pytest.approx(0.25), None]
    assert chart["xAxis"]["data"] == [f"#{i}" for i in ids["drills"]]
    assert page.count("<tr class='drill") == 3 and "<tr class='drill failed'>" in page
    activity = client.get("/jobs/topk/activity").text  # what the open page redraws: the same rows
    assert activity.count("<tr class='drill") == 3 and "<div id='activity'>" in activity and "id='faults'" in activity
    drills = client.get("/api/jobs/topk/drills").json()
    assert [d["drill_id"] for d in drills] == ids["drills"]
    assert [len(d["windows"]) for d in drills] == [3, 2, 0] and [d["status"] for d in drills] == ["passed", "failed", "running"]
    assert drills[0]["tentative_accuracy"] == pytest.approx(0.6)
    assert drills[0]["prediction_error"] == pytest.approx(abs(0.6 - 0.5595), abs=1e-4)
    assert drills[1]["lost_windows"] == 2 and drills[1]["output_equals_reference"] is False
    assert drills[2]["tentative_accuracy"] is None and drills[2]["predicted_output_fidelity"] == pytest.approx(0.5595, abs=1e-4)
    # Only a drill whose experiment report was written links to its page: no link that answers 404.
    passed, failed, running = ids["drills"]
    assert [d["has_report"] for d in drills] == [True, False, False]
    assert f"<a href='topk/drills/{passed}'>#{passed}</a>" in page and client.get(f"/jobs/topk/drills/{passed}").status_code == 200
    rows = _section(page, "drill-rows", tag="table")
    assert drills[0]["predicted_caught_up_s"] == 41.5 and drills[1]["predicted_caught_up_s"] is None
    assert "<td>41.5 s</td><td>35.0 s</td>" in rows  # the forecast beside the measurement
    for other in (failed, running):
        assert f"<a href='topk/drills/{other}'>" not in rows and f">#{other}</span>" in rows
        assert client.get(f"/jobs/topk/drills/{other}").status_code == 404


def test_recovery_runs_are_drawn_as_stage_timelines_with_query_markers(ui):
    client, token, ids = ui
    client.cookies.set("_token", token)
    page = client.get("/jobs/topk").text
    done_html, running_html = (_section(page, f"run-{i}", tag="section class='run'") for i in ids["runs"])
    done_run, running_run = (chart_options(html)[f"run-{i}"] for html, i in zip((done_html, running_html), ids["runs"]))
    assert len(chart_series(done_run, "done", "custom")) == 3 and len(chart_series(done_run, "waiting for capacity")) == 3
    queries = chart_series(done_run, "query available again", "scatter")
    assert len(queries) == 3 and "Q2 available again after 33.5 s (priority 1)" in [q["name"] for q in queries]
    starts = [bar["value"][1] for bar in chart_series(done_run, "done", "custom")]
    assert starts == sorted(starts) and len(set(starts)) == 3  # stages restart one after the other
    assert len(chart_series(running_run, "done", "scatter")) == 1  # done without a recorded start: a mark at its finish
    assert len(chart_series(running_run, "waiting for capacity")) == 1 and "stage 3 (pending)" in running_run["yAxis"]["data"]
    assert len(chart_series(running_run, "not available again")) == 1
    assert "Q2 available again after 33.5 s" in done_html  # in its data table, too
    runs = client.get("/api/jobs/topk/recovery-runs").json()
    assert [r["run_id"] for r in runs] == ids["runs"] and [r["status"] for r in runs] == ["succeeded", "running"]
    assert [s["status"] for s in runs[1]["stages"]] == ["done", "waiting", "pending"]
    assert [q["recovered_s"] for q in runs[0]["queries"]] == [16.0, 33.5, 42.0]

    # A finished run links its experiment report (a page and JSON); a running one has none yet.
    done, running = ids["runs"]
    assert f"<a href='topk/recovery-runs/{done}'>#{done}</a>" in page
    run_rows = _section(page, "run-rows", tag="table")
    assert f"<a href='topk/recovery-runs/{running}'>" not in run_rows and f">#{running}</span>" in run_rows
    assert [r["has_report"] for r in runs] == [True, False]
    report = client.get(f"/jobs/topk/recovery-runs/{done}")
    assert report.status_code == 200 and f"recovery #{done} of topk: passed" in report.text
    assert "Q2 available again" in report.text and "predicted_back_s" in report.text
    doc = client.get(f"/api/jobs/topk/recovery-runs/{done}/experiment").json()
    assert doc["verdict"] == "passed" and doc["measurements"]["predicted_back_s"] == {"Q2": 30.0}
    missing = client.get(f"/jobs/topk/recovery-runs/{running}")
    assert missing.status_code == 404 and "has no experiment report" in missing.text
    assert client.get(f"/api/jobs/other/recovery-runs/{done}/experiment").status_code == 404


def test_a_jobs_fleet_recoveries_are_on_its_page_in_its_api_and_on_the_runs_tab(ui):
    client, token, ids = ui
    client.cookies.set("_token", token)
    store = ids["store"]
    assert "Not in a fleet recovery yet" in client.get("/jobs/topk").text
    failed = time.time() - 300
    inputs = {"job": "topk", "priority": 3.0, "cores": 1, "input_rate": 50.0, "processing_rate": 100.0,
              "restart_s": 20.0, "resume_s": 5.0, "pending_s": 3.0, "held": False,
              "sources": {"streams": ["ftops-topk-primary"], "steady_lag_s": 2.0}}
    run = store.open_fleet_recovery("manual__f1", "staged", failed, {"order_rule": "density"},
                                    [{"job": "topk", "priority": 3.0, "stage": 1, "planned_start_s": 30.0,
                                      "planned_back_s": 73.0, "inputs": inputs}])
    store.fleet_restarted(run, "topk", failed + 31, predicted_back_s=74.0)
    store.fleet_back(run, "topk", failed + 92.5, restart_delay_s=6.0)
    store.finish_fleet_recovery(run, "done", "every job back")
    rows = _section(client.get("/jobs/topk").text, "fleet-recoveries", tag="table")
    cells = re.findall(r"<td>(.*?)</td>", rows)
    assert cells[0] == f"#{run}" and cells[2:] == ["staged", "<span class='ok'>done</span>", "3", "1", "31.0 s",
                                                    "73.0 s", "74.0 s", "92.5 s", "+25%"]
    [api] = client.get("/api/jobs/topk/fleet-recoveries").json()
    assert api["run_id"] == run and api["measured_back_s"] == pytest.approx(92.5, abs=0.01)
    assert api["inputs"]["sources"]["streams"] == ["ftops-topk-primary"]
    tab = client.get("/runs/ftops_fleet_recovery/manual__f1")
    assert re.findall(r"<li>(.*?)</li>", tab.text) == [
        f"fleet recovery #{run} of <a href='../../jobs/topk#fleet-recovery'>topk</a>: done"]


def test_any_two_plans_can_be_compared(ui):
    client, token, ids = ui
    client.cookies.set("_token", token)
    a, b = ids["plans"]
    diff = client.get(f"/api/jobs/topk/diff?a={a}&b={b}").json()
    assert diff["objective_change"] == pytest.approx(0.5595 - 0.25, abs=1e-4)
    assert diff["parameters_changed"] == {"budget": [4, 8]} and len(diff["added_tasks"]) >= 4
    back = client.get(f"/api/jobs/topk/diff?a={b}&b={a}").json()
    assert back["added_tasks"] == diff["removed_tasks"] and back["removed_tasks"] == diff["added_tasks"]
    page = client.get(f"/jobs/topk/diff?a={a}&b={b}")
    assert page.status_code == 200 and f"Changes from plan #{a} to #{b}" in page.text
    assert page.text.count("class='added'") == len(diff["added_tasks"])
    store = ids["store"]
    store.register_job(JobSpec(name="other", workload="topk"))
    recovery = store.save_plan("topk", "recovery", algorithm="order-then-pack", objective=12.0, optimal=False,
                               payload={"schedule": {}}, input_hash="r1").plan_id
    assert client.get(f"/api/jobs/other/diff?a={a}&b={b}").status_code == 404
    assert client.get(f"/api/jobs/topk/diff?a={a}&b={recovery}").status_code == 400
    assert client.get(f"/jobs/topk/diff?a={a}").status_code == 422


def test_a_job_in_a_url_must_be_a_name(ui):
    """Names are identifiers (ft_core.input.names): a URL's job that is not one is refused with 400 and the rule,
    before the store is read; a well-formed name that is not registered is 404; authentication comes first."""
    from urllib.parse import quote

    client, token, _ = ui
    hostile = ["<img src=x onerror=alert(1)>", " ", "x" * 3000, "-rf", "topk\n", "a\"b"]
    assert client.get(f"/jobs/{quote(hostile[0], safe='')}").status_code == 401
    client.cookies.set("_token", token)
    for name in hostile:
        for route in ("/jobs/{}", "/jobs/{}/drills/1", "/api/jobs/{}/plans", "/api/jobs/{}/diff?a=1&b=2",
                      "/api/jobs/{}/recovery-runs", "/api/jobs/{}/recovery-runs/1/experiment"):
            refused = client.get(route.format(quote(name, safe="")))
            assert refused.status_code == 400, (route, name[:20])
            assert "job name" in refused.json()["detail"] and "is not an identifier" in refused.json()["detail"]
    assert client.get("/jobs/unknown-job").status_code == 404


def test_the_pages_say_which_jobs_are_plan_only_and_why(ui):
    """A job discovered from a Spark UI (recorded answers of a real job) and one registered from a topology
    document are plan-only, each for its own reason; a job with a deployment is runnable."""
    from spark_jobs.discovery.measured_topology import discover
    from spark_jobs.discovery.rest_client import RecordedRestApi

    client, token, ids = ui
    client.cookies.set("_token", token)
    store = ids["store"]
    recording = ROOT / "tests" / "data" / "discovery" / "broadcast-join.json.gz"
    found = discover(RecordedRestApi.load(recording), last_batches=4, name="plain")
    store.register_job(JobSpec(name="plain", workload="discovered"))
    store.save_profile("plain", "rates", {**found.profile(), "topology_id": store.save_topology("plain", found.topology)})
    store.register_job(JobSpec(name="ours", workload="topk", deployment={"pipeline": "topk", "root": "/tmp/ours"}))
    rows = dict(re.findall(r"<tr><td><a href='jobs/([^']+)'>[^<]*</a></td>(.*?)</tr>", client.get("/").text))
    assert f"<td>plan-only: discovered from the Spark UI at {found.spark_ui}</td>" in rows["plain"]
    assert "<td>plan-only: from a topology document</td>" in rows["topk"]
    assert "<td>runnable</td>" in rows["ours"]
    page = client.get("/jobs/plain").text
    assert f"<p id='kind'><b>plan-only</b>: discovered from the Spark UI at {found.spark_ui}, not written" in page
    assert "cannot run a replica of it" in page
    assert "<p id='kind'><b>plan-only</b>: registered from a topology document" in client.get("/jobs/topk").text


def test_the_plugin_is_registered_through_its_entry_point():
    from airflow import plugins_manager

    apps, _ = plugins_manager.get_fastapi_plugins()
    assert any(a["url_prefix"] == "/ftops" for a in apps)
    views, _ = plugins_manager._get_ui_plugins()
    assert any(v["name"] == "Fault tolerance" and v["href"] == "/ftops/" for v in views)


def _section(page: str, ident: str, tag: str = "section") -> str:
    """The HTML of ``<{tag} id='{ident}'>...</{tag}>`` (the tag's name closes it)."""
    start = page.index(f"<{tag} id='{ident}'>")
    return page[start:page.index(f"</{tag.split()[0]}>", start)]


def test_the_pages_show_the_halt_and_the_jobs_fault_journal(ui):
    client, token, seeded = ui
    store = seeded["store"]
    auth = {"Authorization": f"Bearer {token}"}
    holder = "command ftops drill job topk (pid 1 on vm)"
    store.acquire_lease("topk", "drill", holder, ttl_s=300)
    undone = store.open_fault("topk", "drill", seeded["drills"][0], holder, "domain_down", "rack-a",
                              {"seam": "standalone", "domain": "rack-a", "workers": []}, undo_within_s=600)
    store.close_fault(undone, "safety net ftops_safety_net/scheduled__1", "worker-primary-rack-a-7102 joined rack-a")
    still = store.open_fault("topk", "drill", seeded["drills"][2], holder, "driver_killed", "ftops-topk-primary",
                             {"seam": "streams", "role": "primary"}, undo_within_s=600)
    page = client.get("/jobs/topk", headers=auth).text
    journal = page[page.index("id='faults'"):]
    assert f"#{undone}" in journal and "joined rack-a" in journal and "safety net ftops_safety_net" in journal
    assert f"<tr class='bad'><td>#{still}</td>" in journal and "OPEN (undo by" in journal  # an open fault stands out
    assert [f["fault_id"] for f in client.get("/api/jobs/topk/faults", headers=auth).json()] == [still, undone]
    assert "id='halted'" not in page and client.get("/api/halt", headers=auth).json() == {"halted": False}
    store.halt("<script>alert(1)</script> game day", "ops")
    for route in ("/", "/jobs/topk"):
        banner = client.get(route, headers=auth).text
        assert "id='halted'" in banner and "&lt;script&gt;" in banner and "<script>alert" not in banner
    assert client.get("/api/halt", headers=auth).json()["reason"] == "<script>alert(1)</script> game day"


def test_a_user_who_may_change_dag_runs_halts_and_resumes_from_the_console_and_a_viewer_cannot(ui):
    """Issue 35 (item 3) and 36: the Halt button. Halting records the halt (every running drill reads it on its next
    poll, aborts and undoes its faults: tests/airflow/test_safety_net.py); only users who may change DAG runs may."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    client, token, seeded = ui
    store = seeded["store"]
    auth = {"Authorization": f"Bearer {token}"}
    viewer = {"Authorization": "Bearer " + get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="vic", role="VIEWER"))}
    page = client.get("/", headers=auth).text
    assert "id='halt-form'" in page and "id='resume-form'" not in page
    assert client.post("/api/halt", json={"reason": "game day"}, headers=viewer).status_code == 403
    assert client.delete("/api/halt", headers=viewer).status_code == 403
    assert client.post("/api/halt", json={"reason": "game day"}).status_code == 401
    assert client.post("/api/halt", json={"reason": ""}, headers=auth).status_code == 422
    assert client.post("/api/halt", json={"reason": "   "}, headers=auth).status_code == 422
    assert store.halted() is None  # nothing refused changed anything

    doc = client.post("/api/halt", json={"reason": "rack-b maintenance"}, headers=auth).json()
    assert doc["halted"] and doc["reason"] == "rack-b maintenance" and doc["halted_by"] == "admin (the Airflow UI)"
    assert store.halted()["reason"] == "rack-b maintenance"
    again = client.post("/api/halt", json={"reason": "another"}, headers=auth).json()
    assert again["reason"] == "rack-b maintenance"  # the standing halt is kept
    page = client.get("/", headers=auth).text
    assert "id='halted'" in page and "id='resume-form'" in page and "id='halt-form'" not in page
    ended = client.delete("/api/halt", headers=auth).json()
    assert ended["halted"] is False and ended["ended"]["reason"] == "rack-b maintenance" and store.halted() is None


def test_the_halt_form_posts_only_from_the_page_itself(ui):
    client, token, seeded = ui
    store = seeded["store"]
    auth = {"Authorization": f"Bearer {token}"}
    for headers in ({}, {"Origin": "https://evil.example"}, {"Referer": "https://evil.example/x"}):
        refused = client.post("/halt", data={"reason": "csrf"}, headers={**auth, **headers}, follow_redirects=False)
        assert refused.status_code == 403 and store.halted() is None, headers
    own = {**auth, "Origin": "http://testserver"}
    assert client.post("/halt", data={"reason": ""}, headers=own, follow_redirects=False).status_code == 422
    done = client.post("/halt", data={"reason": "zone a flapping"}, headers=own, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/"  # no page named: the jobs page
    assert store.halted()["reason"] == "zone a flapping" and store.halted()["halted_by"] == "admin (the Airflow UI)"
    assert client.post("/resume", headers={**auth, "Referer": "https://evil.example/"}).status_code == 403
    assert store.halted() is not None
    back = client.post("/resume", headers={**auth, "Referer": "http://testserver/jobs/topk"}, follow_redirects=False)
    assert back.status_code == 303 and store.halted() is None
    assert back.headers["location"] == "/jobs/topk"  # back to the page it was posted from (a job's has the form too)
    for referer in ("http://testserver//evil.example/x", "http://testserver/\\evil.example"):  # never off the server
        halted = client.post("/halt", data={"reason": "again"}, headers={**own, "Referer": referer}, follow_redirects=False)
        assert halted.status_code == 303 and halted.headers["location"] == "/", referer
        assert client.post("/resume", headers={**own, "Referer": referer}, follow_redirects=False).headers["location"] == "/"
    assert "id='halt-form'" in client.get("/jobs/topk", headers=auth).text


def test_the_jobs_page_shows_the_fleet_at_a_glance(ui):
    """Per job: the experiment holding it now, its primary's newest micro-batch and lag, its current plan's OF, its
    newest and next drill, its priority, and why a scheduled drill skipped it since; three store queries for the fleet
    (store.fleet_overview: one)."""
    from datetime import datetime

    from ft_core.fleet.schedules import next_fire
    from ft_core.store.stream_progress import BatchProgress

    client, token, ids = ui
    client.cookies.set("_token", token)
    store = ids["store"]
    store.register_job(JobSpec(name="alerts", workload="topk", deployment={"pipeline": "topk", "root": "/tmp/alerts"}))
    store.set_policy("alerts", {"drill_schedule": "@daily", "priority": 3}, "test")
    store.acquire_lease("alerts", "recovery", "dag run ftops_incremental_recovery/manual__1", ttl_s=600)
    store.refuse("drill", "alerts", "no cluster state in /srv/spark; run `ftops cluster up` first")
    now = time.time()
    store.record_batch(BatchProgress(stream="ftops-alerts-primary", app_id="app-1", batch_id=7, batch_end=now - 30,
                                     watermark_ms=int(now * 1000) - 50_000, input_watermark_ms=int(now * 1000) - 20_000))
    rows = dict(re.findall(r"<tr><td><a href='jobs/([^']+)'>[^<]*</a></td>(.*?)</tr>", client.get("/").text))
    alerts = re.findall(r"<td>(.*?)</td>", rows["alerts"])
    assert alerts.pop(0) == "experiment"  # its state: the recovery holds it
    assert alerts[3] == "recovery by dag run ftops_incremental_recovery/manual__1"
    assert re.fullmatch(r"last batch (29|3\d) s ago, 30 s behind its input", alerts[4]), alerts[4]
    assert alerts[5:7] == ["-", "never"]
    midnight = next_fire("@daily", datetime.now(timezone.utc))
    assert alerts[7] in (f"{midnight:%Y-%m-%d %H:%M} UTC (@daily)", "due (@daily)")
    assert alerts[8:] == ["3", "no cluster state in /srv/spark; run `ftops cluster up` first", "-"]  # no approval waits
    topk = re.findall(r"<td>(.*?)</td>", rows["topk"])
    assert topk.pop(0) == "no progress"  # a drill row still running, but no lease holds it, and no batch recorded
    assert topk[3:5] == ["-", "no progress recorded"]
    plan = store.current_plan("topk", "replication")  # budget 8's plan: 8 tasks replicated, accuracy not estimated
    assert topk[5] == f"OF {plan['objective']:.3f}, 8 replicated tasks" and len(plan["payload"]["tasks"]) == 8
    newest = store.drills("topk")[-1]  # its drills passed, failed, and one still running: the newest
    when = newest["started_at"].astimezone(timezone.utc)
    assert topk[6] == f"running, {when:%Y-%m-%d %H:%M} UTC" and newest["status"] == "running"
    assert topk[7:] == ["by hand only", "1", "-", "-"]
    # its newest drill measured against its prediction, and a plan's predicted accuracy once estimated
    store.finish_drill(newest["drill_id"], {"predicted_output_fidelity": 0.5595, **drill_windows(int(now * 1000), [0.8, 0.9]),
                                            "lost_windows": 0, "duplicated_windows": 0}, "passed")
    store.record_predicted_accuracy(plan["plan_id"], {"tasks": plan["payload"]["tasks"], "mean": 0.8123, "stdev": 0.01,
                                                      "min": 0.8, "max": 0.82, "windows": 2, "sample": "test"})
    topk = re.findall(r"<td>(.*?)</td>", dict(re.findall(r"<tr><td><a href='jobs/([^']+)'>[^<]*</a></td>(.*?)</tr>",
                                                          client.get("/").text))["topk"])[1:]
    assert topk[5] == f"OF {plan['objective']:.3f}, accuracy 0.81 predicted, 8 replicated tasks"
    assert topk[6] == f"passed, {when:%Y-%m-%d %H:%M} UTC; accuracy 0.85 measured vs OF 0.56"


def test_the_jobs_page_redraws_its_fleet_from_the_same_filter_and_names_each_jobs_approvals(ui):
    """The open jobs page fetches its counts, table and pager alone (``/fleet`` with the page's own filter) every
    20 s; an approval request counts for each job its body names (both of ftops's requests name them in bold)."""
    from ftops_provider.operators.replicas import approval_body
    from ftops_provider.ui.approvals import jobs_named

    client, token, seeded = ui
    client.cookies.set("_token", token)
    page = client.get("/", params={"q": "top", "sort": "lag"}).text
    assert r'"/fleet?q=top\u0026sort=lag"' in page and "<section id='fleet-view'>" in page  # & as JSON escapes it
    view = client.get("/fleet", params={"q": "top", "sort": "lag"}).text
    assert "<section id='fleet-view'>" in view and "jobs/topk" in view and "jobs/alerts" not in view
    change = {"plan_id": 4, "old_plan_id": 2, "gain": 0.01, "tasks": ["a"], "old_tasks": []}
    body = approval_body([{**change, "job": "topk"}, {**change, "job": "alerts"}])
    assert jobs_named(body, {"topk", "alerts", "clicks"}) == ["alerts", "topk"]
    assert jobs_named(None, {"topk"}) == []
    # the jobs page's column: each open request under the jobs it names, linked to where it is answered
    from datetime import datetime, timezone

    from ftops_provider.ui.app import fleet_html
    from ftops_provider.ui.fleet import FleetQuery

    asked = {"dag_id": "ftops_profile_and_plan", "run_id": "manual__p", "task_id": "approve_replica_changes",
             "map_index": -1, "subject": "ftops: approve replica changes?", "since": datetime.now(timezone.utc),
             "body": body}
    rows = dict(re.findall(r"<tr><td><a href='jobs/([^']+)'>[^<]*</a></td>(.*?)</tr>",
                           fleet_html(seeded["store"], FleetQuery(), [asked], "/root")))
    assert "<a href='/root/dags/ftops_profile_and_plan/runs/manual__p/tasks/approve_replica_changes/required_actions'>" \
           "1 approval</a>" in rows["topk"]


def test_the_jobs_page_counts_filters_sorts_and_pages_the_fleet(ui):
    """Each job's state (ft_core.fleet.job_state) from its lease and its primary's newest batch; the counts per
    state link to the filter; filter by state and by name (any case), sort by lag, 100 rows a page with a pager;
    a state that is not one is refused naming the field."""
    from ft_core.store.stream_progress import BatchProgress

    client, token, ids = ui
    client.cookies.set("_token", token)
    store = ids["store"]
    now = time.time()
    for i in range(120):
        store.register_job(JobSpec(name=f"fleet-{i:03d}", workload="topk"))
    for name, ago, lag_s in (("fleet-001", 20, 5), ("fleet-002", 20, 300), ("fleet-003", 900, 5), ("fleet-004", 10, 130)):
        store.record_batch(BatchProgress(stream=f"ftops-{name}-primary", app_id="app-1", batch_id=1, batch_end=now - ago,
                                         watermark_ms=int((now - lag_s) * 1000), input_watermark_ms=int(now * 1000)))
    store.acquire_lease("fleet-005", "drill", "dag run ftops_chaos_drill/manual__9", ttl_s=600)

    def jobs(page: str) -> list[tuple[str, str]]:
        return re.findall(r"<tr><td><a href='jobs/([^']+)'>[^<]*</a></td><td>([^<]*)</td>", page)

    index = client.get("/").text
    counts = re.search(r"<p id='fleet-counts'>(.*?)</p>", index).group(1)
    assert counts == ("121 jobs: <a href='?state=experiment'>1 experiment</a>, <a href='?state=no+progress'>116 no "
                      "progress</a>, <a href='?state=down'>1 down</a>, <a href='?state=lagging'>2 lagging</a>, "
                      "<a href='?state=running'>1 running</a>")
    assert len(jobs(index)) == 100 and "jobs 1-100 of 121" in index and "id='page-previous'" not in index
    second = client.get("/" + re.search(r"id='page-next' href='([^']+)'", index).group(1).replace("&amp;", "&")).text
    assert len(jobs(second)) == 21 and "jobs 101-121 of 121" in second and "id='page-next'" not in second
    assert {j for j, _ in jobs(index)}.isdisjoint(j for j, _ in jobs(second))
    past = client.get("/", params={"page": 9}).text  # past the end: the last page
    assert jobs(past) == jobs(second) and "jobs 101-121 of 121" in past and "id='page-previous'" in past

    lagging = client.get("/", params={"state": "lagging", "sort": "lag"}).text
    assert jobs(lagging) == [("fleet-002", "lagging"), ("fleet-004", "lagging")]  # most behind first
    assert "<option value='lagging' selected>" in lagging
    assert jobs(client.get("/", params={"state": "down"}).text) == [("fleet-003", "down")]
    assert [j for j, _ in jobs(client.get("/", params={"q": "FLEET-00", "state": ""}).text)] == \
        [f"fleet-{i:03d}" for i in range(10)]
    none = client.get("/", params={"q": "nothing-like-it"}).text
    assert "No job matches." in none and "jobs 0 of 0" in none
    by_state = [s for _, s in jobs(client.get("/", params={"sort": "state"}).text)]
    assert by_state[:3] == ["experiment", "no progress", "no progress"]
    refused = client.get("/", params={"state": "sleeping"})
    assert refused.status_code == 422 and "state" in refused.text


def test_the_dag_run_tab_shows_what_a_run_of_an_ftops_dag_recorded(ui):
    """Airflow's DAG run page gets a "Fault tolerance" tab (an external view with destination dag_run, Airflow filling
    in {DAG_ID} and {RUN_ID}): one drill or recovery run goes to its report; several, or plans, are listed with
    links; a run id of another DAG's records, or of another DAG, says so."""
    from ftops_provider.plugin import FtopsPlugin

    client, token, ids = ui
    client.cookies.set("_token", token)
    store = ids["store"]
    [tab] = [v for v in FtopsPlugin.external_views if v["destination"] == "dag_run"]
    assert tab["href"] == "/ftops/runs/{DAG_ID}/{RUN_ID}"
    passed, _, _ = ids["drills"]
    done, _ = ids["runs"]

    one = client.get("/runs/ftops_chaos_drill/manual__d1", follow_redirects=False)
    assert one.status_code == 303 and one.headers["location"] == f"/jobs/topk/drills/{passed}"
    assert client.get(one.headers["location"]).status_code == 200
    rec = client.get("/runs/ftops_incremental_recovery/manual__r1", follow_redirects=False)
    assert rec.status_code == 303 and rec.headers["location"] == f"/jobs/topk/recovery-runs/{done}"

    # a drill still running has no report yet: its status, linked to the job's drills (not a report page's 404)
    running = client.get("/runs/ftops_chaos_drill/manual__d3", follow_redirects=False)
    assert running.status_code == 200
    assert re.findall(r"<li>(.*?)</li>", running.text) == [f"<a href='../../jobs/topk#drills'>drill #{ids['drills'][2]}</a> of topk: running"]
    # a scheduled drill run operates several jobs: one drill each, listed
    store.register_job(JobSpec(name="alerts", workload="topk"))
    plan = store.save_plan("alerts", "replication", algorithm="exact", objective=0.5, optimal=True, payload={"tasks": []},
                           input_hash="h", dag_run_id="scheduled__2026-11-29T02:00:00+00:00")
    first = store.start_drill("topk", ids["plans"][-1], {"failure_domain": "rack-a"}, "scheduled__2026-11-29T02:00:00+00:00")
    second = store.start_drill("alerts", plan.plan_id, {"failure_domain": "rack-a"}, "scheduled__2026-11-29T02:00:00+00:00")
    listed = client.get("/runs/ftops_chaos_drill/scheduled__2026-11-29T02%3A00%3A00%2B00%3A00")
    links = re.findall(r"<li><a href='([^']+)'>", listed.text)
    assert listed.status_code == 200 and links == ["../../jobs/topk#drills", "../../jobs/alerts#drills"]  # running
    assert f"drill #{first}</a> of topk: running" in listed.text and f"drill #{second}</a> of alerts: running" in listed.text
    store.finish_drill(first, {"predicted_output_fidelity": 0.5}, "passed")
    store.save_experiment(ExperimentReport(kind="drill", job="topk", experiment_id=first, verdict="passed"))
    again = client.get("/runs/ftops_chaos_drill/scheduled__2026-11-29T02%3A00%3A00%2B00%3A00").text
    assert re.findall(r"<li><a href='([^']+)'>", again) == [f"../../jobs/topk/drills/{first}", "../../jobs/alerts#drills"]
    # the planning DAG's run of the same id recorded the plan, not the drills (run ids are unique per DAG only)
    planned = client.get("/runs/ftops_profile_and_plan/scheduled__2026-11-29T02%3A00%3A00%2B00%3A00").text
    assert re.findall(r"<li>(.*?)</li>", planned) == [f"replication plan #{plan.plan_id} of <a href='../../jobs/alerts#plans'>alerts</a>"]
    assert "id='nothing-yet'" in client.get("/runs/ftops_checkpoint_tuning/scheduled__2026-11-29T02%3A00%3A00%2B00%3A00").text
    assert "id='nothing-yet'" in client.get("/runs/ftops_chaos_drill/manual__r1").text  # a recovery run's id
    other = client.get("/runs/etl_daily/manual__1")
    assert other.status_code == 200 and "id='not-ftops'" in other.text
