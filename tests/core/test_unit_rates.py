"""The catch-up rates measured from a units deployment's micro-batches (spark_jobs/recovery_units/rates.py) and
the checks of a catch-up plan's inputs, without Spark: the batches are written out here."""

from __future__ import annotations

import pytest

from ft_core.errors import InputError
from spark_jobs.recovery_units.rates import Batch, rates_from_batches
from spark_jobs.recovery_units.recovery import check_stage_inputs

APPS = {"A": (0.0, ["u", "v"]), "B": (100.0, ["w"])}


def _steady(start: float, n: int, rows: int, app: str, every: float = 3.0, took: float = 1.0) -> list[Batch]:
    return [Batch(start + i * every, start + i * every + took, rows, app) for i in range(n)]


def test_sharing_counts_units_not_batches():
    """v ran six short batches beside u's 60-s catch-up batch: u shared its core with one unit, not six."""
    batches = {"u": [Batch(5, 10, 50, "A"), Batch(10, 70, 600, "A"), *_steady(71, 10, 30, "A")],
               "v": [Batch(4, 9, 10, "A"), *_steady(11, 6, 5, "A", every=10, took=2)], "w": _steady(101, 5, 1, "B")}
    r = rates_from_batches(batches, APPS, ["u"], failure_time=110)["u"]
    assert r.processing_rate == pytest.approx(600 / 60 * 2)
    assert r.input_rate == pytest.approx(9 * 30 / 27)  # the rows after the first over the time between their ends
    assert r.restart_s == pytest.approx(10.0)  # A's start to the end of its later first batch (u's, at 10 s)


def test_the_restart_delay_is_the_newest_restart_from_the_checkpoint():
    """u's first start (A at 0 s) took 6 s to its first batch; its restart from the checkpoint (A2 at 200 s, v
    with it) took 45 s (state restore, the replayed batch): a recovery repeats the restart, not the first start."""
    apps = {**APPS, "A2": (200.0, ["u", "v"])}
    batches = {"u": [*_steady(5, 10, 30, "A"), Batch(230, 240, 20, "A2"), Batch(240, 250, 400, "A2"),
                     *_steady(251, 10, 30, "A2")],
               "v": [*_steady(4, 10, 3, "A"), Batch(235, 245, 5, "A2"), *_steady(250, 10, 3, "A2")], "w": []}
    assert rates_from_batches(batches, apps, ["u"], failure_time=300)["u"].restart_s == pytest.approx(45.0)
    before = {u: [b for b in theirs if b.end <= 100] for u, theirs in batches.items()}  # before the restart
    assert rates_from_batches(before, apps, ["u"], failure_time=100)["u"].restart_s == pytest.approx(6.0)
    # up (queries started) 12 s after A2's start: what the next stage of a recovery waits for; unknown: None
    up = rates_from_batches(batches, apps, ["u"], failure_time=300, up_at={"A": 3.0, "A2": 212.0})["u"]
    assert up.running_s == pytest.approx(12.0) and up.restart_s == pytest.approx(45.0)
    assert rates_from_batches(batches, apps, ["u"], failure_time=300, up_at={"A": 3.0})["u"].running_s is None


def test_a_unit_keeping_up_barely_is_capped_below_its_processing_rate():
    batches = {"u": [Batch(1, 2, 5, "A"), Batch(3, 5, 10, "A"), *_steady(6, 5, 9, "A", every=1.0, took=0.9)],
               "v": _steady(2, 3, 1, "A")}
    r = rates_from_batches(batches, APPS, ["u"], failure_time=20)["u"]
    assert r.input_rate == pytest.approx(0.95 * r.processing_rate)


def test_units_measured_are_only_the_ones_asked_for_and_need_two_batches():
    batches = {"u": _steady(10, 5, 30, "A"), "v": [], "w": [Batch(101, 102, 3, "B")]}
    assert list(rates_from_batches(batches, APPS, ["u"], failure_time=30)) == ["u"]  # v and w are not measured
    with pytest.raises(InputError, match=r"unit 'w': 1 micro-batch\(es\) before the failure; at least 2"):
        rates_from_batches(batches, APPS, ["w"], failure_time=130)


def test_catch_up_planning_needs_one_arrival_time_per_node_in_order():
    assert check_stage_inputs("1,1", "catch-up", 0.8, "20,50") == ([1.0, 1.0], 0.8, [20.0, 50.0])
    assert check_stage_inputs("1,1", "order-then-pack", 0.8) == ([1.0, 1.0], 0.8, None)
    for times, message in (("", "arrival_times"), ("20", r"one time per expected node \(2\)"),
                           ("50,20", "in order"), ("20,x", "arrival_times")):
        with pytest.raises(InputError, match=message):
            check_stage_inputs("1,1", "catch-up", 0.8, times)
    with pytest.raises(InputError, match="policy: expected one of"):
        check_stage_inputs("1,1", "fastest", 0.8)
