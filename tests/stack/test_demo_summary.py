"""The end of ``ftops stack demo`` (what a newcomer reads first, issue 15): the sample job's plan with its
predicted output fidelity *and* predicted tentative accuracy, and the drill's measured accuracy beside both
predictions, read from the real PostgreSQL history store."""

from __future__ import annotations

from contextlib import contextmanager

from ftops_provider.stack_cli import _print_summary, _summary
from tests.core.test_accuracy_store import _estimate
from tests.core.test_history_store import _replication_plan, _report, _store
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures


class _Stack:
    """The one thing ``_summary`` asks of the stack: its history store."""

    def __init__(self, store):
        self._store = store

    @contextmanager
    def store(self):
        yield self._store


def test_the_summary_shows_predicted_accuracy_beside_of_and_the_measured_accuracy(pg_conn, capsys):
    store = _store(pg_conn)
    plan_id = _replication_plan(store)
    empty = _summary(_Stack(store))
    assert empty["plan"]["predicted_accuracy"] is None and empty["drill"] is None  # not estimated yet
    _print_summary(empty)
    assert "predicted tentative accuracy -" in capsys.readouterr().out

    store.record_predicted_accuracy(plan_id, _estimate(store, plan_id, [0.5, 0.7]))
    drill_id = store.start_drill("topk", plan_id, {"failure_domain": "rack-a"}, "manual__1")
    store.finish_drill(drill_id, {**_report([0.5, 0.75, 1.0]), "time_to_caught_up_s": 91.9, "predicted_caught_up_s": 100.8},
                       "passed")
    summary = _summary(_Stack(store))
    assert summary["plan"]["predicted_accuracy"] == 0.6 and round(summary["plan"]["accuracy_estimate"]["stdev"], 6) == 0.1
    assert summary["drill"]["predicted_accuracy"] == 0.6 and summary["drill"]["tentative_accuracy"] == 0.75
    _print_summary(summary)
    out = capsys.readouterr().out
    of = summary["plan"]["predicted_output_fidelity"]
    assert f"predicted output fidelity {of:.3f}, predicted tentative accuracy 0.600 ± 0.100" in out
    assert (f"drill #{drill_id} passed: measured tentative accuracy 0.750 (predicted 0.600, output fidelity "
            f"{summary['drill']['predicted_output_fidelity']:.3f})") in out
    assert "primary caught up after 91.9 s (forecast 100.8 s)" in out  # the drill's forecast beside its measurement


def test_an_aborted_drill_says_why_first_and_shows_no_none(pg_conn, capsys):
    """A new user's demo printed "drill #1 aborted: ... lost/duplicated windows None/None" and nothing of why."""
    store = _store(pg_conn)
    plan_id = _replication_plan(store)
    drill_id = store.start_drill("topk", plan_id, {"failure_domain": "rack-a"}, "manual__1")
    why = "not drilled: the steady state did not hold: steady state: the replica has no watermark yet"
    store.finish_drill(drill_id, {"error": why}, "aborted")
    _print_summary(_summary(_Stack(store)))
    out = capsys.readouterr().out
    assert f"topk: drill #{drill_id} aborted: {why}\n" in out
    assert "None" not in out and "lost/duplicated windows -/-" in out
