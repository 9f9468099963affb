"""The input layer's own rules (ft_core.input): what each step refuses, and what it must not."""

from __future__ import annotations

import json

import pytest

from ft_core.errors import InputError
from ft_core.input.documents import read_document, read_json_lines
from ft_core.input.limits import current_limits
from ft_core.input.quantities import PositiveSeconds, TaskCount, check, param_schema


def _write(tmp_path, name: str, data: str | bytes):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@pytest.mark.parametrize("data, message", [
    (b'{"name": "caf\xe9"}', "not UTF-8 text: byte 0xe9 at offset 13 (invalid continuation byte)"),
    (b'{"a": 1}\x00', "not text: a NUL byte at offset 8"),
    (b'\xff\xfe{\x00"', "not UTF-16 text: byte 0x22 at offset 4 (truncated data)"),
    (b'{"a": NaN}', "NaN is not a number JSON allows (finite numbers only)"),
    (b'{"a": -Infinity}', "-Infinity is not a number JSON allows"),
    (b'{"a": 1e400}', "number 1e400 is out of range (finite numbers only)"),
    (b'{"a": ' + b"7" * 5000 + b"}", "is not valid JSON: Exceeds the limit (4300 digits)"),
])
def test_unreadable_json_is_refused_naming_the_problem(tmp_path, data, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")) as refused:
        read_document(_write(tmp_path, "doc.json", data), "topology")
    assert refused.value.field == "topology"


@pytest.mark.parametrize("text, message", [
    ("a: 2024-02-30\n", "is not valid YAML: day is out of range for month"),
    ("a: 2024-02-03\n", "topology field a: a YAML date (datetime.date(2024, 2, 3)) is not a JSON value; quote it"),
    ("a: !!set {x, y}\n", "topology field a: a YAML set"),
    ("a: !!binary aGk=\n", "topology field a: YAML binary data"),
    ("on: 1\n", "key True is not a string; quote it (YAML reads yes/no/on/off as booleans"),
    ("a: .nan\n", "topology field a: nan is not a finite number"),
    ("a: [1, .inf]\n", "topology field a.1: inf is not a finite number"),
    ("a: !!python/object:os.system x\n", "could not determine a constructor"),
])
def test_yaml_that_is_not_json_is_refused_with_advice(tmp_path, text, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        read_document(_write(tmp_path, "doc.yaml", text), "topology")


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path):
    doc = {"name": "[" * 5000 + "{" * 5000, "nested": [[[1]]]}
    assert read_document(_write(tmp_path, "doc.json", json.dumps(doc)), "topology") == doc


def test_the_nesting_limit_is_exact_and_configurable(tmp_path, monkeypatch):
    at_limit = _write(tmp_path, "deep.json", "[" * 64 + "]" * 64)
    assert json.dumps(read_document(at_limit, "topology")).replace(" ", "") == "[" * 64 + "]" * 64
    with pytest.raises(InputError, match="nested deeper than the limit of 64 levels"):
        read_document(_write(tmp_path, "deeper.json", "[" * 65 + "]" * 65), "topology")
    with pytest.raises(InputError, match="nested deeper than the limit of 64 levels at line 2"):
        read_document(_write(tmp_path, "deeper.yaml", "a:\n  " + "[" * 64 + "]" * 64), "topology")
    monkeypatch.setenv("FTOPS_MAX_DEPTH", "200")
    assert read_document(_write(tmp_path, "deeper.json", "[" * 65 + "]" * 65), "topology")


def test_size_and_element_limits(tmp_path, monkeypatch):
    big = _write(tmp_path, "big.json", json.dumps(list(range(1000))))
    monkeypatch.setenv("FTOPS_MAX_DOCUMENT_BYTES", "1000")
    with pytest.raises(InputError, match="too large: it exceeds the limit of 1000 bytes .*FTOPS_MAX_DOCUMENT_BYTES"):
        read_document(big, "topology")
    monkeypatch.setenv("FTOPS_MAX_DOCUMENT_BYTES", "100000")
    monkeypatch.setenv("FTOPS_MAX_ELEMENTS", "999")
    with pytest.raises(InputError, match="more values than the limit of 999"):
        read_document(big, "topology")
    monkeypatch.setenv("FTOPS_MAX_ELEMENTS", "1000")
    assert len(read_document(big, "topology")) == 1000


def test_files_that_are_not_documents(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="is a directory, not a document"):
        read_document(tmp_path, "topology")
    with pytest.raises(InputError, match="does not exist"):
        read_document(tmp_path / "missing.yaml", "topology")
    monkeypatch.setenv("FTOPS_MAX_DOCUMENT_BYTES", "4096")
    with pytest.raises(InputError, match="too large"):  # an endless device is read only up to the limit
        read_document("/dev/zero", "topology")


def test_json_lines_name_the_line(tmp_path):
    path = _write(tmp_path, "m.jsonl", '{"a": 1}\n\n{"a": NaN}\n')
    with pytest.raises(InputError, match="m.jsonl' line 3 is not valid JSON: NaN"):
        read_json_lines(path, "--rates-from")
    assert read_json_lines(_write(tmp_path, "ok.jsonl", '{"a": 1}\n\n[2]\n'), "x") == [{"a": 1}, [2]]


def test_quantities_share_rules_flags_and_schemas(monkeypatch):
    assert check(TaskCount, "12", "--p") == 12
    with pytest.raises(InputError, match="--p: exceeds the limit of 100000 tasks"):
        check(TaskCount, 10**7, "--p")
    monkeypatch.setenv("FTOPS_MAX_TASKS", "20000000")
    assert check(TaskCount, 10**7, "--p") == 10**7
    assert param_schema(TaskCount) == {"type": "integer", "minimum": 1, "maximum": 20000000}
    assert param_schema(PositiveSeconds) == {"type": "number", "exclusiveMinimum": 0, "maximum": 2592000}
    monkeypatch.setenv("FTOPS_MAX_TASKS", "-3")
    with pytest.raises(InputError, match="FTOPS_MAX_TASKS: Input should be greater than 0"):
        current_limits()
