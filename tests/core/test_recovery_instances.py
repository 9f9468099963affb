"""The synthetic instance generator (paper 003, Section 7.3 settings)."""

from __future__ import annotations

from ft_core.recovery.instances import InstanceSpec, random_instance


def test_instances_are_reproducible_and_sized():
    spec = InstanceSpec(queries=18, max_share=3)
    a, b = random_instance(spec, 4), random_instance(spec, 4)
    assert a == b and len(a.queries) == 18
    assert all(2 <= len(q.partitions) <= 6 for q in a.queries.values())
    assert random_instance(spec, 5) != a


def test_sharing_never_exceeds_the_maximum_and_does_happen():
    for max_share in (3, 6):
        problem = random_instance(InstanceSpec(queries=18, max_share=max_share), 1)
        assert 1 < problem.max_sharing() <= max_share


def test_zipf_skew_concentrates_sharing_on_top_partitions():
    def top_share(skew):
        total = 0
        for seed in range(20):
            f = random_instance(InstanceSpec(queries=200, max_share=200, skew=skew), seed).sharing()
            total += max(f.values())
        return total

    assert top_share(1.0) > top_share(0.0)


def test_priorities_random_or_rising_with_cost():
    random_prio = random_instance(InstanceSpec(priority="random"), 3)
    assert all(1 <= q.priority <= 10 and q.priority == int(q.priority) for q in random_prio.queries.values())
    by_cost = random_instance(InstanceSpec(priority="cost"), 3)
    costs = {qid: sum(by_cost.cost[p] for p in q.partitions) for qid, q in by_cost.queries.items()}
    cheapest, dearest = min(costs, key=costs.get), max(costs, key=costs.get)
    assert by_cost.queries[cheapest].priority == 1 and by_cost.queries[dearest].priority == 10
    ordered = sorted(costs, key=costs.get)
    prios = [by_cost.queries[q].priority for q in ordered]
    assert prios == sorted(prios)


def test_levels_put_shared_partitions_upstream_of_outputs():
    problem = random_instance(InstanceSpec(), 2)
    for q in problem.queries.values():
        assert [problem.level[p] for p in q.partitions][-1] == 1
        assert sum(problem.level[p] for p in q.partitions) == 1


def test_large_instances_are_generated_quickly_enough_for_the_scale_benchmark():
    problem = random_instance(InstanceSpec(queries=10_000, max_share=6, skew=0.5), 1)
    assert len(problem.queries) == 10_000 and problem.max_sharing() <= 6
