"""``ftops stack status`` of a stack that is down (issue 37, item 9): it says so and how to start it, instead of
Spark's "no cluster state ... run `ftops cluster up` first" (a command of another workflow). No process is
started: an empty FTOPS_HOME is what `ftops stack down` leaves (no pid records, no cluster state)."""

from __future__ import annotations


def test_a_stack_that_is_down_says_so_and_how_to_start_it(cli, tmp_path):
    env = {"FTOPS_HOME": str(tmp_path)}
    text = cli("stack", "status", env=env)
    assert text.code == 0, text.err
    assert "the stack is down: `make demo` starts it" in text.out and "`.venv/bin/ftops stack up`" in text.out
    assert "cluster up" not in text.out and "no cluster state" not in text.out
    doc = cli("stack", "status", "--json", env=env).json()
    assert doc["state"] == "down" and "make demo" in doc["next"]
    assert [(c["component"], c["running"], c["state"]) for c in doc["components"]] == [
        ("postgres", False, "stopped"), ("airflow", False, "stopped"), ("spark", False, "stopped")]


def test_a_stack_partly_running_names_the_command_that_completes_it():
    from ftops_provider.stack_cli import _stack_state

    def rows(*running):
        return [{"component": f"c{i}", "running": r, "state": "", "where": ""} for i, r in enumerate(running)]

    assert _stack_state(rows(True, True, True)) == ("up", None)
    state, hint = _stack_state(rows(True, False, True))
    assert state == "partial" and "`.venv/bin/ftops stack up` starts what is missing" in hint
    assert _stack_state(rows(False, False))[0] == "down"
