"""The local stack on a namespace network (issue 14: ``ftops stack up --network namespaces``): the Spark daemons
on hosts of their own, PostgreSQL, Airflow and the drivers on this machine, the gateway. The stack's job
names the namespace masters, its drivers advertise the gateway (the deployment's Spark confs), so the
primary's executors on the worker hosts call it back and it makes progress, written to the stack's history
store; ``up`` starts the replica of the plan the store says runs; Airflow's connections name the
same masters; a stack on loopback is not silently mixed with it; ``down`` removes every namespace. Needs
root and iproute2 (CI runs as root); elsewhere it is skipped, saying why."""

from __future__ import annotations

import json
import shutil

import pytest

from ft_core.errors import InputError
from ftops_provider.local_stack import RUNNING_JOB, SAMPLE_JOBS, LocalStack
from spark_jobs.drills.live import master_apps
from spark_jobs.pipeline.metrics import read_metrics
from spark_jobs.runtime.job_streams import primary_app_name, replica_app_name
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import ROOT, WORKER, namespaces_missing, namespaces_of, test_network, test_port

pytestmark = pytest.mark.skipif(test_network() != "namespaces",
                                reason=f"network namespaces need {namespaces_missing() or 'FTOPS_TEST_NETWORK=namespaces'}")


def test_the_stack_runs_its_job_across_namespace_hosts_and_down_removes_them():
    # under the project, not /tmp: as root the stack's PostgreSQL runs as `postgres`, which must reach the folder
    home = ROOT / ".state" / f"test-stack-namespaces{WORKER and '-' + WORKER}"
    shutil.rmtree(home, ignore_errors=True)
    stack = LocalStack(state=home, airflow_port=test_port(16840), db_port=test_port(16841), network="namespaces")
    subnet = None
    try:
        stack.up()
        state = stack._cluster()
        subnet, gateway = state.hosts().subnet, state.driver_host()
        masters = stack.masters()
        assert masters["primary_master"].startswith(f"spark://198.18.{subnet}.")
        dep = stack.deployment(next(j for j in SAMPLE_JOBS if j.name == RUNNING_JOB))
        assert dep.primary_master == masters["primary_master"]
        assert dep.spark_conf == {"spark.driver.host": gateway, "spark.driver.bindAddress": gateway}
        with stack.store() as store:
            assert store.job(RUNNING_JOB)["deployment"]["primary_master"] == masters["primary_master"]
        conn = json.loads(stack.connections()["AIRFLOW_CONN_FTOPS_SPARK_MASTER"])  # what the deferred waits read
        assert f"http://{conn['host']}:{conn['port']}" == masters["primary_ui"]
        assert conn["extra"]["master_url"] == masters["primary_master"]

        # the primary's executors on the worker hosts reach the driver at the gateway: micro-batches complete
        metrics = dep.primary_output / "_metrics" / "metrics.jsonl"
        wait_for(lambda: len(read_metrics(metrics)) >= 3, timeout_s=300, interval_s=2,
                 what="three micro-batches of the primary on the namespace cluster")
        run = json.loads((dep.primary_output / "_run.json").read_text())
        assert run["master"] == masters["primary_master"]

        # the stack's drivers write their progress to its history store, and `up` (after a `down`) starts the
        # replica the store says runs
        with stack.store() as store:
            assert store.progress_since(primary_app_name(RUNNING_JOB), 0).batches > 0
            tasks = sorted(dep.workload().task_ids())[:2]
            plan = store.save_plan(RUNNING_JOB, "replication", algorithm="test", objective=0.5, optimal=False,
                                   payload={"tasks": tasks}, input_hash="test-replica-restart")
            store.record_applied_plan(plan.plan_id, RUNNING_JOB, "replica")
        stack.start_running_job()
        replica = replica_app_name(RUNNING_JOB, plan.plan_id)
        assert replica in {a["name"] for a in master_apps(masters["standby_ui"])}
        with stack.store() as store:
            wait_for(lambda: store.progress_since(replica, 0).batches > 0, timeout_s=300, interval_s=2,
                     what=f"micro-batches of {replica} in the history store")

        with pytest.raises(InputError, match="already run on namespaces; `ftops stack down` first"):
            LocalStack(state=stack.state, airflow_port=stack.airflow_port, db_port=stack.db_port, network="loopback").up()
    finally:
        stopped = stack.down()
    assert any(s.startswith("spark ") for s in stopped)
    assert subnet is not None and namespaces_of(subnet) == []
    shutil.rmtree(home, ignore_errors=True)  # kept when the test fails: its logs explain why
