"""The error contract every ``ftops`` command keeps (issue 17 point 5, issue 18): exit codes, the error's
shape with and without ``--json``, ``--version``, and the contract and limits in every ``--help``."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from ft_core.cli.contract import error_document
from ft_core.cli.main import build_parser, main
from ft_core.errors import InfeasibleError, InputError
from ft_core.input.limits import LIMITS
from tests.conftest import SAMPLES
from tests.input.harness import run

FTOPS = Path(sys.executable).with_name("ftops")


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # argparse has no public accessor
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, (*path, name))


LEAVES = list(_leaves(build_parser()))


def test_every_help_states_the_exit_codes_the_error_shape_and_the_limits():
    for path, parser in [((), build_parser()), *LEAVES]:
        text = parser.format_help()
        assert "exit codes: 0 done" in text and "3 valid but infeasible" in text and "130 interrupted" in text, path
        assert '{"error": "...", "field":' in text, path
        assert all(limit.env in text for limit in LIMITS.values()), path


def test_every_ft_core_command_takes_json():
    ft_core_commands = [path for path, parser in LEAVES if parser.get_default("func").__module__.startswith("ft_core.")]
    assert len(ft_core_commands) >= 20
    for path, parser in LEAVES:
        if parser.get_default("func").__module__.startswith("ft_core."):
            assert any("--json" in action.option_strings for action in parser._actions), path


def test_version():
    out = io.StringIO()
    with pytest.raises(SystemExit) as done, contextlib.redirect_stdout(out):
        main(["--version"])
    assert done.value.code == 0 and out.getvalue() == f"ftops {version('ftops')}\n"


@pytest.mark.parametrize("argv, code, kind, field", [
    (["plan", "replication", "{S}/fig2-join.json", "--budget", "1", "--time-limit", "nan"], 2, "usage", "--time-limit"),
    (["topology", "check", "{S}/missing.json"], 2, "input", "topology"),
    (["plan", "placement", "{S}/placement-nodes.yaml", "--k-min", "3"], 3, "infeasible", None),
    (["plan", "checkpoint", "{S}/profiles-example.json", "--max-recovery-s", "1"], 3, "infeasible", None),
    (["plan", "replication", "{S}/fig2-join.json"], 2, "usage", "--budget"),
    (["no-such-command"], 2, "usage", "command"),
])
def test_errors_are_one_line_on_stderr_or_one_json_document_on_stdout(tmp_path, argv, code, kind, field):
    argv = [a.replace("{S}", str(SAMPLES)) for a in argv]
    plain = run(argv, tmp_path)
    assert plain.code == code and plain.out == "" and plain.err.count("\n") == 1
    assert plain.err.startswith("ftops: infeasible: " if code == 3 else "ftops: error: ")
    as_json = run([*argv, "--json"], tmp_path)
    assert as_json.code == code and as_json.err == ""
    doc = json.loads(as_json.out)
    assert set(doc) == {"error", "field", "kind", "exit_code"}
    assert (doc["kind"], doc["field"], doc["exit_code"]) == (kind, field, code)
    assert doc["error"] in plain.err


def test_error_documents_of_every_kind():
    assert error_document(InputError("--budget: bad"))["field"] == "--budget"
    assert error_document(InfeasibleError("no plan"))["exit_code"] == 3
    assert error_document(KeyboardInterrupt()) == {"error": "interrupted", "field": None, "kind": "interrupted",
                                                   "exit_code": 130}
    bug = error_document(ZeroDivisionError("division by zero"))
    assert bug["exit_code"] == 70 and bug["kind"] == "internal" and "ZeroDivisionError" in bug["error"]


def test_the_real_entry_point_keeps_the_contract(tmp_path):
    """Through the console script, as users run it (the property suites run the same main in-process)."""
    utf16_without_mark = tmp_path / "export.json"
    utf16_without_mark.write_bytes((SAMPLES / "fig1.json").read_text().encode("utf-16-le"))
    proc = subprocess.run([FTOPS, "topology", "check", utf16_without_mark, "--json"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == ""
    assert json.loads(proc.stdout)["error"].endswith("not text: a NUL byte at offset 1 (a binary file, or UTF-16/UTF-32 "
                                                     "without a byte order mark); save the file as UTF-8")
    assert [p.name for p in tmp_path.iterdir()] == ["export.json"]


def test_interrupted_exits_130_with_one_line(tmp_path):
    """Ctrl-C in a long command: the command stops, says so in one line and exits 130."""
    proc = subprocess.Popen([FTOPS, "bench", "simulate", "--out", tmp_path / "report.md"], stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        first = proc.stderr.readline()  # the first progress line: the benchmark runs
        assert first.startswith("[bench]"), first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "ftops: error: interrupted" and out == ""
    assert not (tmp_path / "report.md").exists()
