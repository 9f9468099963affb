"""Replica placement over failure domains (paper 001, Algorithms 5 and 6, generalised)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ft_core.errors import InfeasibleError, InputError
from ft_core.transparency.placement import load_placement_problem, parse_placement_problem, place_replicas
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "placement-nodes.yaml"


@pytest.fixture(scope="module")
def sample():
    return load_placement_problem(SAMPLE)


# --- worked cases (hand-computed in the comments; costs are rate x cost per stream) ---------------

def test_phase_one_puts_each_replica_on_the_cheapest_node_outside_rack_a(sample):
    plan = place_replicas(sample, k_min=1)
    # parse (primary a1, sends 2 to aggregate@a2, reads 2 from kafka): b1 = 2*2 + 2*4 = 12,
    # b2 = 2*2 + 2*4 = 12 (tie: b1 comes first), s1 = 2*3 + 2*4 = 14
    # aggregate (reads 2 from parse@a1 and parse@b1, sends 1 to view): b1 = 2*(4+0) + 1 = 9,
    # b2 = 2*(4+1) + 3 = 13, s1 = 2*(4+4) + 2 = 18
    assert plan.replicas == {"parse": ["b1"], "aggregate": ["b1"]}
    assert [(p.task, p.node, p.domain, p.phase, p.cost) for p in plan.placements] == [
        ("parse", "b1", "rack-b", 1, 12.0), ("aggregate", "b1", "rack-b", 1, 9.0)]
    # all streams: kafka->parse 2*(1+2) = 6, parse->aggregate 2*(1+4+4+0) = 18, aggregate->view 2+1 = 3
    assert plan.total_cost == 27.0 and plan.baseline_cost == 6.0  # unreplicated: 2*1 + 2*1 + 1*2
    assert (plan.streams, plan.baseline_streams, plan.bandwidth, plan.baseline_bandwidth) == (8, 3, 14.0, 5.0)
    assert plan.node_load["b1"] == 2.0 and plan.target_met is None and plan.pruned == []


def test_phase_two_uses_the_last_free_domain(sample):
    plan = place_replicas(sample, k_min=1, k_max=2)
    # phase 2: parse -> s1 (the only domain left): 2*3 + 2*(4+4) = 22 at deployment;
    # aggregate -> s1: 2*(4+4+0) + 2 = 18
    assert plan.replicas == {"parse": ["b1", "s1"], "aggregate": ["b1", "s1"]}
    assert [(p.node, p.phase) for p in plan.placements] == [("b1", 1), ("s1", 2), ("b1", 1), ("s1", 2)]
    # kafka->parse 2*(1+2+3) = 12, parse->aggregate 2*(9+8+8) = 50, aggregate->view 2+1+2 = 5
    assert plan.total_cost == 67.0
    # 3 copies per task: k = 3 source streams, k^2 = 9 between the operators, k = 3 to the consumer
    assert plan.streams == 15 and plan.bandwidth == 27.0
    assert plan.bandwidth / plan.baseline_bandwidth < 3 ** 2  # Fig. 4's observation: below k_max^2


def test_pruning_discards_the_most_expensive_replica_first_until_the_target(sample):
    plan = place_replicas(sample, k_min=1, k_max=2, cost_target=40)
    # at 67: parse@b1 20, parse@s1 22, aggregate@b1 17, aggregate@s1 18 -> drop parse@s1 (45);
    # then parse is at k_min; aggregate@b1 2*(4+0)+1 = 9, aggregate@s1 2*(4+4)+2 = 18 -> drop it (27)
    assert [(p.task, p.node, p.cost, p.total_cost_after) for p in plan.pruned] == [
        ("parse", "s1", 22.0, 45.0), ("aggregate", "s1", 18.0, 27.0)]
    assert plan.replicas == {"parse": ["b1"], "aggregate": ["b1"]} and plan.total_cost == 27.0
    assert plan.target_met is True and plan.node_load["s1"] == 0.0


def test_pruning_stops_at_k_min_and_reports_an_unmet_target(sample):
    plan = place_replicas(sample, k_min=1, k_max=2, cost_target=20)
    assert plan.total_cost == 27.0 and plan.target_met is False
    assert all(len(nodes) == 1 for nodes in plan.replicas.values())


def test_no_pruning_while_under_the_target(sample):
    plan = place_replicas(sample, k_min=1, k_max=2, cost_target=67)
    assert plan.pruned == [] and plan.total_cost == 67.0 and plan.target_met is True


def test_utility_keeps_a_useful_expensive_replica(sample):
    # Algorithm 6 minimises utility / cost: parse@s1 (cost 22) delivered most first arrivals, so
    # 1/20 (parse@b1) < 1/18 (aggregate@s1) < 1/17 (aggregate@b1) < 10/22: parse@b1 goes, 67 - 20 = 47
    plan = place_replicas(sample, k_min=1, k_max=2, cost_target=60, utility={("parse", "s1"): 10.0})
    assert [(p.task, p.node, p.utility, p.total_cost_after) for p in plan.pruned] == [("parse", "b1", 1.0, 47.0)]
    assert plan.replicas == {"parse": ["s1"], "aggregate": ["b1", "s1"]}


def test_k_min_beyond_the_other_domains_is_infeasible_with_the_possible_count(sample):
    with pytest.raises(InfeasibleError, match=r"k_min=3 replicas need 3 failure domains other than its primary's "
                                              r"\('rack-a'\).*only 2 possible \(rack-b, standby\)"):
        place_replicas(sample, k_min=3)


def test_capacity_contention_during_mandatory_phases_is_infeasible():
    doc = {"nodes": [{"name": "a1", "domain": "a", "capacity": 4}, {"name": "b1", "domain": "b", "capacity": 1},
                     {"name": "b2", "domain": "b", "capacity": 1}, {"name": "s1", "domain": "s", "capacity": 1}],
           "tasks": [{"name": "t1", "primary": "a1"}, {"name": "t2", "primary": "a1"}]}
    # phase 1: t1 -> b1, t2 -> b2 (b1 full); phase 2: t1 -> s1, t2 finds no node outside a and b
    with pytest.raises(InfeasibleError, match="task 't2': only 1 of k_min=2 replicas could be placed"):
        place_replicas(parse_placement_problem(doc), k_min=2)
    # best effort beyond k_min: the same phase is a shortfall, not an error
    plan = place_replicas(parse_placement_problem(doc), k_min=1, k_max=2)
    assert plan.replicas == {"t1": ["b1", "s1"], "t2": ["b2"]} and plan.shortfall == {"t2": 1}


def test_headroom_keeps_nodes_below_capacity():
    doc = {"headroom": 0.5, "nodes": [{"name": "a1", "domain": "a", "capacity": 4},
                                      {"name": "b1", "domain": "b", "capacity": 2, "load": 0.5},
                                      {"name": "c1", "domain": "c", "capacity": 4}],
           "cost": {"between": {"a1": {"b1": 0, "c1": 9}}},
           "tasks": [{"name": "t", "primary": "a1", "demand": 1}]}
    # b1 is free (cost 0) but 0.5 + 1 > 0.5 * 2: c1 it is
    assert place_replicas(parse_placement_problem(doc), k_min=1).replicas == {"t": ["c1"]}


def test_a_cost_function_overrides_the_document(sample):
    plan = place_replicas(sample, k_min=1, cost=lambda a, b: 0.0 if a == b or "s1" in (a, b) else 5.0)
    assert plan.replicas == {"parse": ["s1"], "aggregate": ["s1"]}


def test_stream_counts_follow_the_paper_k_squared_between_operators():
    # source -> A -> B -> application, every copy talks to every copy (Sec. VI-E)
    doc = {"nodes": [{"name": f"n{d}", "domain": f"d{d}", "capacity": 10} for d in range(5)]
                    + [{"name": "src", "domain": "edge", "capacity": 0}, {"name": "app", "domain": "edge", "capacity": 0}],
           "tasks": [{"name": "A", "primary": "n0", "sources": {"src": 1}},
                     {"name": "B", "primary": "n0", "upstream": ["A"], "sinks": ["app"]}]}
    for k in range(1, 5):
        plan = place_replicas(parse_placement_problem(doc), k_min=k - 1)
        assert plan.streams == k + k * k + k
        assert plan.bandwidth == pytest.approx(2 * k + k * k)
        assert k == 1 or plan.bandwidth / plan.baseline_bandwidth < k * k


# --- invariants on random instances -----------------------------------------------------------------

@st.composite
def problems(draw):
    n_domains = draw(st.integers(2, 4))
    nodes = [{"name": f"n{i}", "domain": f"d{draw(st.integers(0, n_domains - 1))}",
              "capacity": draw(st.sampled_from([0, 1, 2, 3])), "load": draw(st.sampled_from([0, 0, 0.5]))}
             for i in range(draw(st.integers(2, 7)))]
    names = [n["name"] for n in nodes]
    between = {a: {b: draw(st.integers(0, 9))} for a, b in itertools.combinations(names, 2) if draw(st.booleans())}
    tasks = []
    for i in range(draw(st.integers(1, 4))):
        ups = [f"t{j}" for j in range(i) if draw(st.booleans())]
        tasks.append({"name": f"t{i}", "primary": draw(st.sampled_from(names)), "demand": draw(st.sampled_from([0.5, 1])),
                      "rate": draw(st.integers(0, 3)), "upstream": ups,
                      "sources": {draw(st.sampled_from(names)): 1} if not ups else {},
                      "sinks": [draw(st.sampled_from(names))] if draw(st.booleans()) else []})
    doc = {"nodes": nodes, "cost": {"same_domain": draw(st.integers(0, 3)), "other_domain": draw(st.integers(0, 9)),
                                    "between": between}, "tasks": tasks}
    k_min = draw(st.integers(0, 2))
    return doc, k_min, k_min + draw(st.integers(0, 2)), draw(st.one_of(st.none(), st.integers(0, 200)))


def _oracle_total(doc, replicas):
    """Every stream's rate x cost, from scratch."""
    node_domain = {n["name"]: n["domain"] for n in doc["nodes"]}

    def cost(a, b):
        if a == b:
            return 0
        for x, y in ((a, b), (b, a)):
            if y in doc["cost"]["between"].get(x, {}):
                return doc["cost"]["between"][x][y]
        return doc["cost"]["same_domain"] if node_domain[a] == node_domain[b] else doc["cost"]["other_domain"]

    copies = {t["name"]: [t["primary"], *replicas[t["name"]]] for t in doc["tasks"]}
    rate = {t["name"]: t["rate"] for t in doc["tasks"]}
    total = 0
    for t in doc["tasks"]:
        for n in copies[t["name"]]:
            total += sum(rate[u] * cost(m, n) for u in t["upstream"] for m in copies[u])
            total += sum(r * cost(s, n) for s, r in t["sources"].items())
            total += sum(rate[t["name"]] * cost(n, s) for s in t["sinks"])
    return total


@settings(max_examples=300, deadline=None)
@given(problems())
def test_placement_invariants(case):
    doc, k_min, k_max, target = case
    problem = parse_placement_problem(doc)
    try:
        plan = place_replicas(problem, k_min, k_max=k_max, cost_target=target)
    except InfeasibleError:
        return
    domain = {n["name"]: n["domain"] for n in doc["nodes"]}
    capacity = {n["name"]: n["capacity"] for n in doc["nodes"]}
    load = {n["name"]: n["load"] for n in doc["nodes"]}
    for t in doc["tasks"]:
        load[t["primary"]] += t["demand"]
    for t in doc["tasks"]:
        nodes = plan.replicas[t["name"]]
        doms = [domain[t["primary"]]] + [domain[n] for n in nodes]
        assert len(set(doms)) == len(doms)  # never shares a failure domain with another copy
        assert k_min <= len(nodes) <= k_max
        for n in nodes:
            load[n] += t["demand"]
    for name, used in load.items():
        assert used == pytest.approx(plan.node_load[name])
        if any(name in nodes for nodes in plan.replicas.values()):  # every replica was checked against capacity
            assert used <= capacity[name] + 1e-9
    assert plan.total_cost == pytest.approx(_oracle_total(doc, plan.replicas))
    if target is None:
        assert plan.pruned == [] and plan.target_met is None
    else:
        assert plan.target_met == (plan.total_cost <= target + 1e-9)
        if plan.pruned:
            assert plan.pruned[-1].total_cost_after == pytest.approx(plan.total_cost)
        if not plan.target_met:  # pruning only stops early when nothing removable (or worth removing) is left
            assert all(len(nodes) == k_min or all(p.cost == 0 for p in plan.placements if p.task == t)
                       for t, nodes in plan.replicas.items())


@settings(max_examples=200, deadline=None)
@given(problems())
def test_each_replica_is_the_cheapest_candidate_at_its_deployment(case):
    doc, k_min, k_max, _ = case
    problem = parse_placement_problem(doc)
    try:
        plan = place_replicas(problem, k_min, k_max=k_max)
    except InfeasibleError:
        return
    # replay the phases: at each deployment, no feasible candidate is strictly cheaper
    replicas = {t["name"]: [] for t in doc["tasks"]}
    domain = {n["name"]: n["domain"] for n in doc["nodes"]}
    order = sorted(plan.placements, key=lambda p: (p.phase, [t["name"] for t in doc["tasks"]].index(p.task)))
    load = {n["name"]: n["load"] for n in doc["nodes"]}
    for t in doc["tasks"]:
        load[t["primary"]] += t["demand"]
    spec = {t["name"]: t for t in doc["tasks"]}
    for p in order:
        task = spec[p.task]
        used = {domain[task["primary"]]} | {domain[n] for n in replicas[p.task]}
        candidates = [n["name"] for n in doc["nodes"] if n["domain"] not in used
                      and load[n["name"]] + task["demand"] <= n["capacity"] + 1e-9]
        assert p.node in candidates

        def delta(node):
            trial = {k: list(v) for k, v in replicas.items()}
            trial[p.task].append(node)
            return _oracle_total(doc, trial) - _oracle_total(doc, replicas)

        assert delta(p.node) <= min(delta(n) for n in candidates) + 1e-9
        replicas[p.task].append(p.node)
        load[p.node] += task["demand"]


# --- document errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("change, message", [
    (lambda d: d["tasks"][0].update(primary="zz"), "tasks.0.primary: unknown node 'zz'"),
    (lambda d: d["tasks"][1].update(upstream=["nope"]), "tasks.1.upstream: 'nope' is not another task"),
    (lambda d: d["tasks"][0].update(upstream=["aggregate"]), "form a cycle among parse, aggregate"),
    (lambda d: d["nodes"][1].update(capacity=-1), "nodes.1.capacity: Input should be greater than or equal to 0"),
    (lambda d: d["nodes"][1].update(zone="x"), "nodes.1.zone: Extra inputs are not permitted"),
    (lambda d: d["nodes"].append(dict(d["nodes"][1])), "nodes.7.name: duplicate name 'a1'"),
    (lambda d: d["cost"]["between"].update(q={"a1": 1}), "cost.between.q.a1: unknown node 'q'"),
    (lambda d: d["tasks"][0]["sources"].update(nowhere=1), "tasks.0.sources.nowhere: unknown node"),
])
def test_bad_documents_name_the_field(change, message):
    import yaml

    doc = yaml.safe_load(SAMPLE.read_text())
    change(doc)
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_placement_problem(doc)


def test_bad_counts_and_targets(sample):
    with pytest.raises(InputError, match="k_max: must be an integer >= k_min"):
        place_replicas(sample, 2, k_max=1)
    with pytest.raises(InputError, match="k_min: must be an integer >= 0"):
        place_replicas(sample, -1)
    with pytest.raises(InputError, match="cost_target"):
        place_replicas(sample, 1, cost_target=float("nan"))
