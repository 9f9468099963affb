"""Issue 14: a job's deployment names its masters; loopback is only the default of ftops's own local cluster."""

from __future__ import annotations

import pytest

from ft_core.errors import InputError
from spark_jobs.cli.job import _ui_of
from spark_jobs.runtime.job_streams import parse_deployment
from tests.store_fixtures import pg_server  # noqa: F401 - fixture

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


def test_a_jobs_spark_confs_reach_every_spark_submit_of_its_streams(pg_server, tmp_path):
    """``ftops job register --conf``: stored with the deployment, passed to the primary's and the replica's
    spark-submit (what executors on other hosts need: the address to call the driver back at) and to its
    profiling copies, which run on ``--profile-master``."""
    import json

    from spark_jobs.runtime.job_streams import primary_run_argv, replica_run_argv
    from spark_jobs.runtime.launch import run_args, submit_command
    from tests.conftest import run_cli

    env = {"FTOPS_DATABASE_URL": pg_server.url()}
    base = ["job", "register", "--name", "confs", "--pipeline", "topk", "--input", tmp_path / "in",
            "--master", "spark://m1.example:7077"]
    res = run_cli(*base, "--json", "--conf", "spark.driver.host=10.0.0.4", "--conf", "spark.executor.memory=2g",
                  "--profile-master", "spark://spare.example:7077", env=env)
    assert res.code == 0, res.err
    dep = parse_deployment(json.loads(res.out)["deployment"], "confs")
    assert dep.spark_conf == {"spark.driver.host": "10.0.0.4", "spark.executor.memory": "2g"}
    # checkpoint profiling copies run on the profiling master, with the job's confs
    from spark_jobs.profiling.settings import ProfileConfig

    profile = ProfileConfig(pipeline="topk", intervals_s=[2.0], duration_s=30, work_dir=tmp_path, **dep.profiling_settings())
    assert (profile.master, profile.spark_conf["spark.executor.memory"]) == ("spark://spare.example:7077", "2g")
    assert parse_deployment({**dep.model_dump(), "profile_master": None}, "confs").profiling_settings() == \
        {"spark_conf": dep.spark_conf}  # default: local[1] in the worker
    for argv in (primary_run_argv(dep), replica_run_argv(dep, 3, ["O1[0]"])):
        command = submit_command(run_args([str(a) for a in argv]))
        assert "spark.driver.host=10.0.0.4" in command and "spark.executor.memory=2g" in command
        assert command[command.index("spark.driver.host=10.0.0.4") - 1] == "--conf"

    bad = run_cli(*base, "--conf", "driver.host=10.0.0.4", env=env)
    assert bad.code == 2 and "--conf: Value error, 'driver.host' is not a Spark conf key (spark.*)" in bad.err
    assert run_cli(*base, "--conf", "spark.driver.host", env=env).code == 2
    own = run_cli(*base, "--conf", "spark.sql.shuffle.partitions=8", env=env)
    assert own.code == 2 and "'spark.sql.shuffle.partitions' is set by ftops for every stream" in own.err


def test_the_stacks_airflow_connections_name_the_masters_it_runs():
    import json

    from ftops_provider.local_stack import stack_connections

    masters = {"primary_master": "spark://198.18.7.2:7077", "primary_ui": "http://198.18.7.2:8090",
               "standby_master": "spark://198.18.7.3:7078", "standby_ui": "http://198.18.7.3:8091"}
    env = stack_connections("postgresql://u:p@127.0.0.1:5433/ftops", masters)
    assert json.loads(env["AIRFLOW_CONN_SPARK_STANDBY"]) == {"conn_type": "spark", "host": "spark://198.18.7.3", "port": 7078}
    ui = json.loads(env["AIRFLOW_CONN_FTOPS_SPARK_MASTER"])
    assert (ui["host"], ui["port"], ui["extra"]["master_url"]) == ("198.18.7.2", 8090, "spark://198.18.7.2:7077")
    assert json.loads(stack_connections("postgresql://x")["AIRFLOW_CONN_SPARK_PRIMARY"])["host"] == "spark://127.0.0.1"
