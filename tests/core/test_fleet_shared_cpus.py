"""Fleet recovery on shared CPUs (issue 33, item 3; issue 38, item 1): jobs catching up together on fewer CPUs than
their cores drain at their share, and a job's own rate is read back out of a recovery it shared."""

from __future__ import annotations

import random

import pytest

from ft_core.fleet.catch_up_rate import RecoveredJob, processing_rate_alone
from ft_core.fleet.recovery_order import (Arrival, FleetCapacity, FleetJob, plan_fleet_recovery, predict_back,
                                          predicted_back_s)


def _job(name: str, **kw) -> FleetJob:
    return FleetJob(**{"job": name, "cores": 1, "input_rate": 50, "processing_rate": 250, "restart_s": 10,
                       "pending_s": 3, **kw})


def test_with_a_cpu_per_core_the_jobs_do_not_slow_each_other():
    jobs = [_job("a"), _job("b", processing_rate=120), _job("c", cores=2)]
    starts = [30.0, 60.0, None]
    alone = [predicted_back_s(jobs[0], 30.0), predicted_back_s(jobs[1], 60.0), None]
    assert predict_back(jobs, starts) == alone
    assert predict_back(jobs, starts, cpus=4)[:2] == pytest.approx(alone[:2])  # enough CPUs: as if alone
    assert predict_back(jobs, starts, cpus=4)[2] is None  # never started: never back


def test_jobs_catching_up_together_on_one_cpu_drain_at_half_their_rate():
    a, b = _job("a"), _job("b")
    # both run at 10 s with 50 x 13 = 650 rows waiting; half a CPU each: 125 - 50 = 75 rows/s drained
    assert predict_back([a, b], [0.0, 0.0], cpus=1) == pytest.approx([10 + 650 / 75] * 2)
    # one job restarted later finds the first one caught up and using 50/250 of the CPU
    first, second = predict_back([a, b], [0.0, 100.0], cpus=1)
    assert first == pytest.approx(10 + 650 / 200)
    assert second == pytest.approx(110 + 50 * 113 / (0.8 * 250 - 50))


def test_shared_cpus_make_a_later_restart_cost_more_and_the_plan_says_so():
    jobs = [_job("low", priority=1), _job("high", priority=4)]
    capacity = FleetCapacity(arrivals=[Arrival(at_s=30, cores=1), Arrival(at_s=60, cores=1)])
    own = plan_fleet_recovery(jobs, capacity)
    shared = plan_fleet_recovery(jobs, capacity.model_copy(update={"cpus": 1.0}))
    assert [j.job for j in own.jobs] == [j.job for j in shared.jobs] == ["high", "low"]
    assert shared.predicted_weighted_mean_s > own.predicted_weighted_mean_s
    by_job = {j.job: j.predicted_back_s for j in shared.jobs}
    assert by_job["low"] == pytest.approx(predict_back(jobs, [60.0, 30.0], cpus=1.0)[0], abs=1e-3)


def test_the_rate_read_back_from_a_shared_recovery_is_the_rate_the_model_ran_with():
    """Inverting the model: simulate a recovery of jobs sharing CPUs, then read each one's rate back from its
    measured times alone (what the store keeps), and get the rate the simulation ran with."""
    rng = random.Random(7)
    for _ in range(30):
        jobs = [_job(f"j{i}", cores=rng.choice([1, 2]), input_rate=rng.uniform(10, 80),
                     processing_rate=rng.uniform(150, 400), restart_s=rng.uniform(5, 30), pending_s=rng.uniform(0, 6))
                for i in range(rng.randint(1, 5))]
        starts = sorted(rng.uniform(0, 120) for _ in jobs)
        cpus = rng.uniform(0.8, 3.0)
        backs = predict_back(jobs, starts, cpus=cpus)
        run = [RecoveredJob(job=j.job, cores=j.cores, input_rate=j.input_rate, processing_rate=j.processing_rate,
                            pending_s=j.pending_s, running_s=s + j.restart_s, back_s=b)
               for j, s, b in zip(jobs, starts, backs)]
        for job, measured in zip(jobs, run):
            if measured.back_s is not None and measured.back_s > measured.running_s + 1e-6:
                assert processing_rate_alone(measured, run, cpus) == pytest.approx(job.processing_rate, rel=1e-6)


def test_a_recovery_that_did_not_measure_the_job_gives_no_rate():
    never = RecoveredJob(job="a", cores=1, input_rate=10, processing_rate=30, running_s=10, back_s=None)
    assert processing_rate_alone(never, [never], cpus=1) is None
    backwards = never.model_copy(update={"back_s": 5.0})
    assert processing_rate_alone(backwards, [backwards], cpus=None) is None


def test_idle_cpus_are_the_idle_and_iowait_share_of_the_sample_times_the_cpu_count(tmp_path, monkeypatch):
    """Read from /proc/stat's ``cpu`` line (a copy written here, changed during the sample as the kernel would)."""
    import threading

    from spark_jobs.cluster import host_cpu

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3\n")
    later = "cpu  250 0 150 800 100 0 0 0 0 0\ncpu0 1 2 3\n"  # 300 jiffies: 200 busy, 100 idle, 0 iowait
    monkeypatch.setattr(host_cpu.os, "cpu_count", lambda: 4)
    timer = threading.Timer(0.1, stat.write_text, args=(later,))
    timer.start()
    assert host_cpu.idle_cpus(0.4, stat) == pytest.approx(4 * 100 / 300, abs=0.01)
    timer.join()
    stat.write_text("cpu  100 0 100 700 100 0 0 0 0 0\n")  # nothing idle over the sample: still a floor
    timer = threading.Timer(0.1, stat.write_text, args=("cpu  400 0 100 700 100 0 0 0 0 0\n",))
    timer.start()
    assert host_cpu.idle_cpus(0.4, stat) == host_cpu.MIN_CPUS
    timer.join()


def test_restarted_cores_get_a_fair_share_of_busy_cpus_not_only_the_idle_ones():
    """CI, 2026-12-01: a loaded test machine measured 0.10 idle CPUs when a fleet recovery was planned; on those the
    plan said its two jobs would never catch up, and both were back in about a minute. The kernel shares the busy
    CPUs with the threads that start: the share is at least the idle CPUs, at most min(cpus, demand)."""
    from ft_core.fleet.cpu_share import fair_share_cpus
    from ft_core.fleet.recovery_order import FleetJob, predict_back

    assert fair_share_cpus(2.0, 0.10, 2.0) == pytest.approx(2 * 2 / (2 + 1.9), abs=0.01)
    assert fair_share_cpus(2.0, 2.0, 1.0) == 1.0  # an idle machine: the demand, no more
    assert fair_share_cpus(2.0, 1.99, 8.0) == 2.0  # never more than the machine
    for idle in (0.0, 0.3, 1.0, 1.7):
        for demand in (0.5, 1.0, 3.0):
            share = fair_share_cpus(2.0, idle, demand)
            assert min(idle, demand) - 0.01 <= share <= min(2.0, demand)
    jobs = [FleetJob(job=name, priority=1, cores=1, input_rate=10.0, processing_rate=60.0, restart_s=20.0, pending_s=5.0)
            for name in ("high", "low")]
    starts = [25.0, 55.0]
    assert None in predict_back(jobs, starts, cpus=0.10)  # the idle CPUs alone: one job never back
    assert None not in predict_back(jobs, starts, cpus=fair_share_cpus(2.0, 0.10, 2.0))
    with pytest.raises(ValueError):
        fair_share_cpus(2.0, 1.0, 0.0)
