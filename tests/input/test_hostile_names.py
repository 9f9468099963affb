"""Names are identifiers (issue 35, item 5): one rule for job and failure-domain names, checked at every entrance.

Each hostile name is refused before any other work: on the command line with exit 2 naming the flag (and
nothing stored in the real PostgreSQL the command was pointed at), in a DAG run's Params (as the API server
checks a trigger's conf), by the operators before they open the history store, and in the documents that
carry domain names. The UI's URLs are covered in ``tests/airflow/test_plugin_ui.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ft_core.errors import InputError
from ft_core.input.names import MAX_NAME_LENGTH, NAME_PATTERN, check_name, is_name, name_flag
from tests.conftest import SAMPLES, run_cli
from tests.input.harness import rejected, run
from tests.input.test_airflow_inputs import DAGS  # sets AIRFLOW_HOME before Airflow loads
from tests.input.test_hostile_documents import SETTINGS
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

from airflow.sdk.definitions.param import ParamValidationError  # noqa: E402 - after AIRFLOW_HOME is set
from airflow.sdk.exceptions import AirflowFailException  # noqa: E402

HOSTILE = ["<img src=x onerror=alert(1)>", "../../etc/evil", "a/b", " ", "x" * 3000, "", ".."]
Q1 = str(SAMPLES / "q1-topk.json")
RULE = "is not an identifier: use 1-63 letters, digits, '-', '_' or '.', starting with a letter or digit"


# -- the rule ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, ok", [
    ("x" * MAX_NAME_LENGTH, True), ("x" * (MAX_NAME_LENGTH + 1), False), ("a", True), ("9lives", True),
    ("alerts-eu.v2_b", True), ("-rf", False), (".hidden", False), ("_x", False), (".", False), ("..", False),
    ("topk\n", False), ("\ntopk", False), ("tö", False), ("a b", False), ("a\x00b", False), ("a:b", False),
])
def test_the_rule_at_its_edges(value, ok):
    assert is_name(value) is ok
    assert bool(re.search(NAME_PATTERN, value)) is ok  # as a DAG Param's JSON schema applies it (re.search)


@settings(max_examples=300, **SETTINGS)
@given(value=st.one_of(st.text(max_size=70), st.from_regex(r"[A-Za-z0-9._\-/\n ]{0,66}", fullmatch=True)))
def test_the_pattern_and_the_check_agree(value):
    """The DAG Params' and forms' pattern accepts exactly what the CLI, the documents and the operators accept."""
    assert bool(re.search(NAME_PATTERN, value)) == is_name(value)
    if is_name(value):
        assert check_name(value, "job name") == value and name_flag("job name")(value) == value
    else:
        with pytest.raises(InputError, match=re.escape(RULE)):
            check_name(value, "job name", field="--name")


def test_a_long_name_is_not_echoed_whole():
    with pytest.raises(InputError) as refused:
        check_name("x" * 3000, "job name", field="--name")
    assert "(3000 characters)" in str(refused.value) and len(str(refused.value)) < 250
    assert refused.value.field == "--name"


# -- the command line --------------------------------------------------------------------------------

def _stored_jobs(conn) -> list[str] | None:
    """The names in ``ftops_job``; None when the table does not exist (the database was never migrated)."""
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass('public.ftops_job') IS NOT NULL")
        exists = cur.fetchone()[0]
        names = None
        if exists:
            cur.execute("SELECT name FROM ftops_job ORDER BY name")
            names = [r[0] for r in cur.fetchall()]
    conn.rollback()
    return names


def test_job_register_refuses_every_hostile_name_before_touching_the_database(tmp_path, pg_server, pg_conn, monkeypatch):
    monkeypatch.setenv("FTOPS_DATABASE_URL", pg_server.url())
    for name in HOSTILE:
        res = rejected(["job", "register", "--topology", Q1, "--name", name], tmp_path, "--name: job name")
        assert RULE in res.err
        assert _stored_jobs(pg_conn) is None, f"{name[:20]!r}: the database was touched"
    as_json = run(["job", "register", "--topology", Q1, "--name", "a/b", "--json"], tmp_path)
    doc = json.loads(as_json.out)
    assert (as_json.code, doc["field"], doc["kind"], as_json.err) == (2, "--name", "usage", "")
    assert _stored_jobs(pg_conn) is None
    # The same command with a name reaches this database and stores the job: the refusals above were the rule's.
    assert run(["job", "register", "--topology", Q1, "--name", "q1-topk"], tmp_path).code == 0
    assert _stored_jobs(pg_conn) == ["q1-topk"]


def test_the_real_entry_point_refuses_a_hostile_name(pg_server, pg_conn):
    res = run_cli("job", "register", "--topology", Q1, "--name", "../../etc/evil",
                  env={"FTOPS_DATABASE_URL": pg_server.url()}, timeout=120)
    assert res.code == 2 and res.out == ""
    assert res.err == f"ftops: error: --name: job name '../../etc/evil' {RULE} (see ftops job register --help)\n"
    assert _stored_jobs(pg_conn) is None


def test_a_domain_map_with_a_hostile_domain_stores_nothing(tmp_path, pg_server, pg_conn, monkeypatch):
    """``job register --domains``: the map is checked before the store is opened."""
    monkeypatch.setenv("FTOPS_DATABASE_URL", pg_server.url())
    docs = tmp_path.parent / f"{tmp_path.name}-docs"
    docs.mkdir()
    (docs / "domains.yaml").write_text('10.0.0.5: rack-a\n10.0.0.6: "../../etc/evil"\n')
    res = rejected(["job", "register", "--name", "topk", "--workload", "topk", "--input", str(docs / "in"),
                    "--master", "spark://127.0.0.1:7077", "--domains", str(docs / "domains.yaml")],
                   tmp_path, "--domains: failure domain '../../etc/evil'")
    assert RULE in res.err and _stored_jobs(pg_conn) is None


def _entrances(folder: Path, name: str) -> list[tuple[list[str], str]]:
    """Every other flag or argument that takes a job or failure-domain name (or an application name that
    becomes a folder), with the field its refusal names. Folders point at ``folder`` and the database nowhere,
    so a command whose check went missing fails on them instead of reaching a real deployment, cluster or
    store (``cluster up`` and ``bench soak`` would start one: their parsers are tested directly below)."""
    d = str(folder)
    profile = str(SAMPLES / "fault-profile.yaml")
    return [
        *[(["job", cmd, name], "name: job name") for cmd in ("start", "stop", "status", "checkpoint")],
        (["job", "set", name, "--priority", "2"], "name: job name"),
        (["units", "recover", "--schedule", "s.json", "--deployment-dir", d, "--job", name], "--job: job name"),
        (["faults", "inject", profile, "--app-id", "app-1", "--duration", "1", "--seed", "1", "--job", name], "--job: job name"),
        (["faults", "domain-down", "--output", d, "--domain", name, "--hosts", "10.0.0.5"], "--domain: failure domain"),
        (["units", "kill", "--deployment-dir", d, "--domain", name], "--domain: failure domain"),
        (["units", "start", "--deployment-dir", d, "--units", "O1[0]", "--app", name], "--app: application name"),
        (["units", "recover", "--schedule", "s.json", "--deployment-dir", d, "--prefix", name],
         "--prefix: application name prefix"),
        (["cluster", "kill-domain", name, "--state-dir", d], "domain: failure domain"),
        (["cluster", "heal-domain", name, "--state-dir", d], "domain: failure domain"),
        (["cluster", "add-worker", "--domain", name, "--state-dir", d], "--domain: failure domain"),
    ]


@pytest.mark.parametrize("name", ["../../etc/evil", "<img src=x onerror=alert(1)>", "a/b", " "])
def test_every_name_flag_refuses_a_hostile_name(tmp_path, name, monkeypatch):
    monkeypatch.setenv("FTOPS_DATABASE_URL", "postgresql://ftops@127.0.0.1:1/nowhere")
    for argv, needle in _entrances(tmp_path, name):
        res = rejected(argv, tmp_path, needle)
        assert RULE in res.err, argv


def test_cluster_up_and_the_soak_refuse_a_hostile_domain_before_starting_anything():
    """``cluster up --workers`` (checked before the cluster starts) and ``bench soak --domains`` (an argparse type)."""
    import argparse

    from ftops_provider.stack_cli import domain_list
    from spark_jobs.cli.cluster import parse_domains

    assert parse_domains("rack-a:1,rack-b:2") == (("rack-a", 1), ("rack-b", 2))
    with pytest.raises(InputError, match=re.escape(f"--workers: failure domain '../x' {RULE}")):
        parse_domains("rack-a:1,../x:1")
    assert domain_list("auto") == ["auto"] and domain_list("rack-a, rack-b") == ["rack-a", "rack-b"]
    for name in ("../../etc/evil", "<img src=x onerror=alert(1)>", "a/b", "rack a"):
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(RULE)):
            domain_list(f"rack-a,{name}")


def test_documents_refuse_a_hostile_domain(tmp_path):
    docs = tmp_path.parent / f"{tmp_path.name}-docs"
    docs.mkdir()
    (docs / "faults.yaml").write_text('domains:\n  "a/b":\n    at_s: [3]\n')
    res = rejected(["faults", "validate", str(docs / "faults.yaml")], tmp_path, "fault profile field domains.a/b")
    assert f"failure domain 'a/b' {RULE}" in res.err
    (docs / "nodes.yaml").write_text('nodes:\n  - {name: a1, domain: "<b>", capacity: 2}\n'
                                     '  - {name: b1, domain: rack-b, capacity: 2}\ntasks: []\n')
    res = rejected(["plan", "placement", str(docs / "nodes.yaml"), "--k-min", "1"], tmp_path,
                   "placement document field nodes.0.domain")
    assert f"failure domain '<b>' {RULE}" in res.err
    (docs / "domains.json").write_text(json.dumps({"10.0.0.5": "rack a"}))
    rejected(["faults", "domain-down", "--output", str(docs), "--domain", "rack-a", "--domains", str(docs / "domains.json")],
             tmp_path, f"--domains: failure domain 'rack a' {RULE}")


def test_the_store_refuses_a_hostile_job_from_any_caller():
    from pydantic import ValidationError

    from ft_core.store.records import JobSpec

    assert JobSpec(name="alerts", workload="topk").name == "alerts"
    for name in HOSTILE:
        with pytest.raises(ValidationError, match=re.escape(RULE)):
            JobSpec(name=name, workload="topk")


# -- Airflow -----------------------------------------------------------------------------------------

NAME_PARAMS = [("ftops_checkpoint_tuning", "job"), ("ftops_incremental_recovery", "job")]


def _serialized(dag_id: str):
    """The DAG as the API server holds it (serialized and back): its ``create_dagrun`` validates a trigger's conf
    with ``params.deep_merge(conf).validate()`` and answers 400 on ParamValidationError."""
    from airflow.serialization.serialized_objects import DagSerialization

    return DagSerialization.from_dict(DagSerialization.to_dict(DAGS[dag_id]))


@pytest.mark.parametrize("dag_id, param", NAME_PARAMS)
def test_a_dag_run_with_a_hostile_job_is_refused(dag_id, param):
    """The job Params are optional (empty: the due jobs, or a refusal naming the Param): anything else but a name is
    refused when the run is created."""
    served = _serialized(dag_id)
    for name in ["topk", ""]:
        served.params.deep_merge({param: name}).validate()
    for name in [*(h for h in HOSTILE if h), "topk\n", "\n", "-rf", "x" * 64]:
        with pytest.raises(ParamValidationError):
            served.params.deep_merge({param: name}).validate()
        with pytest.raises(ParamValidationError):  # the trigger form's check of the one field
            DAGS[dag_id].params.get_param(param).resolve(name)
    schema = served.params.get_param(param).schema
    assert (schema["pattern"], schema["maxLength"]) == (f"^$(?!\\n)|{NAME_PATTERN}", MAX_NAME_LENGTH)


def _operators(name: str) -> list:
    from ftops_provider.operators.accuracy import EstimateAccuracyOperator
    from ftops_provider.operators.checkpoint import (ApplyIntervalOperator, ProfileIntervalOperator,
                                                     RecommendIntervalOperator, ValidateIntervalOperator)
    from ftops_provider.operators.planning import PlanReplicationOperator
    from ftops_provider.operators.profiling import ProfileJobOperator, WhatIfRecoveryOperator
    from ftops_provider.operators.recovery import PlanStagesOperator

    nowhere = "/nonexistent/ftops-names-test"
    return [EstimateAccuracyOperator(task_id="t", job_name=name), ProfileJobOperator(task_id="t", job_name=name),
            WhatIfRecoveryOperator(task_id="t", job_name=name), PlanReplicationOperator(task_id="t", job_name=name),
            ProfileIntervalOperator(task_id="t", job_name=name, interval_s="1", work_dir=nowhere),
            RecommendIntervalOperator(task_id="t", job_name=name),
            ValidateIntervalOperator(task_id="t", job_name=name, work_dir=nowhere),
            ApplyIntervalOperator(task_id="t", job_name=name), PlanStagesOperator(task_id="t", units_dir=nowhere, job_name=name)]


@pytest.mark.parametrize("name", ["../../etc/evil", "<img src=x onerror=alert(1)>", ""])
def test_operators_refuse_a_hostile_job_before_opening_the_store(name):
    """No ``ftops_db`` connection is configured here: an operator that reached the store would fail differently."""
    from ftops_provider.operators.checkpoint import release_apply_lease

    for operator in _operators(name):
        with pytest.raises(AirflowFailException) as failed:
            operator.execute({"run_id": "manual__names-test", "ti": None})
        if name == "" and type(operator).__name__ == "PlanStagesOperator":  # its DAG's job Param is empty by default
            assert str(failed.value).startswith("job: name the registered job this recovery is recorded under")
            continue
        assert str(failed.value).startswith("job_name: job name ") and RULE in str(failed.value), type(operator).__name__
    with pytest.raises(AirflowFailException, match=re.escape(RULE)):
        release_apply_lease(name, {"run_id": "manual__names-test"})
