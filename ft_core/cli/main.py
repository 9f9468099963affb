"""The ``ftops`` command line.

Each command group lives in its own module with a ``register(subparsers)`` function that adds its
parsers and sets ``func`` on them; ``func(args)`` returns the exit status. Errors are handled here
once, for every command (:mod:`ft_core.cli.contract`): errors raised on purpose (:mod:`ft_core.errors`)
and argparse's usage errors become one line on stderr (or, with ``--json``, one JSON document on
stdout) and their exit status: 2 for bad input or an unreachable system, 3 for an infeasible
request, 130 when interrupted, 70 for a bug. Every parser's ``--help`` ends with that contract.
"""

from __future__ import annotations

import argparse
import os
import signal
import re
import sys
import time
from collections.abc import Sequence
from functools import cache
from importlib.metadata import PackageNotFoundError, version

from ft_core.cli import output
from ft_core.cli.contract import help_epilog, report_error
from ft_core.errors import FtopsError, InputError

_ARGUMENT = re.compile(r"^argument (?P<names>[^:]+): (?P<reason>.*)$", re.DOTALL)
_REQUIRED = "the following arguments are required: "
_UNRECOGNIZED = "unrecognized arguments: "
_ONE_OF = re.compile(r"^one of the arguments (?P<first>\S+) .* is required$")


class UsageError(InputError):
    """A command line argparse could not parse (a missing or unknown flag, a value of the wrong kind)."""

    kind = "usage"


class _HelpFormatter(argparse.HelpFormatter):
    """Wrap descriptions as usual, but keep texts with line breaks (the epilog's contract) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


class _Parser(argparse.ArgumentParser):
    """Every ``ftops`` parser: the error contract as its epilog, usage errors raised as :class:`UsageError`
    (one line, with ``--json`` a JSON document, exit 2) instead of argparse's usage dump."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        kwargs.setdefault("epilog", help_epilog())
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        raise usage_error(message, self.prog)

    def _get_values(self, action, arg_strings):
        # `--flag=--`: argparse drops the '--' and hands the command an empty list, never calling the type
        if action.option_strings and arg_strings == ["--"]:
            raise argparse.ArgumentError(action, "expected a value, got '--'")
        return super()._get_values(action, arg_strings)


def usage_error(message: str, prog: str) -> UsageError:
    """argparse's message as ``<field>: <reason>`` naming the flag, with where to read more.

    >>> str(usage_error("argument --budget/-R: invalid int value: 'x'", "ftops plan replication"))
    "--budget: invalid int value: 'x' (see ftops plan replication --help)"
    >>> usage_error("unrecognized arguments: --bugdet=2 x", "ftops").field
    '--bugdet'
    >>> usage_error("one of the arguments --domain --app is required", "ftops units kill").field
    '--domain'
    """
    match = _ARGUMENT.match(message)
    if match:
        field = match["names"].split("/")[0]
        text = f"{field}: {match['reason']}"
    elif message.startswith(_REQUIRED):
        missing = [name.split("/")[0].strip() for name in message.removeprefix(_REQUIRED).split(",")]
        field = missing[0]
        text = f"{field}: required" + (f" (also missing: {', '.join(missing[1:])})" if missing[1:] else "")
    elif message.startswith(_UNRECOGNIZED):  # a flag the command does not have: name it as the field
        field, text = message.removeprefix(_UNRECOGNIZED).split(" ")[0].split("=")[0], message
    elif _ONE_OF.match(message):  # a required choice between flags: the first stands for the group
        field, text = _ONE_OF.match(message)["first"], message
    else:
        field, text = None, message
    return UsageError(f"{' '.join(text.split())} (see {prog} --help)", field=field)


def build_parser() -> argparse.ArgumentParser:
    from ft_core.cli import registry

    parser = _Parser(prog="ftops", description="Fault-tolerance planning and operations for Spark Structured Streaming.")
    parser.add_argument("--version", action="version", version=f"ftops {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    registry.register_all(sub)
    return parser


@cache
def _shared_parser() -> argparse.ArgumentParser:
    """One parser per process: parsing leaves no state in it (each call gets a new namespace), and
    in-process callers (tests, the property suites) run hundreds of commands."""
    return build_parser()


def _version() -> str:
    try:
        return version("ftops")
    except PackageNotFoundError:  # run from a source tree that was never installed
        from ft_core import __version__

        return __version__


def wants_json(argv: Sequence[str]) -> bool:
    """Whether ``--json`` is among the command's own flags (not the arguments after ``--``)."""
    argv = list(argv)
    return "--json" in (argv[: argv.index("--")] if "--" in argv else argv)


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # run as the program (not called in-process): SIGTERM cleans up like Ctrl-C
        _interrupt_on_sigterm()
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = wants_json(argv)
    started = time.perf_counter()  # commands with a time limit count from here (their own imports included)
    output.start_command()
    try:
        args = _shared_parser().parse_args(argv)
        args.started = started
        return int(args.func(args) or 0)
    except FtopsError as exc:
        return _report(exc, as_json)
    except BrokenPipeError:  # e.g. `ftops ... | head`: the reader left, nothing more to say
        sys.stderr.close()
        return 0
    except KeyboardInterrupt as exc:  # exit 130, after the command's own cleanup ran
        return _report(exc, as_json)
    except Exception as exc:  # a bug: say so in one line; FTOPS_DEBUG=1 keeps the traceback
        if os.environ.get("FTOPS_DEBUG"):
            raise
        return _report(exc, as_json)


def _interrupt_on_sigterm() -> None:
    """SIGTERM raises KeyboardInterrupt, so every command's cleanup (``finally``: clusters, applications,
    leases) runs and it exits 130, as on Ctrl-C; a command that handles SIGTERM itself replaces this."""
    def handler(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def _report(exc: BaseException, as_json: bool) -> int:
    """The error as the contract says; as a line on stderr once the command printed its document (a
    server's start document), so that stdout holds one JSON document whatever happens."""
    return report_error(exc, as_json and not output.document_printed())


if __name__ == "__main__":  # pragma: no cover - `python -m ft_core.cli.main`
    sys.exit(main())
