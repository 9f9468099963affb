"""MC-tree counting (without enumeration), lazy enumeration, and OF as a sum of tree weights."""

from __future__ import annotations

import json
import random

import pytest

from ft_core.errors import InputError
from ft_core.replication.fidelity import replicated_fidelity
from ft_core.replication.mctree import count_mc_trees, iter_mc_trees, weighted_tree_sets
from ft_core.samples import load_sample, sample_path
from ft_core.topology.document import parse_topology
from ft_core.topology.random_topology import RandomTopologySpec, random_topology
from ft_core.topology.task_graph import build_task_graph


def test_fig1_counts_from_the_paper():
    assert count_mc_trees(load_sample("fig1")) == 16
    doc = json.loads(sample_path("fig1").read_text())
    doc["operators"][2]["input_model"] = "correlated"
    join = build_task_graph(parse_topology(doc))
    assert count_mc_trees(join) == 8
    trees = {frozenset(join.task_ids[i] for i in t) for t, _ in iter_mc_trees(join)}
    assert frozenset({"O1[0]", "O2[0]", "O3[0]", "O4[0]"}) in trees  # {t11, t21, t31, t41}


def test_small_counts():
    assert count_mc_trees(load_sample("fig2-join")) == 4
    assert count_mc_trees(load_sample("fig6-recovery")) == 16
    assert count_mc_trees(load_sample("q2-incidents")) == 8


def test_counting_does_not_enumerate_huge_topologies():
    ops = [{"name": f"O{k}", "parallelism": 10} for k in range(30)]
    streams = [{"from": f"O{k}", "to": f"O{k + 1}", "partitioning": "full"} for k in range(29)]
    g = build_task_graph(parse_topology({"operators": ops, "streams": streams}))
    assert count_mc_trees(g) == 10 ** 30
    first = next(iter_mc_trees(g))  # lazy: the first tree comes at once
    assert len(first[0]) == 30
    with pytest.raises(InputError, match="more than the limit"):
        weighted_tree_sets(g, limit=1000)


@pytest.mark.parametrize("seed", range(12))
def test_of_equals_sum_of_contained_tree_weights(seed):
    spec = RandomTopologySpec(operators=(3, 6), parallelism=(1, 4), join_fraction=0.5 if seed % 2 else 0.0,
                              workload="zipf", zipf_s=1.0, shape="full" if seed % 3 == 0 else "structured", seed=seed)
    g = build_task_graph(random_topology(spec))
    sets = weighted_tree_sets(g, limit=100_000)
    assert sum(sets.values()) == pytest.approx(1.0)
    rng = random.Random(seed)
    for _ in range(30):
        plan = {i for i in range(g.n) if rng.random() < 0.7}
        assert replicated_fidelity(g, plan) == pytest.approx(sum(w for t, w in sets.items() if t <= plan))
