"""The error contract of every ``ftops`` command: exit codes, the error's shape, the limits; and ``--help``'s epilog.

Exit codes:

- 0: done (for ``transparency check`` and ``units verify``: the check passed);
- 1: the check a command runs did not pass (a drill's verdict: ``drill run``, ``drill job``; ``units verify``:
  lost or duplicated rows; ``doctor``: something needs attention);
- 2: bad input (a document, a flag) or a system ftops drives did not answer; nothing was started or
  written;
- 3: the input is valid but infeasible (no plan meets the bound; streams not transparent);
- 70: an internal error (a bug in ftops: please report it; ``FTOPS_DEBUG=1`` shows the traceback);
- 130: interrupted (Ctrl-C or SIGTERM), after cleaning up what the command started.

An error is one line on stderr, ``ftops: error: <field>: <reason>`` (``infeasible`` instead of
``error`` for exit 3). With ``--json`` it is one JSON document on **stdout** instead, so a program
reading the output always reads one document, success or not::

    {"error": "<the same line without the ftops: prefix>", "field": "<flag or document field, or null>",
     "kind": "input|external|infeasible|busy|halted|usage|interrupted|internal", "exit_code": 2}

Example::

    >>> from ft_core.errors import InputError
    >>> error_document(InputError("--budget: Input should be greater than or equal to 0 (got -1)"))["field"]
    '--budget'
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ft_core.errors import FtopsError
from ft_core.input.limits import limits_help

EXIT_INTERNAL = 70  # sysexits' EX_SOFTWARE: distinct from every code a command returns on purpose
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C


def error_document(exc: BaseException) -> dict[str, Any]:
    """The ``--json`` form of an error (see the module docstring)."""
    if isinstance(exc, FtopsError):
        return {"error": str(exc), "field": exc.field, "kind": exc.kind, "exit_code": exc.exit_code}
    if isinstance(exc, KeyboardInterrupt):
        return {"error": "interrupted", "field": None, "kind": "interrupted", "exit_code": EXIT_INTERRUPTED}
    return {"error": f"internal error: {type(exc).__name__}: {exc}", "field": None, "kind": "internal",
            "exit_code": EXIT_INTERNAL}


def report_error(exc: BaseException, as_json: bool) -> int:
    """Print ``exc`` as the contract says (one line on stderr, or one JSON document on stdout); its exit code."""
    doc = error_document(exc)
    if as_json:
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()
    else:
        label = exc.label if isinstance(exc, FtopsError) else "error"
        sys.stderr.write(f"ftops: {label}: {' '.join(doc['error'].split())}\n")
    return doc["exit_code"]


def help_epilog() -> str:
    """The contract for ``--help``: exit codes, the error's shape and the limits in force."""
    return (
        "exit codes: 0 done; 1 a check did not pass (a drill failed, units verify, doctor); 2 bad input or an\nunreachable system "
        "(nothing started or written); 3 valid but infeasible, the job is busy with another experiment, or\n"
        "experiments are halted (`ftops halt`);\n"
        "70 internal error (a bug; FTOPS_DEBUG=1 shows the traceback); 130 interrupted.\n"
        "errors: one line on stderr, 'ftops: error: <field>: <reason>'; with --json one document on stdout:\n"
        '  {"error": "...", "field": "--flag or document.field or null", "kind": "input|external|infeasible|'
        'busy|halted|usage|interrupted|internal", "exit_code": 2}\n'
        "limits (environment variable=value in force):\n" + limits_help()
    )
