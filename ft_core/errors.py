"""Errors that ftops raises on purpose; the CLI prints their message (never a traceback).

- :class:`InputError` (exit status 2): a document or argument is invalid; the message names the
  field and the reason.
- :class:`InfeasibleError` (exit status 3): the input is valid but no plan satisfies its
  constraints; the message says how close we got.
- :class:`ExternalError` (exit status 2): a system ftops drives (a Spark master, PostgreSQL) did
  not answer or did not reach the expected state; the message says which and where to look.

Every error has a ``field``: the flag or document field it is about (``--budget``,
``operators.0.parallelism``), or None. Input errors follow one convention, ``<field>: <reason>`` or
``<document> field <path>: <reason>``, so when a raise site does not pass ``field`` it is read from
the message:

    >>> InputError("--budget: must be >= 0, got -1").field
    '--budget'
    >>> InputError("topology field operators.0.parallelism: Input should be greater than or equal to 1").field
    'operators.0.parallelism'
    >>> InputError("nothing fails", field="--fail").field
    '--fail'
"""

from __future__ import annotations

import re

# "<document> field <path>: ..." or "<field>: ..." where the field has no spaces
_DOCUMENT_FIELD = re.compile(r"^[\w -]+? field (?P<field>[^\s:]+):")
_LEADING_FIELD = re.compile(r"^(?P<field>[^\s:]+):")


class FtopsError(Exception):
    exit_code = 1
    label = "error"
    kind = "error"

    def __init__(self, message: str = "", *, field: str | None = None):
        super().__init__(message)
        self.field = field


class InputError(FtopsError, ValueError):
    exit_code = 2
    kind = "input"

    def __init__(self, message: str = "", *, field: str | None = None):
        super().__init__(message, field=field if field is not None else field_of(message))


class InfeasibleError(FtopsError, RuntimeError):
    exit_code = 3
    label = "infeasible"
    kind = "infeasible"


class ExternalError(FtopsError, RuntimeError):
    exit_code = 2
    kind = "external"


def field_of(message: str) -> str | None:
    """The field a conventional message names (see the module docstring), else None."""
    match = _DOCUMENT_FIELD.match(message) or _LEADING_FIELD.match(message)
    return match["field"] if match else None
