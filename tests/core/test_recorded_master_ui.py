"""Issue 14: a recovery-units deployment records its master's web UI; capacity is polled there, not on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from ft_core.errors import InputError
from spark_jobs.cluster.standalone import ClusterState, Process
from spark_jobs.recovery_units.deployment import Deployment
from spark_jobs.recovery_units.recovery import capacity, recorded_master_ui
from spark_jobs.recovery_units.runtime import DeployConfig, _master


def _deployment(root: Path, **fields) -> Path:
    root.mkdir()
    Deployment(root=str(root), pipeline="smartcity", params={}, input=str(root / "input"),
               master="spark://spark-master.example:7077", **fields).save()
    return root


def test_the_recorded_master_ui_is_used_as_given(tmp_path):
    root = _deployment(tmp_path / "units", master_ui="http://spark-master.example:8080")
    assert recorded_master_ui(root) == "http://spark-master.example:8080"


def test_a_local_cluster_deployment_without_the_field_uses_its_cluster_state(tmp_path):
    state = ClusterState(str(tmp_path), 10, [Process("master-primary", "master", "primary", 1, 7077, 18090, "log")])
    state.save()
    root = _deployment(tmp_path / "units", cluster_state=str(tmp_path))
    assert recorded_master_ui(root) == "http://127.0.0.1:18090"


def test_a_deployment_on_a_users_master_without_a_ui_records_none_and_capacity_says_so(tmp_path):
    root = _deployment(tmp_path / "units")
    assert recorded_master_ui(root) is None
    with pytest.raises(InputError, match="records no master web UI"):
        capacity(root, [])


def test_deploy_records_the_given_master_ui(tmp_path):
    config = DeployConfig(root=tmp_path, placement=tmp_path / "p.json", master="spark://h:7077",
                          master_ui="http://h:8080/")
    assert _master(config) == ("spark://h:7077", "http://h:8080", None)
    assert _master(config.model_copy(update={"master_ui": None})) == ("spark://h:7077", None, None)
