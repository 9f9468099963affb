"""Acting on a job from its console page: each action starts one of ftops's DAGs for the job.

An action is a DAG run, never work done in the api-server: *Drill now* starts ``ftops_chaos_drill``, *Tune
checkpoint* ``ftops_checkpoint_tuning`` and *Re-plan* ``ftops_profile_and_plan``, each with ``{"job": NAME}`` as
its conf, and *Recover now* ``ftops_fleet_recovery`` with ``{"jobs": NAME}`` (every other Param at the DAG's
default, as a scheduled run has them). The run is created by
Airflow's own ``trigger_dag`` under the logged-in user's permission to create runs *of that DAG* (the auth
manager decides, as for Airflow's trigger button), recorded as triggered from the UI by that user; a user
without it is refused (403) and nothing is created. An action the job's kind cannot take is refused before
Airflow is asked (a plan-only job has no streams to drill or tune; an attached job's checkpoint is its own
code's to set). Whether a job is lost is the master's to say, not the store's (a job whose executors are gone
still shows its last batches for minutes): *Recover now* on a job that runs executors creates a run that refuses
it at its first task, saying how many executors it runs, and stops nothing. Its failure is the job's last recorded
batch, so a job lost minutes before the click is planned from its rates before it stopped.

    >>> ACTIONS["drill"].dag_id
    'ftops_chaos_drill'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi import HTTPException, Request

from ftops_provider.ui.templates import macro


@dataclass(frozen=True)
class Action:
    dag_id: str
    label: str
    kinds: frozenset[str]  # the job kinds (ui.models.JobKind.kind) that can take it
    what: str  # what the run does, for the button's caption
    param: str = "job"  # the DAG's Param that names the job
    lost_at_param: str | None = None  # the DAG's Param that takes when the job was lost (its last recorded batch)

    def conf(self, job: str, last_batch_at: float | None = None) -> dict[str, str]:
        """The run's conf: the job, every other Param at its default; a recovery's failure at the job's last recorded
        batch (``last_batch_at``, epoch s), so a job lost minutes before the click is planned from its rates before it
        stopped, not from the silence since."""
        conf = {self.param: job}
        if self.lost_at_param and last_batch_at is not None:
            conf[self.lost_at_param] = f"{last_batch_at:.3f}"
        return conf


ACTIONS: dict[str, Action] = {
    "drill": Action("ftops_chaos_drill", "Drill now", frozenset({"runnable", "attached"}),
                    "fails a failure domain of its primary and measures the recovery (its lease and safety net as "
                    "scheduled drills have)"),
    "tune": Action("ftops_checkpoint_tuning", "Tune checkpoint", frozenset({"runnable"}),
                   "profiles checkpoint intervals on copies of the job and stores Chiron's recommendation"),
    "replan": Action("ftops_profile_and_plan", "Re-plan", frozenset({"runnable", "attached", "plan-only"}),
                     "profiles the job, recomputes its plans and adapts its replica by its apply mode"),
    "recover": Action("ftops_fleet_recovery", "Recover now", frozenset({"runnable", "attached"}),
                      "restarts the job if its primary lost its executors, when capacity allows, and measures its time "
                      "back (a job running executors is refused by the run, and left alone)", param="jobs",
                      lost_at_param="failed_at"),
}


def check_action(action: str, kind: str, job: str) -> Action:
    """The action, or 404 (no such action) / 409 (the job's kind cannot take it), naming why."""
    if action not in ACTIONS:
        raise HTTPException(status_code=404, detail=f"action {action!r}: expected one of {', '.join(ACTIONS)}")
    found = ACTIONS[action]
    if kind not in found.kinds:
        raise HTTPException(status_code=409, detail=f"{found.label}: job {job!r} is {kind}; this action is for "
                                                    f"{' or '.join(sorted(found.kinds))} jobs")
    return found


def may_trigger(request: Request, user, dag_id: str) -> bool:
    """Whether the auth manager lets ``user`` create runs of ``dag_id`` (Airflow's own check, as its trigger
    button's)."""
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import requires_access_dag

    try:
        requires_access_dag("POST", DagAccessEntity.RUN, param_dag_id=dag_id)(request, user)
    except HTTPException as exc:
        if exc.status_code != 403:
            raise
        return False
    return True


def require_may_trigger(request: Request, user, dag_id: str) -> None:
    """403 unless :func:`may_trigger`."""
    if not may_trigger(request, user, dag_id):
        raise HTTPException(status_code=403, detail=f"{user.get_name()} may not trigger runs of {dag_id} (the "
                                                    "Airflow role decides; ask an admin)")


def trigger(action: Action, job: str, user, last_batch_at: float | None = None,
            options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Create the DAG run (queued; the scheduler starts it) as Airflow's trigger endpoint does, its conf the job's
    and ``options`` (:mod:`ftops_provider.ui.action_options`): refused (409) when
    its DAG is not in Airflow's database or no longer in a DAG file, or (400) has import errors or refuses the conf;
    recorded in Airflow's audit log. Its DAG, run id, whether the DAG is paused (a paused DAG's run waits until it is
    unpaused), and its page in Airflow's UI."""
    import json

    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.exceptions import DagRunAlreadyExists, ParamValidationError
    from airflow.models.dag import DagModel
    from airflow.models.log import Log
    from airflow.utils.session import create_session
    from airflow.utils.types import DagRunTriggeredByType

    with create_session() as session:
        model = session.get(DagModel, action.dag_id)
        if model is None or model.is_stale:
            raise HTTPException(status_code=409, detail=f"{action.label}: DAG {action.dag_id} is not in Airflow "
                                                        "(its DAG processor has not parsed it, or its file is gone)")
        if model.has_import_errors:
            raise HTTPException(status_code=400, detail=f"{action.label}: DAG {action.dag_id} has import errors "
                                                        "(Airflow's DAG list shows them)")
        paused = bool(model.is_paused)
    try:
        run = trigger_dag(action.dag_id, triggered_by=DagRunTriggeredByType.UI,
                          triggering_user_name=user.get_name(), conf={**action.conf(job, last_batch_at), **(options or {})})
    except (ParamValidationError, ValueError) as exc:
        raise HTTPException(status_code=400, detail=f"{action.label}: {exc}") from None
    except DagRunAlreadyExists as exc:
        raise HTTPException(status_code=409, detail=f"{action.label}: {exc}") from None
    with create_session() as session:  # as Airflow's own trigger endpoint logs it
        session.add(Log(event="trigger_dag_run", owner=user.get_name(), dag_id=action.dag_id, run_id=run.run_id,
                        extra=json.dumps({"source": "ftops console", "action": action.label, "job": job,
                                          "options": options or {}})))
    return {"action": action.label, "dag_id": action.dag_id, "run_id": run.run_id, "paused": paused,
            "url": f"/dags/{quote(action.dag_id)}/runs/{quote(run.run_id, safe='')}"}


def actions_form(job: str, kind: str, allowed: set[str]) -> str:
    """The job page's buttons, one line: a form per action its kind can take; each button's title says what its run
    does. An action whose DAG the user may not trigger (``allowed``: the DAG ids they may) is shown disabled, saying
    so (posting it would be refused anyway). Below them, folded away, the actions the user may start with options."""
    from ftops_provider.ui.action_options import dag_params, offered

    buttons, with_options = [], []
    for name, action in ACTIONS.items():
        if kind not in action.kinds:
            continue
        may = action.dag_id in allowed
        title = (f"starts {action.dag_id} for this job: {action.what}" if may
                 else f"your Airflow role may not trigger runs of {action.dag_id} (ask an admin)")
        buttons.append((name, action.label, title, may))
        params = offered(name, dag_params(action.dag_id)) if may else []
        if params:
            with_options.append((name, action.label, action.param, params))
    barred = not all(may for *_, may in buttons)
    return macro("actions.html", "bar")(job, buttons, barred, with_options)


def dag_paused(dag_id: str) -> bool:
    """Whether Airflow has the DAG paused (its runs wait until it is unpaused)."""
    from airflow.models.dag import DagModel

    model = DagModel.get_dagmodel(dag_id)
    return bool(model is not None and model.is_paused)


def watch_state() -> str:
    """Whether ``ftops_fleet_watch`` starts fleet recoveries by itself: ``on``, ``off`` (paused, or not installed) or
    ``recovery paused`` (the watch runs but its recoveries' DAG is paused)."""
    from airflow.models.dag import DagModel

    watch = DagModel.get_dagmodel("ftops_fleet_watch")
    if watch is None or watch.is_paused:
        return "off"
    return "recovery paused" if dag_paused(ACTIONS["recover"].dag_id) else "on"


def started_banner(dag_id: str, run_id: str, paused: bool, airflow_root: str) -> str:
    """The job page's note after an action: the run it created, linked to Airflow's page of it."""
    url = f"{airflow_root}/dags/{quote(dag_id)}/runs/{quote(run_id, safe='')}"
    return macro("actions.html", "started")(dag_id, run_id, paused, url)
