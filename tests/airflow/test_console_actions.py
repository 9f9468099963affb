"""The console's actions (issue 36, item 3): Drill now, Tune checkpoint, Re-plan and Recover now start their DAG's run
in Airflow's real metadata database under the logged-in user's own permission, from the API and from the job page's
form, and are refused (visibly, creating nothing) for a viewer, a job whose kind cannot take them, an unknown action
or another site's form."""

from __future__ import annotations

import re
import time
from urllib.parse import quote, unquote

from ft_core.store.history import JobSpec
from ft_core.store.stream_progress import BatchProgress
from tests.console_fixtures import airflow_dags, ftops_runs, set_paused, ui  # noqa: F401 - fixtures
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


def test_a_jobs_actions_start_its_dag_runs_under_the_users_permission(ui, airflow_dags):
    """Drill now, Tune checkpoint, Re-plan and Recover now each create a queued run of their DAG with the job in its
    conf (any name the rules allow), recorded as triggered from the UI by the user; a viewer is refused and nothing
    is created; an action the job's kind cannot take and an unknown action are refused naming why; the form goes on
    to the run's page."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    client, token, ids = ui
    store = ids["store"]
    store.register_job(JobSpec(name="alerts", workload="topk", deployment={"pipeline": "topk", "root": "/tmp/alerts"}))
    admin = {"Authorization": f"Bearer {token}"}
    viewer = {"Authorization": "Bearer " + get_auth_manager().generate_jwt(
        SimpleAuthManagerUser(username="viewer", role="VIEWER"))}

    store.register_job(JobSpec(name="Alerts_eu.v2", workload="topk",  # every character a name may have
                               deployment={"pipeline": "topk", "root": "/tmp/alerts-eu"}))
    lost_at = round(time.time() - 900, 3)  # its last batch: a recovery plans from the rates before it stopped, not from now
    store.record_batch(BatchProgress(stream="ftops-Alerts_eu.v2-primary", app_id="app-1", batch_id=0, role="primary",
                                     batch_end=lost_at, input_rows=100))

    started, confs = {}, {}
    for job, action, dag_id, conf in (("alerts", "drill", "ftops_chaos_drill", {"job": "alerts"}),
                                      ("alerts", "tune", "ftops_checkpoint_tuning", {"job": "alerts"}),
                                      ("alerts", "replan", "ftops_profile_and_plan", {"job": "alerts"}),
                                      ("alerts", "recover", "ftops_fleet_recovery", {"jobs": "alerts"}),
                                      ("Alerts_eu.v2", "recover", "ftops_fleet_recovery",
                                       {"jobs": "Alerts_eu.v2", "failed_at": f"{lost_at:.3f}"})):
        res = client.post(f"/api/jobs/{job}/actions/{action}", headers=admin)
        assert res.status_code == 201, res.text
        doc = res.json()
        assert doc["dag_id"] == dag_id and doc["url"] == f"/dags/{dag_id}/runs/{quote(doc['run_id'], safe='')}"
        started[doc["run_id"]], confs[doc["run_id"]] = dag_id, conf
    runs = {r.run_id: r for r in ftops_runs() if r.run_id in started}
    assert {r.run_id: r.dag_id for r in runs.values()} == started
    for run in runs.values():
        assert run.conf == confs[run.run_id] and run.state == "queued" and run.run_type == "manual"
        assert run.triggered_by.value == "ui" and run.triggering_user_name == "admin"

    count = len(ftops_runs())
    refused = client.post("/api/jobs/alerts/actions/drill", headers=viewer)
    assert refused.status_code == 403 and len(ftops_runs()) == count
    assert refused.json()["detail"].startswith("viewer may not trigger runs of ftops_chaos_drill")
    page = client.post("/jobs/alerts/actions/drill", headers={**viewer, "Origin": "http://testserver",
                                                              "Accept": "text/html"})
    assert page.status_code == 403 and "id='not-permitted'" in page.text and "id='login'" not in page.text
    seen = client.get("/jobs/alerts", headers=viewer).text  # the viewer's buttons say so before anyone clicks
    for action, dag_id in (("drill", "ftops_chaos_drill"), ("tune", "ftops_checkpoint_tuning")):
        button = re.search(rf"<button id='action-{action}'[^>]*>", seen).group(0)
        assert " disabled " in button and f"may not trigger runs of {dag_id}" in button, button
    assert "id='actions-barred'" in seen
    plan_only = client.post("/api/jobs/topk/actions/drill", headers=admin)
    assert plan_only.status_code == 409 and "plan-only" in plan_only.json()["detail"]
    assert client.post("/api/jobs/topk/actions/replan", headers=admin).status_code == 201  # any job can be planned
    unknown = client.post("/api/jobs/alerts/actions/explode", headers=admin)
    assert unknown.status_code == 404 and "drill, tune, replan, recover" in unknown.json()["detail"]
    assert client.post("/api/jobs/nobody/actions/drill", headers=admin).status_code == 404
    assert len(ftops_runs()) == count + 1

    client.cookies.set("_token", token)
    cross_site = client.post("/api/jobs/alerts/actions/drill", headers={"Origin": "https://evil.example"})
    assert cross_site.status_code == 403 and len(ftops_runs()) == count + 1  # signed in by cookie: same origin only
    page = client.get("/jobs/alerts").text
    assert all(f"id='action-{a}'" in page for a in ("drill", "tune", "replan", "recover")) and " disabled " not in page
    assert "id='actions-barred'" not in page
    topk = client.get("/jobs/topk").text
    assert "id='action-replan'" in topk and "id='action-drill'" not in topk and "id='action-recover'" not in topk
    own = {"Origin": "http://testserver"}
    assert client.post("/jobs/alerts/actions/drill", headers={"Origin": "https://evil.example"}).status_code == 403
    set_paused("ftops_chaos_drill", False)
    gone = client.post("/jobs/alerts/actions/drill", headers=own, follow_redirects=False)
    assert gone.status_code == 303 and gone.headers["location"].startswith("/jobs/alerts?started_dag=ftops_chaos_drill&")
    back = client.get(gone.headers["location"]).text  # a reload of it starts nothing
    link = re.search(r"id='run-link' href='(/dags/ftops_chaos_drill/runs/[^']+)'", back).group(1)
    assert unquote(link.rsplit("/", 1)[1]) in {r.run_id for r in ftops_runs()} and "Its DAG is paused" not in back
    set_paused("ftops_chaos_drill", True)
    shown = client.get(client.post("/jobs/alerts/actions/drill", headers=own, follow_redirects=False).headers["location"])
    assert shown.status_code == 200 and "Its DAG is paused" in shown.text
    assert "id='started'" not in client.get("/jobs/alerts", params={"started_dag": "etl", "started_run": "x"}).text
    logged = {(r.dag_id, r.run_id, r.owner) for r in _audit_log()}  # in Airflow's audit log, as its trigger button's
    assert {(d, r, "admin") for r, d in started.items()} <= logged


def _audit_log():
    from airflow.models.log import Log
    from airflow.utils.session import create_session

    with create_session() as session:
        logs = session.query(Log).filter(Log.event == "trigger_dag_run").all()
        session.expunge_all()
        return logs


def test_an_action_with_options_starts_its_run_with_them_within_the_dags_bounds(ui, airflow_dags):
    """Each action's options are a form with its DAG's own bounds (read from the DAG Airflow has); posted, the run's
    conf has the job and the options, typed; out of the Param's bounds, a value its type refuses, an option the
    action does not offer are refused (400) naming it, and nothing is created. The API takes the same as JSON."""
    client, token, ids = ui
    store = ids["store"]
    store.register_job(JobSpec(name="alerts", workload="topk", deployment={"pipeline": "topk", "root": "/tmp/alerts"}))
    admin = {"Authorization": f"Bearer {token}"}
    page = client.get("/jobs/alerts", headers=admin).text
    options = re.search(r"<details id='action-options'>.*?</details>", page, re.S).group(0)
    drill = re.search(r"<form class='options' id='options-drill'.*?</form>", options, re.S).group(0)
    assert re.search(r"<select id='opt-drill-fault' name='fault'[^>]*><option value='host-down' selected>host-down"
                     r"</option><option value='partition'>partition</option></select>", drill)
    assert "<input id='opt-drill-timeout_s' name='timeout_s' type='number' step='any' min='30' max='2592000' " \
           "value='600'" in drill  # the DAG's bounded Param: at least 30
    assert re.search(r"<select id='opt-drill-kill_driver' name='kill_driver'[^>]*><option value='true'>", drill)
    assert "<label for='opt-drill-failure_domain'>failure_domain</label>" in drill
    assert "id='options-recover'" in options and "name='lease_ttl_s'" in options and "name='failed_at'" not in options
    assert "id='options-tune'" in options and "id='options-replan'" in options

    own = {"Origin": "http://testserver"}
    client.cookies.set("_token", token)
    count = len(ftops_runs())
    sent = client.post("/jobs/alerts/actions/drill", headers=own, follow_redirects=False,
                       data={"failure_domain": "rack-b", "fault": "host-down", "kill_driver": "true",
                             "replacement_delay_s": "5", "timeout_s": "400"})
    assert sent.status_code == 303, sent.text
    assert len(ftops_runs()) == count + 1
    created = max(ftops_runs(), key=lambda r: r.id)
    assert created.dag_id == "ftops_chaos_drill" and created.conf == {
        "job": "alerts", "failure_domain": "rack-b", "fault": "host-down", "kill_driver": True,
        "replacement_delay_s": 5.0, "timeout_s": 400.0}
    count = len(ftops_runs())
    for data, needle in (({"timeout_s": "5"}, "timeout_s"), ({"timeout_s": "soon"}, "timeout_s: 'soon' is not a number"),
                         ({"kill_driver": "yes"}, "kill_driver: expected true or false"),
                         ({"timeout_s": "nan"}, "timeout_s: nan is not a finite number"),
                         ({"job": "other"}, "option 'job': this action takes failure_domain, fault"),
                         ({"fault": "meteor"}, "fault")):
        refused = client.post("/jobs/alerts/actions/drill", headers=own, data=data, follow_redirects=False)
        assert refused.status_code == 400 and needle in refused.text, (data, refused.status_code, refused.text[:300])
    assert len(ftops_runs()) == count

    res = client.post("/api/jobs/alerts/actions/recover", headers=admin, json={"arrivals": "1@30", "lease_ttl_s": 60})
    assert res.status_code == 201, res.text
    recover = next(r for r in ftops_runs() if r.run_id == res.json()["run_id"])
    assert recover.conf == {"jobs": "alerts", "arrivals": "1@30", "lease_ttl_s": 60}
    bad = client.post("/api/jobs/alerts/actions/recover", headers=admin, json={"lease_ttl_s": 10})
    assert bad.status_code == 400 and "lease_ttl_s" in bad.text and len(ftops_runs()) == count + 1


def test_recover_lost_jobs_starts_a_fleet_recovery_of_every_lost_job_with_its_options(ui, airflow_dags):
    """The jobs page's *Recover lost jobs* (issue 33: a domain lost under several jobs, no job named): a run of
    ftops_fleet_recovery whose ``jobs`` is empty (its first task asks the master which jobs lost their executors), with
    the options of the form, under the user's permission; the page then links the run."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    client, token, _ = ui
    admin = {"Authorization": f"Bearer {token}"}
    viewer = {"Authorization": "Bearer " + get_auth_manager().generate_jwt(
        SimpleAuthManagerUser(username="viewer", role="VIEWER"))}
    page = client.get("/", headers=admin).text
    form = re.search(r"<section id='fleet-recovery'>.*?</section>", page, re.S).group(0)
    assert "<select id='opt-fleet-recover-policy' name='policy'" in form and "name='arrivals'" in form
    assert "<button id='fleet-recover' type='submit'>" in form and "name='jobs'" not in form
    assert re.search(r"<button id='fleet-recover' type='submit' disabled", client.get("/", headers=viewer).text)
    assert "<p id='fleet-watch'>Fleet watch off: unpause <code>ftops_fleet_watch</code>" in form  # opt-in: paused
    from airflow.models.dag import DagModel

    was = DagModel.get_dagmodel("ftops_fleet_recovery").is_paused
    for watch, recovery, says in ((False, True, "but <code>ftops_fleet_recovery</code> is paused"),
                                  (False, False, "Fleet watch on: ftops starts this by itself"),
                                  (True, False, "Fleet watch off")):
        set_paused("ftops_fleet_watch", watch)
        set_paused("ftops_fleet_recovery", recovery)
        assert says in re.search(r"<p id='fleet-watch'.*?</p>", client.get("/", headers=admin).text, re.S).group(0)
    set_paused("ftops_fleet_recovery", was)

    count = len(ftops_runs())
    assert client.post("/api/actions/recover", headers=viewer).status_code == 403 and len(ftops_runs()) == count
    client.cookies.set("_token", token)
    sent = client.post("/actions/recover", headers={"Origin": "http://testserver"}, follow_redirects=False,
                       data={"arrivals": "2@30", "policy": "fifo", "lease_ttl_s": "60"})
    assert sent.status_code == 303 and sent.headers["location"].startswith("/?started_run=")
    created = max(ftops_runs(), key=lambda r: r.id)
    assert created.dag_id == "ftops_fleet_recovery" and created.triggering_user_name == "admin"
    assert created.conf == {"jobs": "", "arrivals": "2@30", "policy": "fifo", "lease_ttl_s": 60.0}
    shown = client.get(sent.headers["location"]).text
    assert re.search(r"id='run-link' href='/dags/ftops_fleet_recovery/runs/[^']+'", shown)
    refused = client.post("/api/actions/recover", headers=admin, json={"arrivals": "soon"})
    assert refused.status_code == 400 and "arrivals" in refused.text and len(ftops_runs()) == count + 1

