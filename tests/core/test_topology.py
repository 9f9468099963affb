"""Validation of the topology document: every bad-input class gets an error naming field and reason."""

from __future__ import annotations

import copy

import pytest

from ft_core.errors import InputError
from ft_core.topology.document import parse_topology
from ft_core.topology.task_graph import build_task_graph

BASE = {
    "name": "t",
    "operators": [{"name": "A", "parallelism": 2}, {"name": "B", "parallelism": 1, "input_model": "correlated"},
                  {"name": "C", "parallelism": 2}],
    "streams": [{"from": "A", "to": "B", "partitioning": "merge"}, {"from": "C", "to": "B", "partitioning": "merge"}],
    "tasks": {"A[0]": {"rate": 1.0}},
}


def doc(**changes):
    d = copy.deepcopy(BASE)
    d.update(changes)
    return d


def test_valid_document_parses():
    topo = parse_topology(doc())
    assert topo.task_ids() == ["A[0]", "A[1]", "B[0]", "C[0]", "C[1]"]


@pytest.mark.parametrize("bad, needle", [
    (doc(streams=[{"from": "A", "to": "X", "partitioning": "merge"}, {"from": "C", "to": "B", "partitioning": "merge"}]),
     "streams.0.to: unknown operator 'X'"),
    (doc(operators=BASE["operators"] + [{"name": "A", "parallelism": 1}]), "duplicate operator name 'A'"),
    (doc(streams=BASE["streams"] + [{"from": "B", "to": "A", "partitioning": "split"}]), "cycle"),
    (doc(streams=[{"from": "A", "to": "B", "partitioning": "split"}, {"from": "C", "to": "B", "partitioning": "merge"}]),
     "split needs the downstream parallelism"),
    (doc(operators=[{"name": "A", "parallelism": 3}, {"name": "B", "parallelism": 2}, {"name": "C", "parallelism": 2}]),
     "merge needs the upstream parallelism (3)"),
    (doc(streams=[{"from": "A", "to": "B", "partitioning": "one_to_one"}, {"from": "C", "to": "B", "partitioning": "merge"}]),
     "one_to_one needs equal parallelism"),
    (doc(tasks={"A[0]": {"rate": -1}}), "tasks.A[0].rate"),
    (doc(tasks={"A[0]": {"rate": "fast"}}), "tasks.A[0].rate"),
    (doc(tasks={"A[5]": {"rate": 1}}), "'A[5]' is out of range"),
    (doc(tasks={"Z[0]": {"rate": 1}}), "unknown operator 'Z'"),
    (doc(tasks={"A0": {"rate": 1}}), "is not a task id"),
    (doc(streams=[{"from": "A", "to": "B", "partitioning": "hash"}, {"from": "C", "to": "B", "partitioning": "merge"}]),
     "streams.0.partitioning"),
    (doc(operators=[{"name": "A", "parallelism": 2, "input_model": "join"}, {"name": "B", "parallelism": 1},
                    {"name": "C", "parallelism": 2}]), "operators.0.input_model"),
    (doc(operators=BASE["operators"] + [{"name": "D", "parallelism": 1}]), "operator 'D' is not connected"),
    (doc(operators=[{"name": "A", "parallelism": 0}, {"name": "B", "parallelism": 1}, {"name": "C", "parallelism": 2}]),
     "operators.0.parallelism"),
    (doc(substreams=[{"from": "A[0]", "to": "C[0]", "rate": 1.0}]), "no stream 'A' -> 'C' is declared"),
    (doc(substreams=[{"from": "A[0]", "to": "B[0]", "rate": -2.0}]), "substreams.0.rate"),
    (doc(extra_field=1), "extra_field"),
    (doc(streams=BASE["streams"] + [{"from": "A", "to": "B", "partitioning": "full"}]), "duplicate stream"),
])
def test_bad_input_is_named(bad, needle):
    with pytest.raises(InputError) as err:
        parse_topology(bad)
    assert needle in str(err.value)


def test_not_an_object():
    with pytest.raises(InputError, match="expected an object"):
        parse_topology([1, 2])


def test_partitionings_expand_to_the_contract():
    topo = parse_topology({
        "operators": [{"name": "S", "parallelism": 2}, {"name": "P", "parallelism": 4},
                      {"name": "M", "parallelism": 2}, {"name": "F", "parallelism": 3}],
        "streams": [{"from": "S", "to": "P", "partitioning": "split"}, {"from": "P", "to": "M", "partitioning": "merge"},
                    {"from": "M", "to": "F", "partitioning": "full"}],
        "tasks": {"S[1]": {"rate": 4.0}, "M[0]": {"rate": 3.0}},
    })
    g = build_task_graph(topo)
    ups = {g.task_ids[i]: [(g.task_ids[u], r) for s in g.inputs[i] for u, r in zip(s.upstream, s.rates)] for i in range(g.n)}
    assert ups["P[2]"] == [("S[1]", 2.0)] and ups["P[3]"] == [("S[1]", 2.0)]  # split: k -> 2k, 2k+1, rate / 2
    assert ups["M[1]"] == [("P[2]", 1.0), ("P[3]", 1.0)]  # merge: k -> k // 2, whole rate
    assert ups["F[1]"] == [("M[0]", 1.0), ("M[1]", 1 / 3)]  # full: rate / number of targets
    assert g.sinks == [g.index[f"F[{k}]"] for k in range(3)]


def test_explicit_substreams_replace_the_rule_for_their_stream():
    topo = parse_topology({
        "operators": [{"name": "A", "parallelism": 2}, {"name": "B", "parallelism": 1}, {"name": "C", "parallelism": 2}],
        "streams": [{"from": "A", "to": "B", "partitioning": "merge"}, {"from": "C", "to": "B", "partitioning": "merge"}],
        "substreams": [{"from": "A[0]", "to": "B[0]", "rate": 5.0}],
    })
    g = build_task_graph(topo)
    streams = {s.operator: list(zip(s.upstream, s.rates)) for s in g.inputs[g.index["B[0]"]]}
    assert streams["A"] == [(g.index["A[0]"], 5.0)]  # A[1] -> B[0] is gone: the explicit list replaced the rule
    assert streams["C"] == [(g.index["C[0]"], 1.0), (g.index["C[1]"], 1.0)]
    assert g.index["A[1]"] in g.sinks  # no outgoing substream


def test_yaml_and_json_files_load_the_same(tmp_path):
    import json

    import yaml

    from ft_core.topology.document import load_topology

    (tmp_path / "t.json").write_text(json.dumps(BASE))
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(BASE))
    assert load_topology(tmp_path / "t.json") == load_topology(tmp_path / "t.yaml")
    with pytest.raises(InputError, match="does not exist"):
        load_topology(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(InputError, match="is not valid JSON"):
        load_topology(tmp_path / "broken.json")
