"""Hostile documents for every ft_core command that reads one (issue 18): never a traceback, a hang or exit 0.

Each property generates malformed documents (seeded: ``derandomize=True``) from the command's valid
sample and asserts the contract of :func:`tests.input.harness.rejected`: exit 2, one line on stderr
naming the field (or the document), nothing on stdout, nothing written, done within the hang bound.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLES
from tests.input.harness import rejected, run, write_document

# Rows of replica streams are the user's data (any fields, any values); a punctuation may be a string.
FREE_FORM = ("reference", "row", "punctuation")


# a timeline parameters document (`simulate --params`) has no sample file: this one sets every kind of field
INLINE = {"timeline-params.json": {"detection_s": 5, "restore_s": 2, "restore_s_per_task": {"O1[0]": 3},
                                   "checkpoint_interval_s": 4, "case": "max", "utilisation": 0.6, "capacity": 0.5,
                                   "arrivals": [{"size": 1, "at_s": 30}], "node_cap": 0.7, "task_cost": 0.2,
                                   "cost": {"O1[0]": 0.3}, "priority": {"O4[0]": 2}, "max_points": 20}}


def _sample(name: str):
    import yaml

    if name in INLINE:
        return copy.deepcopy(INLINE[name])
    text = (SAMPLES / name).read_text()
    return yaml.safe_load(text) if name.endswith(".yaml") else json.loads(text)


# command -> (sample document, what the messages call it, argv around the document's path)
COMMANDS = {
    "topology check": ("q2-incidents.json", "topology", lambda p: ["topology", "check", p]),
    "fidelity": ("fig2-join.json", "topology", lambda p: ["fidelity", p, "--failed", "O2[1]"]),
    "plan replication": ("q1-topk.json", "topology", lambda p: ["plan", "replication", p, "--budget", "2"]),
    "plan budget": ("q1-topk.json", "topology", lambda p: ["plan", "budget", p, "--max-budget", "2"]),
    "plan recovery": ("recovery-fig1.json", "recovery problem", lambda p: ["plan", "recovery", p, "--budget", "1"]),
    "plan recovery (topology form)": ("recovery-fig1-topology.json", "recovery problem",
                                      lambda p: ["plan", "recovery", p, "--budget", "2", "--algorithm", "exact"]),
    "plan stages": ("recovery-fig1.json", "recovery problem",
                    lambda p: ["plan", "stages", p, "--capacity", "0", "--arrivals", "1,1"]),
    "plan checkpoint": ("profiles-example.json", "profiles", lambda p: ["plan", "checkpoint", p, "--max-recovery-s", "150"]),
    "plan placement": ("placement-nodes.yaml", "placement", lambda p: ["plan", "placement", p, "--k-min", "1"]),
    "plan redundancy --model": ("redundancy-model.yaml", "redundancy model", lambda p: ["plan", "redundancy", "--model", p]),
    "plan redundancy --trace": ("latency-trace.yaml", "latency trace", lambda p: ["plan", "redundancy", "--trace", p]),
    "simulate": ("q2-incidents.json", "topology", lambda p: ["simulate", p, "--fail", "O1[0],O2[1]", "--arrivals", "1@60"]),
    "simulate --params": ("timeline-params.json", "--params",
                          lambda p: ["simulate", f"{SAMPLES}/q2-incidents.json", "--fail", "O1[0]", "--params", p]),
    "transparency check": ("replica-streams.yaml", "replica streams", lambda p: ["transparency", "check", p]),
    "faults validate": ("fault-profile.yaml", "fault profile", lambda p: ["faults", "validate", p]),
    "faults schedule": ("fault-profile.yaml", "fault profile",
                        lambda p: ["faults", "schedule", p, "--duration", "600", "--seed", "1"]),
}
NAMES = sorted(COMMANDS)
# documents a command reads only in part (a plan's tasks, a placement of tasks in domains): whole-document attacks
PARTIAL = {
    "simulate --plan": ("fig2-join.json", "--plan", lambda p: ["simulate", f"{SAMPLES}/fig2-join.json", "--fail", "O2[1]",
                                                              "--plan", p]),
    "simulate --domains": ("fig2-join.json", "--domains", lambda p: ["simulate", f"{SAMPLES}/fig2-join.json",
                                                                      "--fail-domain", "rack-a", "--domains", p]),
    "plan redundancy --state-file": ("latency-trace.yaml", "controller", lambda p: ["plan", "redundancy", "--trace",
                                                                                   f"{SAMPLES}/latency-trace.yaml",
                                                                                   "--state-file", p]),
}
WHOLE = {**COMMANDS, **PARTIAL}

# Values that are never right where the document wants a number: (value, literal text or None).
WRONG_NUMBERS = [("x", None), ([1], None), ({"n": 1}, None), ("@nan", "NaN"), ("@inf", "Infinity"),
                 ("@-inf", "-Infinity"), ("@huge", "1e400"), ("@digits", "9" * 5000)]
YAML_LITERALS = {"NaN": ".nan", "Infinity": ".inf", "-Infinity": "-.inf", "1e400": "1.0e+400"}

SETTINGS = dict(derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile-documents")


def _numeric_leaves(doc, path=()) -> list[tuple]:
    if isinstance(doc, dict):
        items = doc.items()
    elif isinstance(doc, list):
        items = enumerate(doc)
    else:
        return [path] if isinstance(doc, (int, float)) and not isinstance(doc, bool) else []
    return [leaf for key, value in items if key not in FREE_FORM for leaf in _numeric_leaves(value, (*path, key))]


def _objects(doc, path=()) -> list[tuple]:
    """Paths of the objects where every key is checked (rows excluded)."""
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in _objects(v, (*path, i))]
    if not isinstance(doc, dict):
        return []
    return [path] + [p for k, v in doc.items() if k not in FREE_FORM for p in _objects(v, (*path, k))]


def _set(doc, path, value):
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


def _needle(path: tuple) -> str:
    """What the message must contain: the field's last two path components (documents nested in another,
    like a recovery problem's topology, name the path inside the inner document)."""
    return ".".join(str(p) for p in path[-2:])


def test_every_sample_command_succeeds(work):
    """The baseline the mutations start from: each command accepts its sample."""
    for name in NAMES:
        sample, _, argv = COMMANDS[name]
        path = write_document(work, f"ok-{sample}", _sample(sample))
        res = run(argv(path), work)
        assert res.code == 0, (name, res.err)


@settings(max_examples=60, **SETTINGS)
@given(data=st.data(), name=st.sampled_from(NAMES), syntax=st.sampled_from(["json", "yaml"]))
def test_a_wrong_kind_of_number_is_refused_naming_the_field(work, data, name, syntax):
    sample, what, argv = COMMANDS[name]
    doc = _sample(sample)
    path = data.draw(st.sampled_from(_numeric_leaves(doc)), label="field")
    value, literal = data.draw(st.sampled_from(WRONG_NUMBERS), label="value")
    if literal is not None and syntax == "yaml":
        literal = YAML_LITERALS.get(literal, literal)
    file = write_document(work, f"doc.{syntax}", _set(doc, path, value), raw={value: literal} if literal else None)
    if literal is None or (syntax == "yaml" and literal != "9" * 5000):
        needle = _needle(path)  # the value parsed: validation names the field
    else:
        needle = f"is not valid {syntax.upper()}"  # refused by the parser, which names the document and line
    rejected(argv(file), work, needle)


@settings(max_examples=40, **SETTINGS)
@given(data=st.data(), name=st.sampled_from(NAMES))
def test_an_unknown_field_is_refused_naming_it(work, data, name):
    sample, _, argv = COMMANDS[name]
    doc = _sample(sample)
    where = data.draw(st.sampled_from(_objects(doc)), label="object")
    value = data.draw(st.sampled_from([1, "x", None, [], {"zz": 1}]), label="value")
    mutated = copy.deepcopy(doc)
    node = mutated
    for key in where:
        node = node[key]
    node["zz_unknown"] = value
    rejected(argv(write_document(work, Path(sample).name, mutated)), work, "zz_unknown")


# Semantic violations: values of the right type that no real job has, with the field and the words expected.
NONSENSE = {
    "topology check": [(("operators", 0, "parallelism"), v, "parallelism") for v in (0, -1, 1.5, 10**7, 10**18, True)]
    + [(("tasks", "O1[0]", "rate"), -1, "O1[0].rate"), (("operators", 0, "input_model"), "both", "input_model")],
    "plan recovery": [(("queries", "Q1", "priority"), -2, "Q1.priority"), (("cost", "p3"), -0.5, "cost.p3"),
                      (("queries", "Q1", "partitions"), [], "Q1.partitions")],
    "plan checkpoint": [(("profiles", 0, "checkpoint_interval_ms"), v, "checkpoint_interval_ms") for v in (0, -1000, 1e18)]
    + [(("profiles", 1, "repetitions", 0, "avg_latency_ms"), 1e300, "avg_latency_ms"),
       (("detection_timeout_s", ), 1e12, "detection_timeout_s")],
    "plan placement": [(("nodes", 1, "capacity"), -1, "capacity"), (("tasks", 0, "demand"), -2, "demand"),
                       (("headroom",), 0, "headroom")],
    "plan redundancy --model": [(("source", "period_ms"), 1e-300, "detectFaces"), (("source", "parallelism"), 10**9, "parallelism"),
                                (("modes", "normal", "detectFaces"), 0, "detectFaces")],
    "plan redundancy --trace": [(("controller", "latency_bound_ms"), v, "latency_bound_ms") for v in (0, -5, 1e300)]
    + [(("metric_ms", 2), -1, "metric_ms.2"), (("controller", "gain_inc"), 1e308, "gain_inc")],
    "faults schedule": [(("operators", "aggregate", "slowdown", "every_s", "mean"), v, "mean") for v in (1e-300, 0, 5e-324)]
    + [(("operators", "aggregate", "slowdown", "magnitude_ms", "mean"), 1e300, "magnitude_ms"),
       (("operators", "parse", "crash", "rate_per_hour"), 1e12, "rate_per_hour"),
       (("domains", "rack-a", "at_s", 0), -1, "at_s.0"), (("operators", "aggregate", "instances", 0), 10**12, "instances.0")],
    "transparency check": [(("replicas", "u2,1", 0, "at"), -1, "at"), (("replicas", "u2,1", 0, "at"), 1e300, "at")],
}


@settings(max_examples=40, **SETTINGS)
@given(data=st.data(), name=st.sampled_from(sorted(NONSENSE)))
def test_nonsense_values_are_refused_naming_the_field(work, data, name):
    sample, _, argv = COMMANDS[name]
    path, value, needle = data.draw(st.sampled_from(NONSENSE[name]), label="violation")
    rejected(argv(write_document(work, Path(sample).name, _set(_sample(sample), path, value))), work, needle)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(max_size=8), lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=6), inner, min_size=1, max_size=4), max_leaves=12)


@settings(max_examples=40, **SETTINGS)
@given(name=st.sampled_from(sorted(WHOLE)), doc=_JSON.filter(lambda d: d != {}), syntax=st.sampled_from(["json", "yaml"]))
def test_arbitrary_json_values_are_refused(work, name, doc, syntax):
    _, what, argv = WHOLE[name]
    res = rejected(argv(write_document(work, f"any.{syntax}", doc)), work, "")
    assert what in res.err or "field" in res.err, res.err


def _garbage(draw_bytes: bytes, kind: str, sample_text: str) -> tuple[bytes, str]:
    """Bytes no document reader may choke on, and the words the refusal must contain."""
    if kind == "random":
        return draw_bytes, ""
    if kind == "utf-16 without a byte order mark":
        return sample_text.encode("utf-16-le"), "NUL byte at offset"
    if kind == "latin-1":
        return ("\n\n\né" + sample_text).encode("latin-1", errors="replace"), "not UTF-8 text: byte 0xe9 at offset 3"
    if kind == "cut inside a character":
        data = ("é" * 40).encode()
        return data[:-1], "not UTF-8 text"
    if kind == "deep json":
        n = 65 + len(draw_bytes) * 97
        return ("[" * n + "]" * n).encode(), "nested deeper than the limit of 64 levels"
    if kind == "deep yaml":
        n = 65 + len(draw_bytes) * 41
        return ("- " * n + "1\n").encode(), "nested deeper"
    if kind == "yaml alias bomb":
        lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
        lines += [f'{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},'
                  f'*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]' for i in range(8)]
        return "\n".join(lines).encode(), "more values than the limit"
    if kind == "yaml alias inside itself":
        return b"a: &a [*a]\n", "nested deeper"
    raise AssertionError(kind)


GARBAGE = ["random", "utf-16 without a byte order mark", "latin-1", "cut inside a character", "deep json", "deep yaml",
           "yaml alias bomb", "yaml alias inside itself"]


@settings(max_examples=60, **SETTINGS)
@given(name=st.sampled_from(sorted(WHOLE)), kind=st.sampled_from(GARBAGE), noise=st.binary(min_size=1, max_size=64))
def test_unreadable_bytes_are_refused_with_the_problem_and_offset(work, name, kind, noise):
    sample, what, argv = WHOLE[name]
    data, needle = _garbage(noise, kind, json.dumps(_sample(sample)))
    suffix = ".yaml" if "yaml" in kind else ".json" if "json" in kind else Path(sample).suffix
    path = work / f"garbage{suffix}"
    path.write_bytes(data)
    res = rejected(argv(path), work, needle)
    assert what in res.err, res.err


@pytest.mark.parametrize("name", NAMES)
def test_utf16_and_utf8_with_a_byte_order_mark_read_like_utf8(work, name):
    """Exports from spreadsheets and PowerShell carry a byte order mark; the mark names the encoding."""
    sample, _, argv = COMMANDS[name]
    text = json.dumps(_sample(sample)) if sample in INLINE else (SAMPLES / sample).read_text()
    plain = run(argv(write_document(work, sample, _sample(sample))), work)
    for encoding in ("utf-16", "utf-8-sig", "utf-32"):
        path = work / f"bom-{encoding}{Path(sample).suffix}"
        path.write_bytes(text.encode(encoding))
        res = run(argv(path), work)
        assert (res.code, res.err) == (plain.code, plain.err) and res.code == 0, res.err
