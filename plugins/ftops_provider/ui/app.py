"""The "Fault tolerance" pages and their JSON APIs, mounted by the Airflow plugin under /ftops.

Per job: its last hour (lag and throughput per minute, ``ui/live.py``; JSON at ``/api/jobs/{job}/progress``), the plan
history (chart, current plan, topology with replicated tasks, a diff between any two plans), drills (predicted output
fidelity against measured tentative accuracy, over time), recovery runs (a timeline of stages per run), its fault
journal and its actions. Pages are rendered on the server from Jinja2 templates; their charts are drawn in the browser
by the vendored Apache ECharts (served from ``/static``): no JavaScript build step, and they work inside the Airflow
UI's external-view frame.

Every route requires an authenticated Airflow user: FastAPI apps mounted by a plugin are *not* protected
by Airflow automatically, so the app depends on Airflow's own ``requires_authenticated``. A browser that
is refused gets a 401 page linking to Airflow's login (which brings it back); API clients get Airflow's
JSON error.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag, requires_authenticated
from fastapi import Body, Depends, FastAPI, Form, HTTPException, Query, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ft_core.errors import InputError
from ft_core.input.names import check_name
from ft_core.store.experiments import ExperimentReport
from ft_core.store.history import HistoryStore
from ftops_provider.ui.actions import (ACTIONS, actions_form, check_action, dag_paused, may_trigger, require_may_trigger,
                                       started_banner, trigger, watch_state)
from ftops_provider.ui.approvals import answerable, approvals_section, jobs_named, pending_approvals
from ftops_provider.ui.dag_run_view import RECORDS, records_body, run_records, single_report_path
from ftops_provider.ui.models import DrillOut, JobKind, PlanDiff, RecoveryRunOut, plan_diff
from ftops_provider.ui.safety import faults_section, halt_banner, halt_form
from ftops_provider.ui.fleet import FleetQuery, fleet_page, select_page
from ftops_provider.ui.live import SPAN_S, MinuteOut, live_section, per_minute
from ftops_provider.ui.sections import (diff_section, drills_section, fleet_recovery_section, history_section,
                                        recovery_section)
from ftops_provider.ui.templates import ECHARTS, macro, render, render_page

app = FastAPI(title="ftops", description="Fault tolerance of Spark streaming jobs: plans, drills, recovery runs.",
              dependencies=[Depends(requires_authenticated())])

STATIC = Path(__file__).parent / "static"
_KIND = Query("replication", pattern="^(replication|recovery|checkpoint)$")


def get_store() -> Iterator[HistoryStore]:
    """A store on a new connection to the ``ftops_db`` Airflow connection, closed after the request."""
    from ftops_provider.hooks.history import HistoryStoreHook

    store = HistoryStoreHook().store()
    try:
        yield store
    finally:
        store.conn.close()


@app.exception_handler(StarletteHTTPException)
async def refused(request: Request, exc: StarletteHTTPException) -> Response:
    """A browser refused for want of a (valid) login gets a page that links to Airflow's login form."""
    wants_html = "text/html" in request.headers.get("accept", "")
    if exc.status_code not in (401, 403) or not wants_html:
        return await http_exception_handler(request, exc)
    if exc.status_code == 403 and exc.detail != "Invalid JWT token":  # signed in, but not permitted: say what
        return _page(request, "Not permitted", page_body("not_permitted", exc.detail), status_code=403)
    from airflow.api_fastapi.app import get_auth_manager

    login = get_auth_manager().get_url_login(next_url=str(request.url))
    return _page(request, "Sign in required", page_body("sign_in", exc.detail, login), status_code=exc.status_code)


def page_body(name: str, *values) -> str:
    """The body of a page from its macro in ``ui/templates/pages.html``."""
    return macro("pages.html", name)(*values)


def _page(request: Request, title: str, body: str, status_code: int = 200) -> HTMLResponse:
    """A page in the console's frame (``ui/templates/page.html``); ``body`` is markup its sections escaped."""
    return HTMLResponse(render_page(title, body, _ftops_root(request) + "/static"), status_code=status_code)


@app.get("/static/{name}")
def static_file(name: str) -> Response:
    """The vendored charting library (``ui/static``): its name carries its version, so a browser keeps it a year."""
    if name != ECHARTS:
        raise HTTPException(status_code=404, detail=f"no static file {name!r}")
    return FileResponse(STATIC / name, media_type="text/javascript",
                        headers={"Cache-Control": "public, max-age=31536000, immutable"})


def job_in_path(job: str) -> str:
    """The ``{job}`` of a URL when it is a name (:mod:`ft_core.input.names`), else 400 with the rule: checked
    before the store is opened."""
    try:
        return check_name(job, "job name")
    except InputError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None


JobName = Annotated[str, Depends(job_in_path)]  # resolved before the store (dependencies run in order)


def _known(store: HistoryStore, job: str) -> None:
    if not store.has_job(job):
        raise HTTPException(status_code=404, detail=f"job {job!r} is not registered")


# -- pages ---------------------------------------------------------------------------------------------

@app.get("/", response_class=HTMLResponse)
def jobs_page(query: Annotated[FleetQuery, Query()], request: Request, user: GetUserDep,
              store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    """The fleet at a glance, what waits for a person, recovering the lost jobs, and the halt (``started_run``: the
    fleet recovery *Recover lost jobs* just started, linked; read beside the filter's model, which FastAPI takes whole)."""
    from ftops_provider.ui.action_options import dag_params, fleet_recovery_form

    started_run = request.query_params.get("started_run")
    if started_run is not None and not 0 < len(started_run) <= 250:
        raise HTTPException(status_code=422, detail="started_run: a DAG run id of 1 to 250 characters")
    halt = store.halted()
    pending = pending_approvals(user)
    waiting = approvals_section(pending, _airflow_root(request))
    recover = ACTIONS["recover"].dag_id
    started = "" if not started_run else started_banner(recover, started_run, dag_paused(recover), _airflow_root(request))
    recovery = fleet_recovery_form(dag_params(recover), may_trigger(request, user, recover), watch_state())
    fleet = fleet_html(store, query, pending, _airflow_root(request), _fleet_view_url(request))
    return _page(request, "Fault tolerance: jobs", started + halt_banner(halt) + waiting + fleet + recovery
                 + halt_form(halt, _ftops_root(request)))


@app.get("/fleet", response_class=HTMLResponse)
def fleet_view(query: Annotated[FleetQuery, Query()], request: Request, user: GetUserDep,
               store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    """The jobs page's fleet alone, for the same filter (the open page redraws its counts, table and pager from here)."""
    return HTMLResponse(fleet_html(store, query, pending_approvals(user), _airflow_root(request), _fleet_view_url(request)))


def _fleet_view_url(request: Request) -> str:
    return f"{_ftops_root(request)}/fleet" + (f"?{request.url.query}" if request.url.query else "")


def fleet_html(store: HistoryStore, query: FleetQuery, pending: list[dict] = (), airflow_root: str = "",
               view_url: str = "fleet") -> str:
    """The jobs page's fleet (scripts/bench-console.py times it at 5,000 jobs): every job's state, then the page's
    jobs only, in full, each with the open approval requests (``pending``) that name it."""
    chosen = select_page(store.fleet_states(), query)
    kinds = {name: JobKind.from_kind(info).summary for name, info in store.job_kinds(chosen.names).items()}
    shown, waiting = set(chosen.names), {}
    for asked in answerable(list(pending), airflow_root):
        for job in jobs_named(asked["body"], shown):
            waiting.setdefault(job, []).append(asked)
    return fleet_page(chosen, store.fleet_overview(chosen.names), kinds, query, waiting, view_url)


def _ftops_root(request: Request) -> str:
    """Where this app is mounted (``/ftops``, below Airflow's own base path if it has one)."""
    return request.scope.get("root_path", "")


def _airflow_root(request: Request) -> str:
    """Where Airflow's own pages are: beside this app's /ftops."""
    return _ftops_root(request).removesuffix("/ftops")


@app.get("/jobs/{job}", response_class=HTMLResponse)
def job_page(job: JobName, request: Request, user: GetUserDep, started_dag: str | None = None,
             started_run: str | None = Query(None, max_length=250),
             store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    """The job's last hour, plan history, drills, recovery runs and fault journal on one page, and its actions (after
    an action: the run it started)."""
    _known(store, job)
    started = ""
    if started_run and started_dag in {a.dag_id for a in ACTIONS.values()}:
        started = started_banner(started_dag, started_run, dag_paused(started_dag), _airflow_root(request))
    plans = store.plans(job, "replication")
    kind = JobKind.from_store(store, job)
    live = kind.kind != "plan-only"  # a plan-only job has no streams: no last hour to show
    allowed = {a.dag_id for a in ACTIONS.values() if kind.kind in a.kinds and may_trigger(request, user, a.dag_id)}
    now = time.time()
    sections = [live_section(store.job_batches(job, now - SPAN_S), now) if live else "",
                history_section(job, plans, store.latest_topology(job) if plans else None)]
    if len(plans) > 1:
        sections.append(diff_section(_diff(store, job, plans[-2]["plan_id"], plans[-1]["plan_id"])))
    sections.append(activity_html(store, job))
    halt = store.halted()
    sections.append(halt_form(halt, _ftops_root(request)))
    waiting = approvals_section(pending_approvals(user), _airflow_root(request), job=job)
    body = page_body("job", halt_banner(halt), started, waiting, live, actions_form(job, kind.kind, allowed), kind,
                     sections)
    return _page(request, f"Fault tolerance: {job}", body)


@app.get("/jobs/{job}/last-hour", response_class=HTMLResponse)
def last_hour_fragment(job: JobName, store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    """The job page's last hour alone (the open page redraws it from here, ``ui/live.py``)."""
    _known(store, job)
    now = time.time()
    return HTMLResponse(live_section(store.job_batches(job, now - SPAN_S), now))


def activity_html(store: HistoryStore, job: str) -> str:
    """The job's drills, recovery runs, fleet recoveries and fault journal, redrawn by the open page."""
    sections = [drills_section(job, [DrillOut.from_store(d) for d in store.drills(job)]),
                recovery_section(job, [RecoveryRunOut.model_validate(r) for r in store.recovery_runs(job)]),
                fleet_recovery_section(store.job_fleet_recoveries(job)), faults_section(store.faults(job, limit=20))]
    return render("activity.html", sections=sections)


@app.get("/jobs/{job}/activity", response_class=HTMLResponse)
def activity_fragment(job: JobName, store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    """The job page's experiments and faults alone (the open page redraws them from here)."""
    _known(store, job)
    return HTMLResponse(activity_html(store, job))


@app.get("/runs/{dag_id}/{run_id:path}", response_class=HTMLResponse)
def dag_run_view(dag_id: str, run_id: str, request: Request, store: HistoryStore = Depends(get_store)) -> Response:
    """The "Fault tolerance" tab of a DAG run in Airflow's UI: the run's drill or recovery report, or what it
    recorded (ftops_provider.ui.dag_run_view)."""
    records = run_records(dag_id, store.dag_run_records(run_id)) if dag_id in RECORDS else []
    single = single_report_path(dag_id, records) if records else None
    if single is not None:
        return RedirectResponse(_ftops_root(request) + single, status_code=303)
    return _page(request, f"Fault tolerance: {dag_id} run", records_body(dag_id, run_id, records))


@app.get("/jobs/{job}/drills/{drill_id}", response_class=HTMLResponse)
def drill_page(job: JobName, drill_id: int, request: Request, store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    """A drill's experiment report: hypothesis, probes, timeline, verdict."""
    report = _experiment(store, job, "drill", drill_id)
    return _page(request, f"Fault tolerance: {report.title}",
                 page_body("report", job, "", f"drills/{drill_id}/experiment", report))


@app.get("/jobs/{job}/recovery-runs/{run_id}", response_class=HTMLResponse)
def recovery_page(job: JobName, run_id: int, request: Request, store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    """A recovery run's experiment report: hypothesis after, timeline of its stages, per-query times, verdict."""
    report = _experiment(store, job, "recovery", run_id)
    return _page(request, f"Fault tolerance: {report.title}",
                 page_body("report", job, "#recovery", f"recovery-runs/{run_id}/experiment", report))


def _experiment(store: HistoryStore, job: str, kind: str, experiment_id: int) -> ExperimentReport:
    _known(store, job)
    try:
        report = store.experiment(kind, experiment_id)
    except InputError:
        report = None
    if report is None or report.job != job:
        raise HTTPException(status_code=404, detail=f"{kind} {experiment_id} of job {job!r} has no experiment report "
                                                    "(it does not exist, is not this job's, or still runs)")
    return report


@app.get("/jobs/{job}/diff", response_class=HTMLResponse)
def diff_page(job: JobName, request: Request, a: int = Query(ge=1), b: int = Query(ge=1), store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    """What changed between any two plans of the job (of one kind)."""
    diff = _diff(store, job, a, b)
    return _page(request, f"Fault tolerance: {job}, plan #{a} to #{b}", page_body("diff", job, diff))


def _diff(store: HistoryStore, job: str, a: int, b: int) -> PlanDiff:
    _known(store, job)
    plans = {i: store.plan(i) for i in (a, b)}
    missing = [i for i, p in plans.items() if p is None or p["job"] != job]
    if missing:
        raise HTTPException(status_code=404, detail=f"plan {missing[0]} is not a plan of job {job!r}")
    if plans[a]["kind"] != plans[b]["kind"]:
        raise HTTPException(status_code=400, detail=f"plan {a} is a {plans[a]['kind']} plan and plan {b} a "
                                                    f"{plans[b]['kind']} plan: compare plans of one kind")
    return plan_diff(plans[a], plans[b])


# -- JSON APIs -----------------------------------------------------------------------------------------

@app.get("/api/jobs/{job}/plans")
def plans_api(job: JobName, kind: str = _KIND, store: HistoryStore = Depends(get_store)) -> list[dict]:
    _known(store, job)
    return [{**p, "created_at": p["created_at"].isoformat()} for p in store.plans(job, kind)]


@app.get("/api/jobs/{job}/diff")
def diff_api(job: JobName, a: int = Query(ge=1), b: int = Query(ge=1), store: HistoryStore = Depends(get_store)) -> PlanDiff:
    return _diff(store, job, a, b)


@app.get("/api/jobs/{job}/drills")
def drills_api(job: JobName, limit: int = Query(100, ge=1, le=1000), store: HistoryStore = Depends(get_store)) -> list[DrillOut]:
    """The job's drills, oldest first: predicted OF, measured accuracy (and per window), times, verdicts."""
    _known(store, job)
    return [DrillOut.from_store(d) for d in store.drills(job, limit)]


@app.get("/api/jobs/{job}/progress")
def progress_api(job: JobName, minutes: int = Query(60, ge=1, le=1440),
                 store: HistoryStore = Depends(get_store)) -> list[MinuteOut]:
    """The job's streams per minute over the last ``minutes``: rows read per second and the largest lag (the job
    page's "Last hour" charts)."""
    _known(store, job)
    now = time.time()
    return per_minute(store.job_batches(job, now - minutes * 60), now, span_s=minutes * 60)


@app.get("/api/jobs/{job}/faults")
def faults_api(job: JobName, limit: int = Query(100, ge=1, le=1000), store: HistoryStore = Depends(get_store)) -> list[dict]:
    """The job's fault journal, newest first."""
    _known(store, job)
    return [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in f.items()} for f in store.faults(job, limit)]


@app.get("/api/halt")
def halt_api(store: HistoryStore = Depends(get_store)) -> dict:
    """The halt in force (``{"halted": false}`` when none)."""
    return _halt_doc(store)


# -- acting: the halt ------------------------------------------------------------------------------------
# Halting aborts DAG runs (the drills): only a user who may change DAG runs may halt or resume. The UI records the
# halt; every running drill reads it on its next poll, aborts and undoes its own faults (spark_jobs.drills.waits),
# and the safety net undoes those of a dead holder: no fault injection or Spark call runs in the api-server.
_MAY_OPERATE = [Depends(requires_access_dag("PUT", DagAccessEntity.RUN))]


class HaltIn(BaseModel):
    reason: str = Field(min_length=1, max_length=500, description="why experiments are halted (shown to everyone)")


def _halt_doc(store: HistoryStore) -> dict:
    halt = store.halted()
    return {"halted": False} if halt is None else {"halted": True, **{**halt, "halted_at": halt["halted_at"].isoformat()}}


def _by(user) -> str:
    return f"{user.get_name()} (the Airflow UI)"


def _same_origin(request: Request) -> None:
    """A form post must come from a page of this server (the session cookie is SameSite=Lax already; this also
    refuses a post whose Origin or Referer names another site)."""
    from urllib.parse import urlsplit

    source = request.headers.get("origin") or request.headers.get("referer")
    if source is None or urlsplit(source).netloc != request.headers.get("host"):
        raise HTTPException(status_code=403, detail="a form of the ftops pages must be posted from the ftops page itself")


def _bearer_or_same_origin(request: Request) -> None:
    """An API call that starts work, signed in by the session cookie rather than a bearer token, must come from
    this server's pages too (a body-less POST is what another site's form can send)."""
    if not request.headers.get("authorization", "").lower().startswith("bearer "):
        _same_origin(request)


@app.post("/api/halt", dependencies=_MAY_OPERATE)
def halt_post_api(body: HaltIn, user: GetUserDep, store: HistoryStore = Depends(get_store)) -> dict:
    """Halt every experiment of the fleet (as ``ftops halt``); a halt in force is kept (its reason stays)."""
    if not body.reason.strip():
        raise HTTPException(status_code=422, detail="reason: say why experiments are halted")
    store.halt(body.reason.strip(), _by(user))
    return _halt_doc(store)


@app.delete("/api/halt", dependencies=_MAY_OPERATE)
def resume_api(user: GetUserDep, store: HistoryStore = Depends(get_store)) -> dict:
    """End the halt (as ``ftops resume``): drills may start again. ``ended`` is the halt that ended (null: none)."""
    ended = store.resume(_by(user))
    return {"halted": False, "ended": None if ended is None else {**ended, "halted_at": ended["halted_at"].isoformat()}}


@app.post("/halt", dependencies=[*_MAY_OPERATE, Depends(_same_origin)])
def halt_form_post(request: Request, user: GetUserDep, reason: Annotated[str, Form(max_length=500)] = "",
                   store: HistoryStore = Depends(get_store)) -> Response:
    """The Halt button (the jobs page's and each job's)."""
    if not reason.strip():
        raise HTTPException(status_code=422, detail="reason: say why experiments are halted")
    store.halt(reason.strip(), _by(user))
    return RedirectResponse(_back(request), status_code=303)


@app.post("/resume", dependencies=[*_MAY_OPERATE, Depends(_same_origin)])
def resume_form_post(request: Request, user: GetUserDep, store: HistoryStore = Depends(get_store)) -> Response:
    """The Resume button (the jobs page's and each job's)."""
    store.resume(_by(user))
    return RedirectResponse(_back(request), status_code=303)


def _back(request: Request) -> str:
    """The console page a form was posted from (its Referer: this server's, a path under this app), else the jobs page."""
    from urllib.parse import urlsplit

    source = urlsplit(request.headers.get("referer", ""))
    root = _ftops_root(request)
    ours = source.netloc == request.headers.get("host") and source.path.startswith("/") and "\\" not in source.path
    within = ours and not source.path.startswith("//") and (source.path == root or source.path.startswith(root + "/"))
    return source.path + (f"?{source.query}" if source.query else "") if within else f"{root}/"


# -- acting: a job's actions (ftops_provider.ui.actions) ---------------------------------------------------------

def _start(request: Request, job: str | None, action: str, user, store: HistoryStore | None,
           given: dict[str, Any] | None = None, from_form: bool = False) -> dict:
    """Start the action's DAG run under the user's permission, with the options ``given`` (a form's text or a JSON
    body): for ``job``, or (None: *Recover lost jobs*) for every job that lost its executors."""
    from ftops_provider.ui.action_options import dag_params, options_conf

    last_batch_at = None
    if job is None:
        chosen = ACTIONS[action]
    else:
        _known(store, job)
        chosen = check_action(action, JobKind.from_store(store, job).kind, job)
    require_may_trigger(request, user, chosen.dag_id)
    options = options_conf(action, given, dag_params(chosen.dag_id), from_form) if given else None
    if job is not None:
        [row] = store.fleet_overview([job])
        last_batch_at = row["last_batch_at"].timestamp() if row["last_batch_at"] else None
    started = trigger(chosen, job or "", user, last_batch_at, options)  # "": the DAG's every-lost-job value
    return {**started, "url": _airflow_root(request) + started["url"]}


async def _start_from_form(request: Request, job: str | None, action: str, user, store: HistoryStore | None) -> dict:
    """:func:`_start` with a posted form's fields as the options (the store work off the event loop)."""
    from starlette.concurrency import run_in_threadpool

    given = {k: str(v) for k, v in (await request.form()).items()}
    return await run_in_threadpool(_start, request, job, action, user, store, given, True)


@app.post("/api/jobs/{job}/actions/{action}", status_code=201, dependencies=[Depends(_bearer_or_same_origin)])
def action_api(job: JobName, action: str, request: Request, user: GetUserDep,
               store: HistoryStore = Depends(get_store),
               options: Annotated[dict[str, Any] | None, Body(description="the action's options (its DAG's Params)")] = None
               ) -> dict:
    """Start the action's DAG run for the job (``drill``, ``tune``, ``replan``, ``recover``) under the caller's permission to
    trigger that DAG, with ``options`` (a JSON object of the Params the action offers) if given: its DAG, run id,
    whether the DAG is paused and the run's page in Airflow."""
    return _start(request, job, action, user, store, options)


@app.post("/jobs/{job}/actions/{action}", dependencies=[Depends(_same_origin)])
async def action_form_post(job: JobName, action: str, request: Request, user: GetUserDep,
                           store: HistoryStore = Depends(get_store)) -> Response:
    """A job page's action button, or its form with options: back to the job page (a reload does not start a second
    run), which links the new run's page in Airflow."""
    started = await _start_from_form(request, job, action, user, store)
    back = urlencode({"started_dag": started["dag_id"], "started_run": started["run_id"]})
    return RedirectResponse(f"{_ftops_root(request)}/jobs/{quote(job, safe='')}?{back}", status_code=303)


@app.post("/api/actions/recover", status_code=201, dependencies=[Depends(_bearer_or_same_origin)])
def recover_fleet_api(request: Request, user: GetUserDep,
                      options: Annotated[dict[str, Any] | None, Body(description="the recovery's options")] = None
                      ) -> dict:
    """Start ``ftops_fleet_recovery`` for every lost job (its ``jobs`` empty), with ``options`` if given."""
    return _start(request, None, "recover", user, None, options)


@app.post("/actions/recover", dependencies=[Depends(_same_origin)])
async def recover_fleet_form_post(request: Request, user: GetUserDep) -> Response:
    """The jobs page's *Recover lost jobs*: back to the jobs page, which links the new run."""
    started = await _start_from_form(request, None, "recover", user, None)
    return RedirectResponse(f"{_ftops_root(request)}/?{urlencode({'started_run': started['run_id']})}", status_code=303)


@app.get("/api/jobs/{job}/drills/{drill_id}/experiment")
def drill_experiment_api(job: JobName, drill_id: int, store: HistoryStore = Depends(get_store)) -> ExperimentReport:
    """A drill's experiment report as JSON."""
    return _experiment(store, job, "drill", drill_id)


@app.get("/api/jobs/{job}/recovery-runs/{run_id}/experiment")
def recovery_experiment_api(job: JobName, run_id: int, store: HistoryStore = Depends(get_store)) -> ExperimentReport:
    """A recovery run's experiment report as JSON."""
    return _experiment(store, job, "recovery", run_id)


@app.get("/api/jobs/{job}/recovery-runs")
def recovery_runs_api(job: JobName, limit: int = Query(50, ge=1, le=500),
                      store: HistoryStore = Depends(get_store)) -> list[RecoveryRunOut]:
    """The job's recovery runs, oldest first, with their stages and per-query recovery times."""
    _known(store, job)
    return [RecoveryRunOut.model_validate(r) for r in store.recovery_runs(job, limit)]


@app.get("/api/jobs/{job}/fleet-recoveries")
def fleet_recoveries_api(job: JobName, limit: int = Query(20, ge=1, le=500),
                         store: HistoryStore = Depends(get_store)) -> list[dict[str, Any]]:
    """The job in its newest fleet recoveries, newest first: stage, restart, planned, predicted and measured time back
    (seconds after the failure) and the planner's inputs with their sources."""
    _known(store, job)
    return store.job_fleet_recoveries(job, limit)
