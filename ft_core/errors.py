"""Errors that ftops raises on purpose; the CLI prints their message (never a traceback).

- :class:`InputError` (exit status 2): a document or argument is invalid; the message names the
  field and the reason.
- :class:`InfeasibleError` (exit status 3): the input is valid but no plan satisfies its
  constraints; the message says how close we got.
- :class:`ExternalError` (exit status 2): a system ftops drives (a Spark master, PostgreSQL) did
  not answer or did not reach the expected state; the message says which and where to look.
"""


class FtopsError(Exception):
    exit_code = 1
    label = "error"


class InputError(FtopsError, ValueError):
    exit_code = 2


class InfeasibleError(FtopsError, RuntimeError):
    exit_code = 3
    label = "infeasible"


class ExternalError(FtopsError, RuntimeError):
    exit_code = 2
