"""The drill engine's decisions, fast (no Spark, no Airflow): which domain a drill fails, when it fails, what a
cluster seam records before a fault, the blast radius, and the settings a drill refuses. The steps themselves run
end to end in tests/airflow/test_dag_runs.py and tests/airflow/test_safety_net.py."""

from __future__ import annotations

import json
import os

import pytest
from pydantic import ValidationError

from ft_core.errors import ExternalError, InputError
from spark_jobs.cluster.local_standalone import LocalStandalone, local_cluster
from spark_jobs.cluster.seam import give_back
from spark_jobs.drills.engine import DrillSettings, capacity_problems, hosting_domain, verdict
from spark_jobs.runtime.processes import start_time

CLEAN = {"lost_windows": 0, "duplicated_windows": 0, "output_equals_reference": True, "time_to_caught_up_s": 30.0}


def test_auto_fails_the_domain_hosting_most_of_the_primary_and_a_named_one_must_host_some():
    assert hosting_domain("alerts", {"rack-a": 1, "rack-b": 3}, "auto") == "rack-b"
    assert hosting_domain("alerts", {"rack-b": 2, "rack-a": 2}, "auto") == "rack-a"  # a tie: the first by name
    assert hosting_domain("alerts", {"rack-a": 1}, "rack-a") == "rack-a"
    with pytest.raises(InputError, match="hosts no executor of 'alerts'.s primary .it runs in rack-a.: nothing would fail"):
        hosting_domain("alerts", {"rack-a": 1}, "rack-b")
    with pytest.raises(ExternalError, match="no executor in a failure domain"):
        hosting_domain("alerts", {}, "auto")


def test_a_drill_fails_on_lost_or_duplicated_output_a_missed_bound_or_no_steady_state():
    assert verdict(CLEAN, max_recovery_s=60, steady_bound_s=60, lag_after_s=5.0) == []
    assert verdict(CLEAN, max_recovery_s=None, steady_bound_s=60, lag_after_s=5.0) == []
    lost = verdict({**CLEAN, "lost_windows": 2, "output_equals_reference": False}, 60, 60, 5.0)
    assert lost == ["the output differs from the batch reference: 2 windows lost, 0 duplicated"]
    assert verdict({**CLEAN, "time_to_caught_up_s": None}, 60, 60, 5.0) == ["the primary did not catch up"]
    assert verdict(CLEAN, 20, 60, 5.0) == ["recovery took 30.0 s, over the job's bound of 20 s"]
    assert verdict(CLEAN, 60, 60, 75.0) == ["not back to steady state: the primary is 75.0 s behind its input (bound 60 s)"]
    assert verdict(CLEAN, 60, 60, None)[0].startswith("not back to steady state: the primary is None s behind")


def test_a_drill_that_leaves_other_failure_domains_than_it_found_fails():
    assert capacity_problems({"rack-a": 1, "rack-b": 1}, {"rack-b": 1, "rack-a": 1}) == []
    assert capacity_problems({"rack-a": 2}, {"rack-a": 1}) == ["failure domains changed: before rack-a 2; after rack-a 1"]
    assert capacity_problems({"rack-a": 1}, {}) == ["failure domains changed: before rack-a 1; after none"]


@pytest.mark.parametrize("field,value", [("job", "../etc/evil"), ("job", "a/b"), ("domain", "<img src=x>"), ("job", " "),
                                         ("replacement_delay_s", -1), ("lease_ttl_s", 1), ("fault", "meteor")])
def test_settings_refuse_names_that_are_not_identifiers_and_values_out_of_bounds(field, value):
    with pytest.raises(ValidationError):
        DrillSettings(**{"job": "alerts", field: value})


def _state_dir(tmp_path, workers: list[tuple[str, str]]):
    """A cluster state whose workers (pool, domain) are this test process: alive, as far as the seam can tell."""
    me, started = os.getpid(), start_time(os.getpid())
    procs = [{"name": f"worker-{pool}-{domain}-{7100 + i}", "role": "worker", "pool": pool, "pid": me, "port": 7100 + i,
              "ui_port": 8100 + i, "log": "w.log", "domain": domain, "started": started, "cores": 2, "memory": "2g"}
             for i, (pool, domain) in enumerate(workers)]
    procs.append({"name": "master-primary", "role": "master", "pool": "primary", "pid": me, "port": 7077, "ui_port": 8090,
                  "log": "m.log", "started": started})
    (tmp_path / "cluster.json").write_text(json.dumps({"state_dir": str(tmp_path), "worker_timeout_s": 5, "processes": procs}))
    return tmp_path


def test_the_undo_document_records_the_domains_workers_before_anything_is_touched(tmp_path):
    cluster = local_cluster(_state_dir(tmp_path, [("primary", "rack-a"), ("primary", "rack-a"), ("primary", "rack-b"),
                                                  ("standby", "standby")]))
    assert type(cluster) is LocalStandalone and cluster.capacity() == {"rack-a": 2, "rack-b": 1}
    undo = cluster.undo_of("rack-a", "host-down")
    assert undo["seam"] == "standalone" and undo["domain"] == "rack-a" and undo["fault"] == "host-down"
    assert [(w["pool"], w["cores"], w["memory"], w["port"]) for w in undo["workers"]] == [
        ("primary", 2, "2g", 7100), ("primary", 2, "2g", 7101)]
    assert set(cluster.watched_outside("rack-a")) == {"worker-primary-rack-b-7102", "worker-standby-standby-7103"}
    with pytest.raises(InputError, match="a partition needs a cluster on namespace hosts"):
        cluster.undo_of("rack-a", "partition")
    with pytest.raises(InputError, match="failure domain 'rack-z' has no running worker .domains: rack-a, rack-b"):
        cluster.undo_of("rack-z", "host-down")
    # every worker of the domain is alive, as recorded: giving it back starts nothing
    assert give_back(undo) == []


def test_a_drill_never_takes_the_only_standby_capacity(tmp_path):
    cluster = local_cluster(_state_dir(tmp_path, [("primary", "rack-a"), ("standby", "rack-a")]))
    with pytest.raises(InputError, match="blast radius: failure domain 'rack-a' holds all of the standby capacity"):
        cluster.check_blast_radius("rack-a")
    cluster.check_blast_radius("rack-b")


def test_an_undo_document_of_an_unknown_seam_is_refused():
    with pytest.raises(InputError, match="unknown seam 'kubernetes'"):
        give_back({"seam": "kubernetes", "domain": "zone-a"})
