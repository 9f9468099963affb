"""Recovery problem documents (paper 003, Definitions 1-2): both forms, defaults, and bad input."""

from __future__ import annotations

import json

import pytest

from ft_core.errors import InputError
from ft_core.recovery.problem import index_problem, load_problem, natural_key, parse_problem

EXPLICIT = {"queries": {"Q1": {"priority": 2, "partitions": ["p1", "p2"]}, "Q2": {"partitions": ["p2"]}},
            "cost": {"p1": 1.0, "p2": 3.0}}
TOPOLOGY = {
    "operators": [{"name": "O1", "parallelism": 2}, {"name": "O2", "parallelism": 1}, {"name": "O3", "parallelism": 2}],
    "streams": [{"from": "O1", "to": "O2", "partitioning": "merge"}, {"from": "O2", "to": "O3", "partitioning": "split"}],
}


def test_explicit_form_keeps_priorities_costs_and_defaults():
    p = parse_problem(EXPLICIT)
    assert p.partitions == ["p1", "p2"]
    assert p.queries["Q1"].priority == 2 and p.queries["Q2"].priority == 1  # default priority 1
    assert p.cost == {"p1": 1.0, "p2": 3.0}
    assert p.sharing() == {"p1": 1, "p2": 2} and p.max_sharing() == 2
    assert p.recovered_by({"p2"}) == ["Q2"]


def test_explicit_form_without_cost_charges_one_per_partition():
    p = parse_problem({"queries": {"A": {"partitions": ["x", "y"]}}})
    assert p.cost == {"x": 1.0, "y": 1.0}


def test_topology_form_derives_queries_as_upstream_closures_of_sinks():
    """Definition 1: the query of an output partition is its upstream closure (failed part only)."""
    p = parse_problem({"topology": TOPOLOGY, "failed": ["O1[1]", "O2[0]", "O3[1]"],
                       "cost": {"O2[0]": 0.5}, "priority": {"O3[1]": 4}})
    assert set(p.queries) == {"O3[0]", "O3[1]"}
    assert p.queries["O3[0]"].partitions == ["O1[1]", "O2[0]"]
    assert p.queries["O3[1]"].partitions == ["O1[1]", "O2[0]", "O3[1]"]
    assert p.queries["O3[1]"].priority == 4 and p.queries["O3[0]"].priority == 1
    assert p.cost == {"O1[1]": 1.0, "O2[0]": 0.5, "O3[1]": 1.0}  # default cost 1
    assert p.level == {"O1[1]": 0, "O2[0]": 1, "O3[1]": 2}


def test_topology_form_leaves_out_queries_without_failed_partitions():
    topo = {"operators": [{"name": "A", "parallelism": 2}, {"name": "B", "parallelism": 2}],
            "streams": [{"from": "A", "to": "B", "partitioning": "one_to_one"}]}
    p = parse_problem({"topology": topo, "failed": ["A[0]"]})
    assert list(p.queries) == ["B[0]"]


def test_sample_documents_load(samples):
    fig2 = load_problem(samples / "recovery-fig1.json")
    assert len(fig2.partitions) == 10 and fig2.query_ids() == ["Q1", "Q2", "Q3", "Q4"]
    topo = load_problem(samples / "recovery-fig1-topology.json")
    assert topo.queries["O5[0]"].partitions == ["O1[0]", "O2[0]", "O5[0]"]


def test_yaml_documents_load(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("queries:\n  Q1: {priority: 3, partitions: [a]}\ncost: {a: 0.5}\n")
    assert load_problem(path).queries["Q1"].priority == 3


def test_index_orders_queries_naturally():
    p = parse_problem({"queries": {f"Q{i}": {"partitions": [f"p{i}"]} for i in (10, 2, 1)}})
    assert index_problem(p).query_ids == ["Q1", "Q2", "Q10"]
    assert natural_key("Q2") < natural_key("Q10")


@pytest.mark.parametrize(("doc", "message"), [
    ({"queries": {"Q1": {"partitions": ["p9"]}}, "cost": {"p1": 1}}, "queries.Q1.partitions: unknown partition 'p9'"),
    ({"queries": {"Q1": {"partitions": ["p1"]}}, "cost": {"p1": 1, "p7": 2}}, "cost.p7: unknown partition"),
    ({"queries": {"Q1": {"partitions": ["p1"]}}, "cost": {"p1": -1}}, "cost.p1: must be >= 0"),
    ({"queries": {"Q1": {"priority": -1, "partitions": ["p1"]}}}, "queries.Q1.priority: must be >= 0"),
    ({"queries": {"Q1": {"priority": "high", "partitions": ["p1"]}}}, "queries.Q1.priority: expected a number"),
    ({"queries": {"Q1": {"priority": True, "partitions": ["p1"]}}}, "queries.Q1.priority: expected a number"),
    ({"queries": {}}, "queries: must list at least one failed query"),
    ({"queries": {"Q1": {"partitions": []}}}, "queries.Q1.partitions: expected a non-empty list"),
    ({"queries": {"Q1": {"partitions": ["a", "a"]}}}, "listed twice"),
    ({"queries": {"Q1": {"partitions": ["a"], "weight": 2}}}, "queries.Q1.weight: unknown field"),
    ({"queries": {"Q1": {"partitions": ["a"]}}, "budget": 3}, "budget: unknown field"),
    ({"cost": {"a": 1}}, "expected a 'queries' field"),
    ([1, 2], "expected an object"),
    ({"topology": TOPOLOGY, "failed": ["O9[0]"]}, "failed: unknown task 'O9[0]'"),
    ({"topology": TOPOLOGY, "failed": []}, "failed: expected a non-empty list"),
    ({"topology": TOPOLOGY, "failed": ["O1[0]"], "cost": {"X[0]": 1}}, "cost.X[0]: unknown partition"),
    ({"topology": TOPOLOGY, "failed": ["O1[0]"], "priority": {"O1[0]": 2}}, "priority.O1[0]: not an output partition"),
    ({"topology": TOPOLOGY, "failed": ["O1[0]"], "priority": {"O3[0]": -2}}, "priority.O3[0]: must be >= 0"),
    ({"topology": {"operators": []}, "failed": ["O1[0]"]}, "topology"),
])
def test_bad_documents_raise_input_error_naming_field_and_reason(doc, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        parse_problem(doc)


def test_missing_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_problem(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(EXPLICIT)[:-3])
    with pytest.raises(InputError, match="not valid"):
        load_problem(bad)
