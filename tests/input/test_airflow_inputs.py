"""The Airflow side of issue 18: DAG Params carry JSON-schema bounds, operators refuse bad arguments before
acting, with the CLI's messages. Nothing here starts Airflow or touches a database: the trigger form's
validation is ``Param.resolve`` and each operator's ``execute`` fails before it opens a connection."""

from __future__ import annotations

import importlib.util
import os
import re

from tests.conftest import ROOT, SAMPLES

os.environ.setdefault("AIRFLOW_HOME", str(ROOT / ".state" / "airflow-test"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")

import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ft_core.input.limits import current_limits  # noqa: E402
from tests.input.harness import run  # noqa: E402
from tests.input.test_hostile_documents import SETTINGS  # noqa: E402

airflow_sdk = pytest.importorskip("airflow.sdk")
from airflow.sdk.definitions.param import ParamValidationError  # noqa: E402
from airflow.sdk.exceptions import AirflowFailException  # noqa: E402

LIMITS = current_limits()


def _dags() -> dict:
    dags = {}
    for path in sorted((ROOT / "dags").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"input_test_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        dags[module.dag.dag_id] = module.dag
    return dags


DAGS = _dags()
PARAMS = sorted((dag_id, name) for dag_id, dag in DAGS.items() for name in dag.params)


def test_every_param_has_a_type_and_every_number_its_bounds():
    for dag_id, name in PARAMS:
        schema = DAGS[dag_id].params.get_param(name).schema
        assert "type" in schema or "enum" in schema, (dag_id, name)
        types = schema.get("type")
        if types in ("number", "integer") or (isinstance(types, list) and "number" in types):
            assert {"minimum", "exclusiveMinimum"} & set(schema) and "maximum" in schema, (dag_id, name, schema)
        if types == "string":
            assert {"minLength", "pattern", "enum"} & set(schema) or name in ("fault_profile",), (dag_id, name, schema)


def test_duration_bounds_follow_the_configured_limit():
    schema = DAGS["ftops_chaos_drill"].params.get_param("replacement_delay_s").schema
    assert schema["maximum"] == LIMITS.max_duration_s and schema["minimum"] == 0


def _bad_for(schema: dict) -> st.SearchStrategy:
    """Values a Param with ``schema`` must refuse, derived from the schema itself."""
    bad = [st.just([1]), st.just({"a": 1})]
    types = schema.get("type")
    numeric = types in ("number", "integer") or (isinstance(types, list) and "number" in types)
    if numeric:
        bad.append(st.just("x"))
        low, high = schema.get("minimum", schema.get("exclusiveMinimum")), schema.get("maximum")
        if types == "integer":
            bad.append(st.just(1.5))
            if low is not None:
                bad.append(st.integers(max_value=low - 1, min_value=low - 10**20))
            if high is not None:
                bad.append(st.integers(min_value=high + 1, max_value=high + 10**20))
        else:
            if low is not None:
                bad.append(st.floats(min_value=-1e300, max_value=low, exclude_max="minimum" in schema))
            if high is not None:
                bad.append(st.floats(min_value=high, max_value=1e300, exclude_min=True))
    if "pattern" in schema:  # those the pattern refuses ("x" is a job name, not a number list)
        bad.append(st.sampled_from([v for v in ("x", "1,,2", "1;2", "-1", "nan", "declared:2", "declared:", "a/b")
                                    if not re.search(schema["pattern"], v)]))
    if "enum" in schema:
        bad.append(st.just("surely-not-a-choice"))
    if types == "boolean":
        bad.append(st.just("yes"))
    return st.one_of(bad)


@settings(max_examples=60, **SETTINGS)
@given(data=st.data(), param=st.sampled_from(PARAMS))
def test_the_trigger_form_refuses_values_outside_a_params_schema(data, param):
    dag_id, name = param
    declared = DAGS[dag_id].params.get_param(name)
    value = data.draw(_bad_for(declared.schema), label="value")
    with pytest.raises(ParamValidationError):
        declared.resolve(value)


def test_the_trigger_forms_defaults_are_valid():
    for dag_id, name in PARAMS:
        declared = DAGS[dag_id].params.get_param(name)
        declared.resolve(declared.value)


def _operators():
    from ftops_provider.operators.checkpoint import ProfileIntervalOperator, RecommendIntervalOperator
    from ftops_provider.operators.drills import DrillPreflightOperator, InjectFaultsOperator
    from ftops_provider.operators.recovery import PlanStagesOperator
    from ftops_provider.sensors.waits import SparkAppSensor

    nowhere = "/nonexistent/ftops-input-test"
    return [
        (DrillPreflightOperator(task_id="t", settings={"job": "topk", "domain": "auto", "replacement_delay_s": "-1"}),
         "replacement_delay_s: Input should be greater than or equal to 0 (got '-1')"),
        (DrillPreflightOperator(task_id="t", settings={"job": "topk", "domain": "auto", "kill_driver": "perhaps"}),
         "kill_driver"),
        (DrillPreflightOperator(task_id="t", settings={"job": "topk", "domain": "../rack-a"}),
         "failure_domain: failure domain '../rack-a' is not an identifier"),
        (InjectFaultsOperator(task_id="t", state_task_id="s", profile=str(SAMPLES / "fault-profile.yaml"), duration_s="inf"),
         "fault_duration_s: Input should be a finite number (got 'inf')"),
        (InjectFaultsOperator(task_id="t", state_task_id="s", profile=str(SAMPLES / "fault-profile.yaml"),
                              duration_s="2000000"),
         "fault_duration_s: 2e+06 s of fault profile 'gc-pauses-and-a-rack' hold more faults than the limit"),
        (InjectFaultsOperator(task_id="t", state_task_id="s", profile=str(SAMPLES / "q1-topk.json"), duration_s="60"),
         "fault profile field operators: Input should be a valid dictionary"),
        (PlanStagesOperator(task_id="t", units_dir=nowhere, job_name="j", arrivals="1,x"),
         "arrivals: item 2 ('x'): Input should be a valid number"),
        (PlanStagesOperator(task_id="t", units_dir=nowhere, job_name="j", node_cap="0"),
         "node_cap: Input should be greater than 0 (got '0')"),
        (PlanStagesOperator(task_id="t", units_dir=nowhere, job_name="j", policy="fastest"), "policy: expected one of"),
        (PlanStagesOperator(task_id="t", units_dir=nowhere, job_name=""),  # the recovery DAG's job Param has no default
         "job: name the registered job this recovery is recorded under"),
        (ProfileIntervalOperator(task_id="t", job_name="topk", interval_s="0", work_dir=nowhere),
         "interval_s: Input should be greater than 0 (got '0')"),
        (ProfileIntervalOperator(task_id="t", job_name="topk", interval_s="1", work_dir=nowhere, failures="1.5"), "failures"),
        (RecommendIntervalOperator(task_id="t", job_name="topk", max_recovery_s="nan"),
         "max_recovery_s: Input should be a finite number (got 'nan')"),
        (RecommendIntervalOperator(task_id="t", job_name="topk", case="p99"), "case: Input should be 'min', 'avg' or 'max'"),
        (SparkAppSensor(task_id="t", app_name="a", timeout_s="1e18"),
         "timeout_s: exceeds the limit of 2592000 s (1e+18 given; set FTOPS_MAX_DURATION_S to raise it)"),
    ]


@pytest.mark.parametrize("index", range(15))
def test_operators_refuse_bad_arguments_before_acting(index):
    """The task fails (no retry) with the message; it never reached the history store or a cluster, which
    would fail differently here (no connection is configured)."""
    operator, message = _operators()[index]
    with pytest.raises(AirflowFailException) as failed:
        operator.execute({"run_id": "manual__input-test", "ti": None})
    assert message in str(failed.value) and "\n" not in str(failed.value)


def test_operators_and_the_cli_say_the_same(tmp_path):
    """One rule, one message: a negative duration on the command line and in an operator."""
    cli = run(["simulate", str(SAMPLES / "q2-incidents.json"), "--fail", "O1[0]", "--restore-s=-1"], tmp_path)
    operator, message = _operators()[0]
    reason = message.removeprefix("replacement_delay_s: ")
    assert reason in cli.err and cli.err.startswith("ftops: error: --restore-s: ")


def test_the_pipeline_pattern_of_trigger_forms_accepts_every_sample_and_reference_form():
    import re

    from ft_core.input.quantities import PIPELINE_REF_PATTERN
    from spark_jobs.pipeline.loading import SAMPLES

    accepted = ["", *SAMPLES, *SAMPLES.values(), "examples/sensor_alerts.py", "/abs/job.py:pipeline"]
    assert all(re.search(PIPELINE_REF_PATTERN, ref) for ref in accepted)
    assert not any(re.search(PIPELINE_REF_PATTERN, ref) for ref in ["x", "a b:c", "mod:", "declared:2", "rm -rf /"])
