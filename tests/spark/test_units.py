"""Recovery units on a real local Spark standalone cluster (issue 5): a correlated failure of one domain, a
two-stage incremental recovery that waits on the master for each new worker, the higher-priority query back
first, and every unit's table equal to the failure-free reference after its restart from its checkpoint.
Every wait polls real state; nothing here depends on how fast the machine is."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from spark_jobs.recovery_units.deployment import load
from spark_jobs.recovery_units.recovery import closed_until, execute_schedule, load_schedule, verify
from spark_jobs.recovery_units.runtime import kill_domain, signal_feed
from spark_jobs.recovery_units.spec import declared_cost, problem_document
from tests.conftest import test_port
from tests.units_fixtures import arrivals, deploy_pinned, start_cluster, stop_everything, wait_steady

BASE = test_port(21200)  # ports of this test only


@pytest.fixture
def cluster(tmp_path):
    state = tmp_path / "spark"
    start_cluster(state, BASE)
    yield state
    stop_everything(tmp_path / "units", state)


def _wait_drained(root: Path, units: list[str], quiet_s: float = 12.0) -> None:
    """Until no unit's watermark has moved for ``quiet_s`` (several triggers) after the input stopped."""
    last, since = None, time.monotonic()
    deadline = since + 180
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, "the units did not drain"
        marks = {u: closed_until(root, u) for u in units}
        if marks != last:
            last, since = marks, time.monotonic()
        time.sleep(1.0)


def test_two_stage_recovery_brings_the_higher_priority_query_back_first_with_exact_output(tmp_path, cluster):
    root = deploy_pinned(tmp_path, cluster, BASE)
    wait_steady(root)

    failure = kill_domain(root, "rack-a")
    assert failure.units == ["O1[0]", "O2[0]"] and failure.apps == ["A"] and len(failure.workers) == 1

    # One node per unit (cost 0.8 of a node): two stages. Incidents (priority 2) before speed (priority 1);
    # jams (4) needs both.
    spec = load(root).spec
    problem = problem_document(spec, failure.units, declared_cost(spec, 0.8))
    schedule_file = tmp_path / "stages.json"
    from ft_core.recovery.problem import parse_problem
    from ft_core.recovery.staged import plan_stages

    schedule_file.write_text(plan_stages(parse_problem(problem), 0.0, [1.0, 1.0]).model_dump_json())
    schedule = load_schedule(schedule_file, root)
    assert [s.partitions for s in schedule.stages] == [[], ["O2[0]"], ["O1[0]"]]

    thread = arrivals(cluster, failure.time, (5, 30), BASE)
    report = execute_schedule(root, schedule, prefix="rec", timeout_s=600, wait_recovered_s=600)
    thread.join(timeout=120)

    # Each stage waited for its worker: stage 2 only once the second node had registered.
    assert [s.apps for s in report.stages[1:]] == [{"rec-s1-n1": ["O2[0]"]}, {"rec-s2-n2": ["O1[0]"]}]
    assert report.stages[2].capacity_ready_s >= 30 > report.stages[1].capacity_ready_s >= 5
    t = report.query_recovered_s
    assert set(t) == {"O1[0]", "O2[0]", "O3[0]"} and None not in t.values(), t
    assert t["O2[0]"] < t["O1[0]"] and t["O2[0]"] < t["O3[0]"]
    assert report.lost_rows == 0 and report.duplicated_rows == 0

    # The restarted units resumed from their checkpoints (not from scratch); after the input stops and
    # every unit drains, each table equals the failure-free reference exactly.
    statuses = {a: json.loads((root / "apps" / a / "status.json").read_text()) for a in ("rec-s1-n1", "rec-s2-n2")}
    assert statuses["rec-s1-n1"]["units"]["O2[0]"]["restored_batch"] >= 0
    assert statuses["rec-s2-n2"]["units"]["O1[0]"]["restored_batch"] >= 0
    signal_feed(root, signal.SIGTERM)
    _wait_drained(root, spec.unit_ids())
    check = verify(root)
    assert check.lost_rows == 0 and check.duplicated_rows == 0
    for unit in check.units:
        assert unit["expected_rows"] > 0 and unit["rows"] == unit["expected_rows"] and unit["unexpected_rows"] == 0, unit


def test_units_cli_rejects_bad_input_with_one_line(cli, tmp_path):
    placement = tmp_path / "p.json"
    placement.write_text(json.dumps({"apps": {"A": ["O1[0]", "O9[0]"]}}))
    res = cli("units", "deploy", "--dir", tmp_path / "d", "--placement", placement, "--master", "local[1]",
              "--param", "p1=1", "--param", "p2=1")
    assert res.code == 2 and "unknown unit 'O9[0]'" in res.err and len(res.err.strip().splitlines()) == 1
    placement.write_text(json.dumps({"apps": {"A": ["O1[0]", "O2[0]"]}}))
    res = cli("units", "deploy", "--dir", tmp_path / "d", "--placement", placement, "--master", "local[1]",
              "--param", "p1=1", "--param", "p2=1")
    assert res.code == 2 and "'O3[0]' is in no application" in res.err
    assert not (tmp_path / "d").exists()  # nothing was started or written
    res = cli("recover", "--schedule", placement, "--dir", tmp_path / "nowhere")
    assert res.code == 2 and "no recovery-units deployment" in res.err
    res = cli("units", "problem", "--dir", tmp_path / "nowhere", "--cost", "declared:2")
    assert res.code == 2
    res = cli("recover", "--workload", "topk", "--schedule", placement)
    assert res.code == 2 and "recovery units exist for 'smartcity' only" in res.err
