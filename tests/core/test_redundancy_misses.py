"""Why a redundancy scenario missed its deadlines and what one controller period can tell apart (issue 38, item 3):
:mod:`spark_jobs.redundancy.misses` and the two report sections built on it. Plain numbers, no Spark: the bench
that feeds them runs on Spark in ``ftops bench redundancy`` (docs/benchmarks/redundancy.md)."""

from __future__ import annotations

import random

import pytest

from spark_jobs.redundancy.misses import CAUSES, miss_causes, period_needed, ranking_odds

DEADLINE = 2000.0


def test_a_missed_batch_is_classed_by_the_pauses_over_it_and_the_copies_spark_ran_for_it():
    batches = {10: (100.0, 2500),   # a pause from 99 s to 101.5 s overlaps it, one copy ran
               11: (110.0, 2500),   # a pause inside it, no copy
               12: (120.0, 2500),   # no pause anywhere near: the machine
               13: (130.0, 1500),   # paused, but within the deadline: not a miss
               14: (140.0, 2500)}   # a pause that ended just before it started
    pauses = [(99.0, 2500), (110.5, 800), (130.2, 500), (139.0, 999)]
    assert miss_causes(batches, pauses, {10: 1, 12: 2}, DEADLINE) == {
        "no pause": 2, "pause, no copy": 1, "pause, copy": 1}
    assert miss_causes(batches, [], {}, DEADLINE) == {"no pause": 4, "pause, no copy": 0, "pause, copy": 0}
    assert set(miss_causes({}, pauses, {}, DEADLINE)) == set(CAUSES)


def test_a_long_pause_that_started_well_before_a_batch_still_covers_it():
    # the lookup window is as long as the longest pause, so an early long pause is not skipped
    assert miss_causes({0: (100.0, 2500)}, [(90.0, 11000), (95.0, 100)], {}, DEADLINE)["pause, no copy"] == 1


def test_one_period_tells_levels_apart_only_as_well_as_their_distributions_allow():
    rng = random.Random(1)
    better = [1600 + rng.random() * 300 for _ in range(40)]
    worse = [b + 2000 for b in better]  # every batch slower: any period ranks them right
    assert ranking_odds(better, worse, period=4) == 1.0
    assert period_needed(better, worse) == 4
    same = ranking_odds(better, better, period=8)
    assert 0.4 <= same <= 0.6  # the same distribution: a coin flip
    # mostly equal batches with a rare stall in the worse one: short periods rarely see the difference
    stalls = [*better[:36], 4000, 4100, 4200, 4300]
    short, long = ranking_odds(better, stalls, period=4), ranking_odds(better, stalls, period=64)
    assert short < 0.75 < long
    assert period_needed(better, stalls) in (16, 32, 64, 128)


def test_ranking_needs_measured_batches():
    with pytest.raises(ValueError, match="both scenarios need measured batches"):
        ranking_odds([], [1.0], period=8)


def test_the_report_says_why_batches_missed_and_what_a_period_can_see(tmp_path):
    from spark_jobs.redundancy.bench import BenchRedundancyConfig, BenchResult, FaultModel, Latency, ScenarioResult
    from spark_jobs.redundancy.report import render
    from spark_jobs.runtime.event_log import TaskCosts

    rng = random.Random(2)

    def scenario(name, level, stall_share, causes):
        durations = [1600 + rng.random() * 400 + (2500 if rng.random() < stall_share else 0) for _ in range(40)]
        missed = sum(d > DEADLINE for d in durations)
        return ScenarioResult(name=name, level=level, faults=name != "fault-free", durations_ms=durations,
                              missed_causes=causes(missed) if causes else {},
                              latency=Latency(batches=40, missed=missed, p50_ms=1800, p90_ms=3000, p99_ms=4000,
                                              mean_ms=1900, stddev_ms=400),
                              costs=TaskCosts(first_batch=5, last_batch=44, attempts=240, cpu_s=15.5, run_s=60.0,
                                              speculative_attempts=3, speculative_won=1, speculative_cpu_s=0.1,
                                              killed_attempts=0, applications=1), output_ok=True)

    result = BenchResult(
        command="ftops bench redundancy", config=BenchRedundancyConfig(work_dir=tmp_path), faults=FaultModel(),
        deadline_ms=DEADLINE, elapsed_s=600.0, scenarios=[
            scenario("fault-free", 0.0, 0.0, None),
            scenario("none", 0.0, 0.35, lambda m: {"no pause": 1, "pause, no copy": m - 1, "pause, copy": 0}),
            scenario("static 0.25", 0.25, 0.2, lambda m: {"no pause": 1, "pause, no copy": 1, "pause, copy": m - 2})])
    report = render(result)
    why = report.split("## Why batches missed")[1].split("##")[0]
    none, static = (s for s in result.scenarios[1:])
    assert f"| none | {none.latency.missed} | 1 | {none.latency.missed - 1} | 0 |" in why
    assert f"| static 0.25 | {static.latency.missed} | 1 | 1 | {static.latency.missed - 2} |" in why
    assert "| fault-free |" not in why  # no faults: nothing to class
    odds = report.split("## What one controller period can see")[1]
    assert "periods of 8 batches" in odds
    row = next(line for line in odds.splitlines() if line.startswith("| static 0.25 | none |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(cells) == 2 + 6 + 1 and all(0.0 <= float(c) <= 1.0 for c in cells[2:8])
