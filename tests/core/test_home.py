"""FTOPS_HOME: where ftops keeps its local state (an installed wheel's default is checked in tests/stack/test_wheel.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ft_core.cli.main import build_parser
from ft_core.errors import InputError
from ft_core.home import ftops_home, path_flag, state_path
from tests.conftest import ROOT, run_cli


def test_a_checkout_keeps_its_state_in_dot_state(monkeypatch):
    monkeypatch.delenv("FTOPS_HOME", raising=False)
    assert ftops_home() == ROOT / ".state"


def test_ftops_home_wins_and_flags_default_under_it(monkeypatch, tmp_path):
    monkeypatch.setenv("FTOPS_HOME", str(tmp_path))
    assert state_path("units", "smartcity") == tmp_path / "units" / "smartcity"
    assert path_flag("$FTOPS_HOME/spark") == tmp_path / "spark"
    assert path_flag("elsewhere/spark") == Path("elsewhere/spark")


def test_a_relative_ftops_home_is_refused(monkeypatch):
    monkeypatch.setenv("FTOPS_HOME", "state")
    with pytest.raises(InputError, match="FTOPS_HOME: must be an absolute path, got 'state'"):
        ftops_home()


def test_commands_read_the_home_when_they_run(tmp_path):
    res = run_cli("cluster", "status", env={"FTOPS_HOME": str(tmp_path)})
    assert res.code == 2 and f"no cluster state in {tmp_path / 'spark'}" in res.err
    res = run_cli("cluster", "status", env={"FTOPS_HOME": "relative/home"})
    assert res.code == 2
    assert res.err.strip().splitlines() == ["ftops: error: --state-dir: FTOPS_HOME: must be an absolute path, got "
                                           "'relative/home' (see ftops cluster status --help)"]
    assert run_cli("--version", env={"FTOPS_HOME": "relative/home"}).code == 0  # only commands that use it fail


def test_every_command_finds_the_same_folders_under_ftops_home(monkeypatch, tmp_path):
    """Issue 17: `cluster`, `stack`, `units deploy`, `faults inject`, `db` and `job` resolve one home the same way."""
    from ftops_provider.local_stack import LocalStack

    monkeypatch.setenv("FTOPS_HOME", str(tmp_path))
    parse, stack = build_parser().parse_args, LocalStack()
    spark = {parse(["cluster", "status"]).state_dir, parse(["units", "deploy", "--placement", "p.json"]).state_dir,
             parse(["faults", "inject", "p.yaml", "--app-id", "a", "--duration", "1", "--seed", "1"]).state_dir}
    assert spark == {stack.spark_state} == {tmp_path / "spark"}
    postgres = {parse(["db", "status"]).db_dir.resolve(), parse(["job", "list"]).db_dir.resolve()}
    assert postgres == {stack.postgres.state_dir} == {(tmp_path / "postgres").resolve()}
