"""Operator arguments and DAG Params held to ft_core's input rules, with the CLI's messages.

Why: a DAG Param typed into the trigger form, or a templated value, reaches an operator as text; it must
be refused before the operator touches a cluster or the history store, exactly as ``ftops`` refuses the
same value on the command line. :func:`checked` validates one argument with a quantity of
:mod:`ft_core.input.quantities`, :func:`checked_name` a job or failure-domain name
(:mod:`ft_core.input.names`); :func:`bad_input_fails_the_task` turns any
:class:`~ft_core.errors.InputError` into ``AirflowFailException`` (a bad argument fails the same way on
every retry, so none is attempted); :func:`bounded_param` gives a DAG ``Param`` the JSON-schema bounds
of the same quantity and :func:`name_param` the name rule, so the trigger form refuses the value before
a run starts.

Example::

    >>> from ft_core.input.quantities import Seconds
    >>> checked(Seconds, "30", "replacement_delay_s")
    30.0
    >>> bounded_param(30, Seconds, "seconds until replacement capacity arrives").schema["maximum"]
    2592000
    >>> name_param("topk", "registered job").schema["maxLength"]
    63
    >>> optional_name_param("registered job (empty: the due jobs)").resolve("")
    ''
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from airflow.sdk import Param
from airflow.sdk.exceptions import AirflowFailException

from ft_core.errors import InputError
from ft_core.input.names import MAX_NAME_LENGTH, NAME_PATTERN, check_name
from ft_core.input.quantities import check, param_schema


@contextmanager
def bad_input_fails_the_task() -> Iterator[None]:
    """Inside: an InputError fails the task without retries, with the error's one-line message."""
    try:
        yield
    except InputError as exc:
        raise AirflowFailException(str(exc)) from None


def checked(kind: Any, value: Any, field: str) -> Any:
    """``value`` validated as ``kind`` (see :func:`ft_core.input.quantities.check`), or the task fails."""
    with bad_input_fails_the_task():
        return check(kind, value, field)


def checked_name(value: Any, what: str = "job name", field: str = "job_name") -> str:
    """``value`` when it is a name (:func:`ft_core.input.names.check_name`), or the task fails."""
    with bad_input_fails_the_task():
        return check_name(value, what, field)


def name_param(default: str, description: str, **schema: Any) -> Param:
    """A DAG ``Param`` holding a job or failure-domain name: the trigger form (and the API that
    creates a run) refuses anything else, with the pattern and length the CLI checks."""
    return Param(default, type="string", minLength=1, maxLength=MAX_NAME_LENGTH, pattern=NAME_PATTERN,
                 description=description, **schema)


def optional_name_param(description: str) -> Param:
    """A DAG ``Param`` holding a job name or nothing (empty, its default): what the empty value means is the DAG's
    to say in ``description`` (the due jobs, or a refusal)."""
    return Param("", type="string", maxLength=MAX_NAME_LENGTH, pattern=f"^$(?!\\n)|{NAME_PATTERN}",
                 description=description)


def bounded_param(default: Any, kind: Any, description: str, **schema: Any) -> Param:
    """A DAG ``Param`` with the type and bounds of ``kind`` (``schema`` adds or tightens keywords). An
    optional kind (``X | None``) becomes ``type: [null, ...]``, which the trigger form renders as a field."""
    return Param(default, description=description, **{**_nullable_flat(param_schema(kind)), **schema})


def _nullable_flat(schema: dict[str, Any]) -> dict[str, Any]:
    branches = schema.get("anyOf", [])
    if len(branches) == 2 and {"type": "null"} in branches:
        other = next(b for b in branches if b != {"type": "null"})
        return {**other, "type": ["null", other["type"]]}
    return schema
