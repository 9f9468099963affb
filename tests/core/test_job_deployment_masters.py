"""Issue 14: a job's deployment names its masters; loopback is only the default of ftops's own local cluster."""

from __future__ import annotations

import pytest

from ft_core.errors import InputError
from spark_jobs.cli.job import _ui_of
from spark_jobs.runtime.job_streams import parse_deployment

USERS = {"primary_master": "spark://m1.example:7077", "standby_master": "spark://m2.example:7077",
         "primary_ui": "http://m1.example:8080", "standby_ui": "http://m2.example:8080"}


def test_a_deployment_without_masters_is_refused_naming_the_field():
    with pytest.raises(InputError, match="primary_master"):
        parse_deployment({"pipeline": "topk", "root": "/tmp/j"}, "j")


def test_a_users_masters_are_kept_even_with_a_local_cluster_state():
    dep = parse_deployment({"pipeline": "topk", "root": "/tmp/j", "cluster_state": "/tmp/s", **USERS}, "j")
    assert dep.model_dump(include=set(USERS)) == USERS


def test_a_local_cluster_deployment_defaults_to_the_local_stacks_masters():
    dep = parse_deployment({"pipeline": "topk", "root": "/tmp/j", "cluster_state": "/tmp/s"}, "j")
    assert (dep.primary_master, dep.standby_ui) == ("spark://127.0.0.1:7077", "http://127.0.0.1:8091")


def test_register_derives_the_ui_from_the_masters_host_or_takes_the_flag():
    assert _ui_of("spark://m1.example:7077", None) == "http://m1.example:8080"
    assert _ui_of("spark://m1.example:7077", "http://ui.example:9090/") == "http://ui.example:9090"
    with pytest.raises(InputError, match="--master-ui"):
        _ui_of("yarn", None)
