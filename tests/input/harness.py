"""Running ``ftops`` in-process on hostile input, and what every such run must satisfy.

Why in-process: a subprocess costs a second of interpreter and import time on a loaded machine; the
property suites run a few hundred commands, so they call :func:`ft_core.cli.main.main` with captured
stdout and stderr in a scratch folder (a handful of subprocess checks cover the real entry point).
A run that takes longer than :data:`HANG_S` is stopped with :class:`Hang` (a ``BaseException``, so the
CLI's own error handling cannot swallow it): the generous bound catches a hang, never a slow machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import yaml

from ft_core.cli.main import main

HANG_S = 30.0


class Hang(BaseException):
    """A command ran past :data:`HANG_S` seconds."""


@dataclass
class Run:
    code: int
    out: str
    err: str


@contextlib.contextmanager
def _deadline(seconds: float):
    def expire(signum, frame):
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(argv: list[str], cwd: Path) -> Run:
    """``ftops ARGV`` in-process in folder ``cwd``, stdout and stderr captured, within :data:`HANG_S`."""
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with _deadline(HANG_S), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
    finally:
        os.chdir(here)
    return Run(code, out.getvalue(), err.getvalue())


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every command of the parser tree (``("plan", "replication")``, ...) with its parser."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # argparse has no public accessor
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from leaves(child, (*path, name))


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time, to prove nothing was written."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def rejected(argv: list[str], cwd: Path, needle: str, *, code: int = 2) -> Run:
    """Run ``argv`` and assert the contract for bad input: exit ``code``, one line on stderr containing
    ``needle`` (the field), nothing on stdout, no traceback, nothing written in ``cwd``."""
    before = snapshot(cwd)
    res = run(argv, cwd)
    assert res.code == code, f"exit {res.code} for {argv}: {res.err or res.out[:300]}"
    assert res.err.count("\n") == 1 and res.err.startswith("ftops: "), res.err
    assert needle in res.err, f"{needle!r} not in {res.err!r}"
    assert "Traceback" not in res.err and res.out == "", res.out[:300]
    assert snapshot(cwd) == before, "a rejected command wrote files"
    return res


def write_document(folder: Path, name: str, doc, *, raw: dict[str, str] | None = None) -> Path:
    """Write ``doc`` as JSON or YAML (by ``name``'s suffix). ``raw`` replaces quoted placeholder strings
    with literal text, for what a serialiser would never write (``NaN``, ``1e400``, 5000-digit numbers)."""
    path = folder / name
    if name.endswith((".yaml", ".yml")):
        text = yaml.safe_dump(doc, sort_keys=False)
        for placeholder, literal in (raw or {}).items():
            text = text.replace(f"'{placeholder}'", literal).replace(placeholder, literal)
    else:
        text = json.dumps(doc)
        for placeholder, literal in (raw or {}).items():
            text = text.replace(json.dumps(placeholder), literal)
    path.write_text(text)
    return path
