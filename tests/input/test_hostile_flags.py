"""Hostile numbers on every numeric flag of the ft_core commands (issue 18): exit 2 naming the flag, or 3.

For each flag the generated values are ones no run may accept: not a number, not finite, below the
flag's minimum, above its limit (``FTOPS_MAX_*``), fractional where a count is expected. Each must be
refused before anything is planned (:func:`tests.input.harness.rejected`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ft_core.cli.main import build_parser
from ft_core.input.limits import current_limits
from tests.conftest import SAMPLES
from tests.input.harness import leaves, rejected, run

LIMITS = current_limits()
S = str(SAMPLES)
SETTINGS = dict(derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# command line without the flag under test -> {flag: the kinds of values it refuses}
BASE = {
    "plan replication": [["plan", "replication", f"{S}/fig2-join.json", "--budget", "1"],
                         {"--budget": ("count0", LIMITS.max_tasks), "--time-limit": ("positive", LIMITS.max_duration_s)}],
    "plan budget": [["plan", "budget", f"{S}/fig2-join.json"],
                    {"--target-accuracy": ("share", None), "--max-budget": ("count0", LIMITS.max_tasks),
                     "--time-limit": ("positive", LIMITS.max_duration_s)}],
    "plan recovery": [["plan", "recovery", f"{S}/recovery-fig1.json", "--budget", "1"],
                      {"--budget": ("nonnegative", None), "--time-limit": ("positive", LIMITS.max_duration_s)}],
    "plan stages": [["plan", "stages", f"{S}/recovery-fig1.json", "--capacity", "0"],
                    {"--capacity": ("nonnegative list", LIMITS.max_nodes), "--arrivals": ("positive list", LIMITS.max_nodes),
                     "--node-cap": ("share", None), "--failures": ("count0", LIMITS.max_nodes)}],
    "plan checkpoint": [["plan", "checkpoint", f"{S}/profiles-example.json", "--max-recovery-s", "150"],
                        {"--max-recovery-s": ("positive", LIMITS.max_duration_s), "--eps-ms": ("positive", None),
                         "--mtbf-s": ("positive", None)}],
    "plan placement": [["plan", "placement", f"{S}/placement-nodes.yaml", "--k-min", "1"],
                       {"--k-min": ("count0", LIMITS.max_nodes), "--k-max": ("count0", LIMITS.max_nodes),
                        "--cost-target": ("nonnegative", None)}],
    "plan redundancy": [["plan", "redundancy"], {"--level": ("fraction", None)}],
    "simulate": [["simulate", f"{S}/q2-incidents.json", "--fail", "O1[0]"],
                 {"--detection-s": ("nonnegative", LIMITS.max_duration_s), "--restore-s": ("nonnegative", LIMITS.max_duration_s),
                  "--checkpoint-interval-s": ("positive", LIMITS.max_duration_s), "--utilisation": ("open fraction", None),
                  "--capacity": ("nonnegative", LIMITS.max_nodes), "--node-cap": ("share", None),
                  "--task-cost": ("positive", LIMITS.max_nodes), "--arrivals": ("arrivals", LIMITS.max_nodes)}],
    "faults schedule": [["faults", "schedule", f"{S}/fault-profile.yaml", "--seed", "1"],
                        {"--duration": ("nonnegative", LIMITS.max_duration_s)}],
    "bench recovery": [["bench", "recovery", "--quick"], {"--instances": ("count1", LIMITS.max_tasks)}],
    "bench replication": [["bench", "replication", "--quick"], {"--topologies": ("count1", LIMITS.max_tasks)}],
}
CASES = sorted((command, flag) for command, (_, flags) in BASE.items() for flag in flags)

NOT_NUMBERS = ["x", "", "nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "0x10", "1..2", "1 2", "--"]
# flags whose values are text with a number inside: what they refuse
TEXT_KINDS = {
    "memory": [*NOT_NUMBERS, "0", "0g", "-1g", "1gb", "1.5g", "1e3", "g", "9999999g", " 1g", "1 g"],
    "unit cost": [*NOT_NUMBERS, "declared", "declared:", "declared:0", "declared:-0.5", "declared:1.01", "declared:nan",
                  "declared:inf", "declared:x", "measured:1", "0.5"],
}


def _bad_values(kind: str, limit: float | None) -> st.SearchStrategy[str]:
    """Texts a flag of ``kind`` (bounded by ``limit``) must refuse."""
    bad = list(NOT_NUMBERS)
    below = {"positive": ["0", "-0", "-1", "-1e-300"], "nonnegative": ["-1", "-1e-300"], "count0": ["-1", "1.5", "1e3"],
             "count1": ["0", "-1", "1.5"], "fraction": ["-0.1", "1.5", "2"], "share": ["0", "1.01", "-1"],
             "open fraction": ["0", "1", "-0.5", "2"], "port": ["0", "1", "80", "1023", "65536", "1.5", "-1"],
             "port base": ["0", "80", "1023", "65001", "65535", "1.5", "-1"]}
    base = kind.removesuffix(" list")
    if kind in TEXT_KINDS:
        return st.sampled_from(TEXT_KINDS[kind])
    if kind == "arrivals":
        bad = ["60", "x@60", "1@x", "0@60", "-1@60", "1@-1", "nan@1", "1@inf", "1e18@1", "1@1e18", "1@60,,2"]
        return st.sampled_from(bad) | st.integers(min_value=1, max_value=20).map(lambda n: ",".join(["1@1"] * n) + ",0@5")
    bad += below.get(base, [])
    values = st.sampled_from(bad)
    if base in ("positive", "nonnegative"):
        values |= st.floats(min_value=-1e308, max_value=-1e-300).map(repr)
    if limit is not None:
        over = st.floats(min_value=limit * 1.001, max_value=1e308).map(repr) if not base.startswith("count") else \
            st.integers(min_value=int(limit) + 1, max_value=10**30).map(str)
        values |= over
    if kind.endswith(" list"):
        good = "1" if base == "positive" else "0"
        values = st.tuples(values.filter(lambda v: "," not in v and v.strip()), st.integers(0, 3)).map(
            lambda pair: ",".join([good] * pair[1] + [pair[0]]))
    return values


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile-flags")


def refuse_a_bad_number(table: dict, case: tuple[str, str], data, work: Path) -> None:
    """Draw a value the flag must refuse (its kind and limit from ``table``) and check the refusal."""
    command, flag = case
    argv, flags = table[command]
    value = data.draw(_bad_values(*flags[flag]), label="value")
    rejected([*argv, f"{flag}={value}"], work, flag)


@settings(max_examples=100, **SETTINGS)
@given(data=st.data(), case=st.sampled_from(CASES))
def test_a_bad_number_on_any_flag_exits_2_naming_the_flag(work, data, case):
    refuse_a_bad_number(BASE, case, data, work)


def _numeric(action) -> bool:
    """Whether a flag takes one number (its type turns "1" into an int or a float)."""
    try:
        return action.nargs is None and isinstance(action.type("1"), (int, float))
    except Exception:  # noqa: BLE001 - any refusal of "1" means: not a number flag
        return False


def test_every_number_flag_of_every_command_is_typed_and_finite():
    """Issue 18: no command takes a plain int/float flag (nan and inf passed those); each number flag is a
    quantity of ft_core.input.quantities, which refuses non-finite values and counts with fractions."""
    plain, numbers = [], 0
    for path, parser in leaves(build_parser()):
        for action in parser._actions:
            untyped_number = action.type is None and type(action.default) in (int, float) and action.nargs != 0
            if action.option_strings and (action.type in (int, float) or untyped_number):
                plain.append(f"{' '.join(path)} {action.option_strings[0]}")
            elif action.option_strings and _numeric(action):
                numbers += 1
                for text in ("nan", "inf", "-inf", "1e400", "", "x"):
                    with pytest.raises(argparse.ArgumentTypeError):
                        action.type(text)
                if isinstance(action.type("1"), int):
                    with pytest.raises(argparse.ArgumentTypeError):
                        action.type("1.5")
    assert plain == [] and numbers >= 100


def test_json_errors_for_flags_are_one_document_on_stdout(work):
    res = run(["simulate", f"{S}/q2-incidents.json", "--fail", "O1[0]", "--detection-s", "inf", "--json"], work)
    assert res.code == 2 and res.err == ""
    doc = json.loads(res.out)
    assert doc["field"] == "--detection-s" and doc["kind"] == "usage" and doc["exit_code"] == 2
    assert doc["error"].startswith("--detection-s: Input should be a finite number")


@settings(max_examples=20, **SETTINGS)
@given(bound=st.floats(min_value=1e-6, max_value=60))
def test_an_unreachable_recovery_bound_exits_3_with_one_line(work, bound):
    """Valid but infeasible: no profiled interval recovers within ``bound`` seconds (the smallest is ~74 s)."""
    res = rejected(["plan", "checkpoint", f"{S}/profiles-example.json", "--max-recovery-s", repr(bound)], work,
                   "smallest predicted recovery time", code=3)
    assert res.err.startswith("ftops: infeasible: ")


@settings(max_examples=10, **SETTINGS)
@given(k_min=st.integers(min_value=3, max_value=int(LIMITS.max_nodes)))
def test_more_replicas_than_failure_domains_exits_3(work, k_min):
    rejected(["plan", "placement", f"{S}/placement-nodes.yaml", "--k-min", str(k_min)], work, "failure domains", code=3)


def test_a_large_k_max_is_best_effort_and_quick(work):
    """--k-max up to the limit: phases that cannot place anything end the deployment at once."""
    res = run(["plan", "placement", f"{S}/placement-nodes.yaml", "--k-min", "1", "--k-max", str(int(LIMITS.max_nodes)),
               "--json"], work)
    assert res.code == 0, res.err
    assert json.loads(res.out)["shortfall"] == {"parse": int(LIMITS.max_nodes) - 2, "aggregate": int(LIMITS.max_nodes) - 2}


def test_limits_are_configurable_per_run(work, monkeypatch):
    """The message names the variable; setting it lets a larger run through."""
    argv = ["faults", "schedule", f"{S}/fault-profile.yaml", "--seed", "1", "--duration", "4000000"]
    rejected(argv, work, "FTOPS_MAX_DURATION_S")
    monkeypatch.setenv("FTOPS_MAX_DURATION_S", "5000000")
    monkeypatch.setenv("FTOPS_MAX_FAULT_EVENTS", "1000")
    rejected(argv, work, "more faults than the limit of 1000 (set FTOPS_MAX_FAULT_EVENTS")  # now the count is too large
    monkeypatch.setenv("FTOPS_MAX_FAULT_EVENTS", "20000000")
    monkeypatch.setenv("FTOPS_MAX_DURATION_S", "not a number")
    rejected(argv, work, "FTOPS_MAX_DURATION_S: Input should be a valid number")
