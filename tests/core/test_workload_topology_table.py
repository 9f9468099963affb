"""``ftops workload topology``'s table (issue 37, item 5): the "operator" column names each task's operator; it
printed the operator's description there, empty for a pipeline whose operators have none (as most have)."""

from __future__ import annotations


def _rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
    return [line.split(None, 3) for line in lines[rule + 1:]]


def test_the_operator_column_names_the_operator(cli):
    res = cli("workload", "topology", "--pipeline", "examples/sensor_alerts.py")
    assert res.code == 0, res.err
    header = res.out.splitlines()[1].split()
    assert header == ["task", "operator", "rate"]  # no operator of the example has a description
    rows = _rows(res.out)
    assert len(rows) == 10 and all(task.split("[")[0] == operator for task, operator, *_ in rows)
    assert {operator for _, operator, *_ in rows} == {"enrich", "peaks", "alerts"}


def test_descriptions_get_a_column_of_their_own(cli):
    res = cli("workload", "topology", "incidents")
    assert res.code == 0, res.err
    assert res.out.splitlines()[1].split() == ["task", "operator", "rate", "description"]
    first = _rows(res.out)[0]
    assert first[:2] == ["O1[0]", "O1"] and first[3] == "segment average speed per window"
