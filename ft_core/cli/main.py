"""The ``ftops`` command line.

Each command group lives in its own module with a ``register(subparsers)`` function that adds its
parsers and sets ``func`` on them; ``func(args)`` returns the exit status. Errors of the user's
input (:class:`~ft_core.errors.InputError`) become a message on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ft_core.errors import InfeasibleError, InputError

EXIT_INPUT_ERROR = 2
EXIT_INFEASIBLE = 3


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
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"ftops: error: {exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except InfeasibleError as exc:
        print(f"ftops: infeasible: {exc}", file=sys.stderr)
        return EXIT_INFEASIBLE
    except KeyboardInterrupt:
        print("ftops: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover - `python -m ft_core.cli.main`
    sys.exit(main())
