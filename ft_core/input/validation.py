"""Pydantic validation errors as one line naming the field: the shape of every input error.

Why one place: documents, flags, DAG Params and operator arguments are all validated with pydantic;
each must fail with ``<document> field <path>: <reason>`` (or ``<flag>: <reason>``), the offending value
shown when it is short, and :class:`~ft_core.errors.InputError` carrying the field for ``--json``.

Example::

    >>> from pydantic import BaseModel, Field
    >>> class Doc(BaseModel):
    ...     rate: float = Field(ge=0, allow_inf_nan=False)
    >>> validate(Doc, {"rate": -1}, "topology")
    Traceback (most recent call last):
    ...
    ft_core.errors.InputError: topology field rate: Input should be greater than or equal to 0 (got -1)
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ft_core.errors import InputError, field_of

M = TypeVar("M", bound=BaseModel)

# Errors whose input is the whole object or already named in the message: no "(got ...)".
_NO_GOT = {"missing", "extra_forbidden", "value_error", "assertion_error", "model_type", "dict_type"}
_JSON_TYPES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
               float: "a number", type(None): "null"}


def validate(model: type[M], data: Any, what: str) -> M:
    """``data`` (a parsed document) as ``model``; :class:`InputError` naming the field otherwise."""
    if not isinstance(data, dict):
        raise InputError(f"{what}: expected an object, got {json_type(data)}", field=what)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise document_error(exc, what) from None


def document_error(exc: ValidationError, what: str) -> InputError:
    """The first error of ``exc`` as ``<what> field <path>: <reason>``."""
    err = exc.errors()[0]
    path = ".".join(str(part) for part in err["loc"])
    reason = describe(err)
    if path:
        return InputError(f"{what} field {path}: {reason}", field=path)
    inner = field_of(reason)  # a check of the whole document that names the field itself
    if inner is not None:
        return InputError(f"{what} field {reason}", field=inner)
    return InputError(f"{what}: {reason}", field=what)


def value_error(exc: ValidationError, field: str) -> InputError:
    """The first error of ``exc`` about a single value (a flag, an argument) as ``<field>: <reason>``."""
    return InputError(f"{field}: {describe(exc.errors()[0])}", field=field)


def describe(err: dict) -> str:
    """One pydantic error's reason, with the offending value when it is short."""
    reason = str(err["msg"]).removeprefix("Value error, ")
    value = err.get("input")
    if err["type"] in _NO_GOT or isinstance(value, (dict, list)):
        return reason
    shown = repr(value)
    return f"{reason} (got {shown})" if len(shown) <= 40 else reason


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages ("an object", "a list", ...)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)
