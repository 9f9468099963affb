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
from tests.input.harness import leaves, run

FTOPS = Path(sys.executable).with_name("ftops")


LEAVES = list(leaves(build_parser()))


def test_every_help_states_the_exit_codes_the_error_shape_and_the_limits():
    for path, parser in [((), build_parser()), *LEAVES]:
        text = parser.format_help()
        assert "exit codes: 0 done" in text and "3 valid but infeasible" in text and "130 interrupted" in text, path
        assert '{"error": "...", "field":' in text, path
        assert all(limit.env in text for limit in LIMITS.values()), path


def test_every_command_takes_json():
    """Issue 17: ``--json`` on every command, ft_core's, spark_jobs's and ftops_provider's alike."""
    assert len(LEAVES) >= 65
    missing = [" ".join(path) for path, parser in LEAVES
               if not any(a.option_strings == ["--json"] and a.nargs == 0 for a in parser._actions)]
    assert missing == []


def _bad_flag(parser) -> list[str]:
    """A flag value the command must refuse before it starts anything: a number flag given ``nan``, else a
    flag the command does not have."""
    for action in parser._actions:
        if action.option_strings and action.type is not None and action.nargs is None:
            try:
                action.type("nan")
            except (argparse.ArgumentTypeError, TypeError, ValueError):
                return [action.option_strings[0], "nan"]
    return ["--no-such-flag"]


@pytest.mark.parametrize("path", [path for path, _ in LEAVES], ids=" ".join)
def test_bad_input_with_json_is_one_json_document_on_stdout(tmp_path, path):
    """Every command, its --json error: one document on stdout, nothing on stderr, exit 2, the flag named."""
    parser = dict(LEAVES)[path]
    bad = _bad_flag(parser)
    res = run([*path, *bad, "--json"], tmp_path)
    assert (res.code, res.err) == (2, ""), (path, res.err)
    doc = json.loads(res.out)  # one document: json.loads refuses anything after it
    assert set(doc) == {"error", "field", "kind", "exit_code"} and doc["exit_code"] == 2
    # the bad flag, or an argument the command needs that argparse checks first
    needed = [a for a in parser._actions if a.required]
    needed += [a for g in parser._mutually_exclusive_groups if g.required for a in g._group_actions]
    names = {bad[0]} | {s for a in needed for s in (a.option_strings or [a.dest])}
    assert doc["kind"] == "usage" and doc["field"] in names, doc
    assert list(tmp_path.iterdir()) == []


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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_exits_130_with_one_line(tmp_path, sig):
    """Ctrl-C or SIGTERM (a service manager, `kill`) in a long command: the command stops, cleans up (here: no
    half-written report), says so in one line and exits 130. The command starts with Ctrl-C's default action, as
    from a terminal: a suite started in the background of a script inherits SIGINT ignored, and Python keeps an
    ignored SIGINT ignored (the signal was then lost and the benchmark finished with 0)."""
    proc = subprocess.Popen([FTOPS, "bench", "simulate", "--out", tmp_path / "report.md"], stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = proc.stderr.readline()  # the first progress line: the benchmark runs
        assert first.startswith("[bench]"), first
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "ftops: error: interrupted" and out == ""
    assert not (tmp_path / "report.md").exists()


# old spelling -> (a command line with it, the new flag, its destination)
RENAMED = {
    "--state": [(["plan", "redundancy", "--level", "0.2"], "--state-file", "state_file"),
                (["workload", "retune"], "--state-file", "state_file")],
    "--dir": [(["units", "status"], "--deployment-dir", "deployment_dir"), (["units", "deploy", "--placement", "p.json"],
                                                                          "--deployment-dir", "deployment_dir")],
    "--cluster-state": [(["job", "register", "--name", "j"], "--state-dir", "state_dir")],
    "--state-dir": [(["db", "status"], "--db-dir", "db_dir")],
}


@pytest.mark.parametrize("old, argv, new, dest", [(old, *case) for old, cases in RENAMED.items() for case in cases])
def test_an_old_flag_spelling_works_for_one_release_hidden_from_help(old, argv, new, dest):
    """One flag name per concept (docs/cli.md); the old spellings still parse, with a note on stderr."""
    parser = dict(LEAVES)[tuple(a for a in argv if not a.startswith("-"))[:2]]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        args = build_parser().parse_args([*argv, old, "/tmp/x"])
    assert getattr(args, dest) == getattr(build_parser().parse_args([*argv, new, "/tmp/x"]), dest)
    assert str(getattr(args, dest)) == "/tmp/x"
    assert err.getvalue() == f"ftops: note: `{old}` is now `{new}`; the old spelling goes away in the next release\n"
    usage = parser.format_help().split("exit codes:")[0]
    assert new in usage and f"{old} " not in usage and f"{old}," not in usage


def test_an_old_flag_spelling_runs_the_command_with_the_new_name_in_messages(tmp_path):
    res = run(["units", "status", "--dir", tmp_path / "nowhere"], tmp_path)
    note, error = res.err.splitlines()
    assert note.startswith("ftops: note: `--dir` is now `--deployment-dir`")
    assert res.code == 2 and error.startswith("ftops: error: --deployment-dir: no recovery-units deployment in")
