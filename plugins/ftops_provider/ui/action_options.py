"""An action's options: the DAG Params a person may set from a job's console page, as a form with the DAG's own
bounds (issue 36, item 3: "forms take the same bounded Params as the DAGs").

Problem: *Drill now* and the other actions start their DAG with every Param at its default; an operator who wants to
fail a particular domain, kill the driver or recover with known arrivals had to leave for Airflow's trigger form and
type the job's name again. Each action lists the Params it offers (:data:`OPTIONS`); the form reads their JSON
schemas from the DAG Airflow has (its serialized DAG: the schema Airflow's own trigger form and ``trigger_dag`` use)
and renders each as the input its type asks for (a choice for an ``enum`` or a boolean, a number field with the
schema's minimum and maximum, a text field with its length). A posted value is typed by the same schema and the run is
created by ``trigger_dag``, which validates it against the Param (out of bounds: refused, 400, naming the Param and
nothing created). The job's own Param is the page's and cannot be set here (``templates/actions.html``: ``field``).
"""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException

from ftops_provider.ui.formats import param_text
from ftops_provider.ui.templates import macro

OPTIONS: dict[str, tuple[str, ...]] = {  # per action (ui.actions.ACTIONS): the Params offered, in the form's order
    "drill": ("failure_domain", "fault", "kill_driver", "replacement_delay_s", "timeout_s"),
    "tune": ("intervals_s", "failures", "duration_s", "resubmit"),
    "replan": ("of_threshold",),
    "recover": ("arrivals", "policy", "replacement_s", "timeout_s", "lease_ttl_s"),
}


def dag_params(dag_id: str) -> dict[str, tuple[dict[str, Any], Any, str]]:
    """Param name -> (JSON schema, default, description) of the DAG as Airflow has it serialized; empty when Airflow
    does not have it (the page then offers the plain button only)."""
    from airflow.models.serialized_dag import SerializedDagModel

    dag = SerializedDagModel.get_dag(dag_id)
    if dag is None:
        return {}
    out = {}
    for name in dag.params:
        param = dag.params.get_param(name)
        out[name] = (dict(param.schema), param.value, param.description or "")
    return out


def offered(action: str, params: dict[str, tuple[dict[str, Any], Any, str]]) -> list[tuple[str, tuple]]:
    """The Params ``action`` offers that the DAG has, in the form's order: ``(name, (schema, default, description))``."""
    return [(n, params[n]) for n in OPTIONS.get(action, ()) if n in params]


def options_conf(action: str, given: dict[str, Any], params: dict[str, tuple[dict[str, Any], Any, str]],
                 from_form: bool) -> dict[str, Any]:
    """The conf values of ``given`` (a form's text, or a JSON body's values), typed by each Param's schema; 400
    naming an option the action does not offer or a form value its type refuses. Bounds are Airflow's to check
    (``trigger_dag`` validates the conf against the Params)."""
    offered = OPTIONS.get(action, ())
    conf = {}
    for name, value in given.items():
        if name not in offered or name not in params:
            raise HTTPException(status_code=400, detail=f"option {name!r}: this action takes "
                                                        f"{', '.join(offered) or 'no option'}")
        conf[name] = _typed(name, value, params[name][0]) if from_form else _finite(name, value)
    return conf


def _finite(name: str, value: Any) -> Any:
    """A JSON value as given, but no NaN or infinity (JSON Schema's bounds let NaN through, and the run's conf
    could not be stored)."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        raise HTTPException(status_code=400, detail=f"{name}: {value!r} is not a finite number")
    return value


def _typed(name: str, text: str, schema: dict[str, Any]) -> Any:
    kinds = schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]
    if "enum" in schema:
        match = [c for c in schema["enum"] if param_text(c) == text]
        return match[0] if match else text  # not one of them: Airflow's validation names the choices
    if "boolean" in kinds:
        if text not in ("true", "false"):
            raise HTTPException(status_code=400, detail=f"{name}: expected true or false, got {text!r}")
        return text == "true"
    if "number" in kinds or "integer" in kinds:
        if text.strip() == "" and "null" in kinds:
            return None
        try:
            number = float(text)
        except ValueError:
            raise HTTPException(status_code=400, detail=f"{name}: {text!r} is not a number") from None
        number = _finite(name, number)
        return int(number) if "integer" in kinds and number.is_integer() else number
    return text


def fleet_recovery_form(params: dict[str, tuple[dict[str, Any], Any, str]], allowed: bool, watch: str) -> str:
    """The jobs page's *Recover lost jobs*: ``ftops_fleet_recovery`` for every registered job whose primary has lost
    its executors (the run's ``jobs`` empty: its first task asks the master), with the recovery's options, and
    whether the fleet watch starts it by itself (``watch``: :func:`~ftops_provider.ui.actions.watch_state`)."""
    return macro("actions.html", "fleet_recovery")(offered("recover", params), allowed, watch)
