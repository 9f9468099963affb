"""Printing for the CLI: JSON documents, plain tables, and a progress bar on stderr."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


def print_json(doc: BaseModel | dict | list) -> None:
    """Print a model or plain document as indented JSON on stdout."""
    if isinstance(doc, BaseModel):
        doc = doc.model_dump(mode="json", by_alias=True)
    json.dump(doc, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


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
    """A left-aligned text table; floats are shown with 4 decimals."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join([line, rule, *body])


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    print(format_table(headers, rows))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def progress(items: Sequence[T], label: str, *, enabled: bool | None = None) -> Iterator[T]:
    """Yield ``items`` while drawing a progress bar on stderr (only when stderr is a terminal,
    unless ``enabled`` forces it)."""
    show = sys.stderr.isatty() if enabled is None else enabled
    total = len(items)
    start = time.monotonic()
    for done, item in enumerate(items):
        if show:
            _draw(label, done, total, start)
        yield item
    if show:
        _draw(label, total, total, start)
        sys.stderr.write("\n")


def _draw(label: str, done: int, total: int, start: float) -> None:
    width = 30
    filled = width * done // max(total, 1)
    elapsed = time.monotonic() - start
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {elapsed:5.1f}s")
    sys.stderr.flush()
