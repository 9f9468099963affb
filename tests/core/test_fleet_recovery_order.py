"""Fleet-wide staged recovery's planner (issue 33, item 3): jobs as paper 003's queries, their restart order as
capacity returns, and their predicted time back with catch-up."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from ft_core.errors import InputError
from ft_core.fleet.recovery_order import (Arrival, FleetCapacity, FleetJob, catch_up_slope, plan_fleet_recovery,
                                          predicted_back_s)
from ft_core.recovery.best_density import best_density_order
from ft_core.recovery.problem import make_problem


def _fleet(seed: int, n: int, stages: int) -> tuple[list[FleetJob], FleetCapacity]:
    rng = random.Random(seed)
    jobs = []
    for i in range(n):
        rate = rng.uniform(10, 1000)
        jobs.append(FleetJob(job=f"job-{i:04d}", priority=rng.choice([1, 1, 2, 5, 10]), cores=rng.choice([1, 2, 4, 8]),
                             input_rate=rate, processing_rate=rate * rng.uniform(1.05, 20), restart_s=rng.uniform(5, 40),
                             pending_s=rng.uniform(0, 5)))
    capacity = FleetCapacity(free_cores=rng.choice([0, 2, 4]),
                             arrivals=[Arrival(at_s=60.0 * (k + 1), cores=rng.choice([4, 8])) for k in range(stages)])
    return jobs, capacity


def _score(plan) -> tuple[float, float]:
    never = math.fsum(j.priority for j in plan.jobs if j.predicted_back_s is None)
    return never, math.inf if plan.predicted_weighted_mean_s is None else plan.predicted_weighted_mean_s


@pytest.mark.parametrize("seed", range(8))
def test_the_density_order_is_best_densitys_order_on_the_same_recovery_problem(seed):
    """Jobs are queries of one unshared partition each: paper 003's BestDensity orders them by priority per core."""
    jobs, capacity = _fleet(seed, 12, 6)
    problem = make_problem({j.job: (j.priority, [f"{j.job}/app"]) for j in jobs}, {f"{j.job}/app": j.cores for j in jobs})
    expected = best_density_order(problem, sum(j.cores for j in jobs))  # a budget for all: its greedy from CP_0
    plan = plan_fleet_recovery(jobs, FleetCapacity(free_cores=10_000), policy="density")  # all fit at once: plan order
    assert [j.job for j in plan.jobs] == expected


@pytest.mark.parametrize("policy", ["staged", "density", "fifo"])
@pytest.mark.parametrize("seed", range(6))
def test_no_stage_gives_more_cores_than_came_back_and_fifo_never_overtakes(seed, policy):
    jobs, capacity = _fleet(seed, 40, 8)
    plan = plan_fleet_recovery(jobs, capacity, policy=policy)
    cores = {j.job: j.cores for j in jobs}
    times = [0.0] + [a.at_s for a in capacity.arrivals]
    for k, t in enumerate(times):
        came_back = capacity.free_cores + sum(a.cores for a in capacity.arrivals if a.at_s <= t)
        running = sum(cores[j.job] for j in plan.jobs if j.start_s is not None and j.start_s <= t)
        assert running <= came_back + 1e-9, (k, running, came_back)
    assert {j.job for j in plan.jobs} == set(cores)  # every job planned, started or not
    if policy == "fifo":  # in submission order: a job never starts before the one ahead of it (one that fits nowhere
        starts = {j.job: j.start_s for j in plan.jobs}  # holds nobody up)
        started = [starts[j.job] for j in jobs if starts[j.job] is not None]
        assert started == sorted(started)


def test_a_small_job_starts_in_capacity_a_larger_one_before_it_cannot_use():
    jobs = [FleetJob(job="big", priority=10, cores=8, input_rate=1, processing_rate=100),
            FleetJob(job="small", priority=1, cores=2, input_rate=1, processing_rate=100)]
    capacity = FleetCapacity(free_cores=2, arrivals=[Arrival(at_s=60, cores=8)])
    staged = {j.job: j.start_s for j in plan_fleet_recovery(jobs, capacity).jobs}
    fifo = {j.job: j.start_s for j in plan_fleet_recovery(jobs, capacity, policy="fifo").jobs}
    assert staged == {"big": 60.0, "small": 0.0}  # capacity never idles while a waiting job fits
    assert fifo == {"big": 60.0, "small": 60.0}


def test_time_back_is_restart_then_the_backlog_drained_at_the_spare_rate():
    job = FleetJob(job="a", cores=1, input_rate=10, processing_rate=40, restart_s=10, pending_s=2)
    # runs at 30 s with 10 x (2 + 30) = 320 records waiting, drained at 30 records/s
    assert predicted_back_s(job, 20.0) == pytest.approx(30 + 320 / 30)
    assert catch_up_slope(job) == pytest.approx(40 / 30)
    hopeless = FleetJob(job="h", cores=1, input_rate=50, processing_rate=40)
    assert predicted_back_s(hopeless, 0.0) is None and math.isinf(catch_up_slope(hopeless))


def test_jobs_that_never_come_back_are_named_and_restarted_last():
    jobs = [FleetJob(job="hopeless", priority=100, cores=1, input_rate=50, processing_rate=40),
            FleetJob(job="ok", priority=1, cores=1, input_rate=1, processing_rate=10),
            FleetJob(job="huge", priority=1, cores=64, input_rate=1, processing_rate=10)]
    plan = plan_fleet_recovery(jobs, FleetCapacity(free_cores=1, arrivals=[Arrival(at_s=30, cores=1)]))
    assert [(j.job, j.start_s) for j in plan.jobs] == [("ok", 0.0), ("hopeless", 30.0), ("huge", None)]
    assert plan.never_back == ["hopeless", "huge"] and plan.predicted_weighted_mean_s == pytest.approx(0.0)


@pytest.mark.parametrize("seed", range(10))
def test_staged_is_never_predicted_worse_than_density_or_fifo(seed):
    jobs, capacity = _fleet(seed, 30, 6)
    staged = _score(plan_fleet_recovery(jobs, capacity))
    assert staged <= _score(plan_fleet_recovery(jobs, capacity, policy="density"))
    assert staged <= _score(plan_fleet_recovery(jobs, capacity, policy="fifo"))


@pytest.mark.parametrize("seed", range(6))
def test_on_small_fleets_staged_is_within_a_tenth_of_the_best_order(seed):
    """Against every restart order of 6 jobs packed the same way (720 plans): the two density rules are not
    optimal in general, but close on these fleets; the exact figure is printed on failure."""
    jobs, capacity = _fleet(100 + seed, 6, 4)
    staged = _score(plan_fleet_recovery(jobs, capacity))
    best = min(_score(plan_fleet_recovery([jobs[i] for i in order], capacity, policy="fifo"))
               for order in itertools.permutations(range(len(jobs))))
    assert staged[0] <= best[0] and (staged[0] < best[0] or staged[1] <= 1.1 * best[1]), (staged, best)


def test_five_thousand_jobs_over_a_hundred_stages_are_all_planned():
    jobs, capacity = _fleet(7, 5000, 100)
    plan = plan_fleet_recovery(jobs, capacity)
    assert len(plan.jobs) == 5000 and len({j.job for j in plan.jobs}) == 5000
    starts = [j.start_s for j in plan.jobs if j.start_s is not None]
    assert starts == sorted(starts) and len(starts) > 100


@pytest.mark.parametrize("jobs, policy, field", [
    ([FleetJob(job="a", cores=1, input_rate=1, processing_rate=2)] * 2, "staged", "jobs"),
    ([], "lifo", "policy"),
])
def test_bad_input_is_refused_naming_the_field(jobs, policy, field):
    with pytest.raises(InputError) as err:
        plan_fleet_recovery(jobs, FleetCapacity(), policy=policy)
    assert err.value.field == field


def test_a_job_name_must_be_a_name():
    with pytest.raises(ValueError, match="not an identifier"):
        FleetJob(job="../etc", cores=1, input_rate=1, processing_rate=2)


def test_plan_fleet_recovery_command_prints_the_order_and_json(tmp_path):
    from tests.conftest import run_cli

    doc = tmp_path / "lost.yaml"
    doc.write_text("jobs:\n"
                   "  - {job: billing, priority: 3, cores: 4, input_rate: 100, processing_rate: 1000, restart_s: 10}\n"
                   "  - {job: clicks, priority: 1, cores: 4, input_rate: 100, processing_rate: 110, restart_s: 10}\n"
                   "capacity: {free_cores: 0, arrivals: [{at_s: 60, cores: 4}, {at_s: 120, cores: 4}]}\n")
    res = run_cli("plan", "fleet-recovery", doc)
    assert res.code == 0, res.err
    assert res.out.splitlines()[0] == ("staged plan (catch-up-weighted density): 2 jobs, priority-weighted mean time "
                                       "back 300.833 s")
    fifo = run_cli("plan", "fleet-recovery", doc, "--policy", "fifo", "--json")
    assert fifo.code == 0 and [j["job"] for j in fifo.json()["jobs"]] == ["billing", "clicks"]
    doc.write_text("jobs: [{job: 'a/b', cores: 1, input_rate: 1, processing_rate: 2}]\ncapacity: {}\n")
    bad = run_cli("plan", "fleet-recovery", doc, "--json")
    assert bad.code == 2 and "not an identifier" in bad.json()["error"]
