"""The ``ftops`` command line.

Each command group lives in its own module with a ``register(subparsers)`` function that adds its
parsers and sets ``func`` on them; ``func(args)`` returns the exit status. Errors raised on purpose
(:mod:`ft_core.errors`) become a one-line message on stderr and their exit status (2 for bad
input or an unreachable system, 3 for an infeasible request).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from ft_core.errors import FtopsError

EXIT_INPUT_ERROR = 2  # also argparse's usage errors


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; keep the message on one line."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT_ERROR, f"ftops: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from ft_core.cli import registry

    parser = _Parser(prog="ftops", description="Fault-tolerance planning and operations for Spark Structured Streaming.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    registry.register_all(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()  # commands with a time limit count from here (imports included)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.started = started
    try:
        return int(args.func(args) or 0)
    except FtopsError as exc:
        print(f"ftops: {exc.label}: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # e.g. `ftops ... | head`: the reader left, nothing more to say
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("ftops: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover - `python -m ft_core.cli.main`
    sys.exit(main())
