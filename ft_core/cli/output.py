"""Printing for the CLI: JSON documents on stdout and tables (rich); progress is :mod:`ft_core.cli.progress`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def command_line(default: Sequence[str] = ()) -> str:
    """The command as the user typed it (``default``: the arguments to show when run without any, e.g. in
    process), shell-quoted: what a benchmark report names as the command that produced it."""
    import shlex

    return "ftops " + " ".join(shlex.quote(a) for a in (sys.argv[1:] or list(default)))


# Documents print_json wrote for the running command (main resets it). With --json a command prints one
# document; a server prints it when it starts, so an error after that goes to stderr (one line) instead of
# becoming a second document on stdout.
_documents = 0


def print_json(doc: BaseModel | dict | list) -> None:
    """Print a model or plain document as indented JSON on stdout (flushed: a server's start document must
    reach a reader before the server exits)."""
    global _documents
    if isinstance(doc, BaseModel):
        doc = doc.model_dump(mode="json", by_alias=True)
    json.dump(doc, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
    sys.stdout.flush()
    _documents += 1


def start_command() -> None:
    """A new command runs (in-process callers run many): no document printed yet."""
    global _documents
    _documents = 0


def document_printed() -> bool:
    """Whether the running command already printed its JSON document."""
    return _documents > 0


def emit_report(report: str, out: str | None, as_json: bool) -> None:
    """A benchmark's markdown report: written to ``out`` (if any, said on stderr), then printed, or with
    ``as_json`` printed as ``{"out": ..., "report": ...}``."""
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(report)
        print(f"wrote {out}", file=sys.stderr)
    if as_json:
        print_json({"out": out, "report": report})
    else:
        print(report)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A left-aligned text table with a rule under the header; floats are shown with 4 decimals.

    >>> print(format_table(["task", "rate"], [["O1[0]", 2.0], ["O1[rack-a]", 0.5]]))
    task        rate
    ──────────────────
    O1[0]       2.0000
    O1[rack-a]  0.5000
    """
    from rich import box  # only where a table is printed: `ftops` starts faster without rich
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(*headers, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, header_style="", padding=(0, 1, 0, 0))
    for row in rows:
        table.add_row(*(Text(_cell(v)) for v in row))  # Text: no rich markup in task ids like O1[rack-a]
    console = Console(width=100_000, file=None, color_system=None, force_terminal=False, legacy_windows=False)
    with console.capture() as capture:
        console.print(table)
    return "\n".join(line.rstrip() for line in capture.get().splitlines() if line.strip())


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    print(format_table(headers, rows))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)
