"""Reading a JSON or YAML document, bounded: size, encoding, nesting, element count, JSON types.

Why: every document ftops reads (topologies, plans, profiles, fault profiles, placement and redundancy
models, traces, replica streams, timeline parameters, schedules) may come from another tool or a
hand edit. Before a planner sees it, it passes the same gate, and every failure is an
:class:`~ft_core.errors.InputError` naming the document and the problem:

1. at most ``FTOPS_MAX_DOCUMENT_BYTES`` bytes are read (a ``/dev/zero`` or a runaway export is
   refused, not loaded);
2. the bytes are decoded (:mod:`ft_core.input.decoding`: UTF-8, or UTF-16/32 with a byte order mark;
   otherwise the offset of the first bad byte);
3. nesting is bounded by ``FTOPS_MAX_DEPTH`` *before* parsing, since Python's JSON and YAML parsers
   recurse once per level (a few thousand ``[`` end in ``RecursionError``);
4. JSON is parsed without ``NaN``/``Infinity`` and numbers out of float range (finite numbers only);
   YAML with the safe loader;
5. the parsed value is walked once without recursion: at most ``FTOPS_MAX_ELEMENTS`` values (YAML
   aliases can expand a small file into billions), string keys only, and nothing but JSON types
   (a YAML date, set or binary is refused with advice to quote it).

Files named ``*.yaml``/``*.yml`` are YAML, everything else JSON.

Example::

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    ...     _ = f.write('{"a": [1, 2.5]}')
    >>> read_document(f.name, "topology")
    {'a': [1, 2.5]}
    >>> parse_text("[" * 100 + "]" * 100, "json", "topology")
    Traceback (most recent call last):
    ...
    ft_core.errors.InputError: topology: nested deeper than the limit of 64 levels (set FTOPS_MAX_DEPTH to raise it)
    >>> os.unlink(f.name)
"""

from __future__ import annotations

import datetime
import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from ft_core.errors import InputError
from ft_core.input.decoding import decode_text
from ft_core.input.limits import LIMITS, Limits, current_limits, exceeds

YAML_SUFFIXES = {".yaml", ".yml"}
# a JSON string (skipped whole, so brackets inside it do not count) or a bracket
_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_YAML_ADVICE = {datetime.date: "a YAML date", datetime.datetime: "a YAML timestamp", set: "a YAML set",
                bytes: "YAML binary data"}


def read_document(path: str | Path, what: str) -> Any:
    """Read, decode, bound and parse the JSON or YAML document at ``path`` (see the module docstring)."""
    path = Path(path)
    limits = current_limits()
    data = _read_bounded(path, what, limits)
    text = decode_text(data, f"{what} file {str(path)!r}", field=what)
    return parse_text(text, "yaml" if path.suffix.lower() in YAML_SUFFIXES else "json", what, limits,
                      label=f"{what} file {str(path)!r}")


def read_json_lines(path: str | Path, what: str) -> list[Any]:
    """A JSON-lines file (one document per line, blank lines skipped) through the same gate as
    :func:`read_document`; an error names the line."""
    path = Path(path)
    limits = current_limits()
    text = decode_text(_read_bounded(path, what, limits), f"{what} file {str(path)!r}", field=what)
    return [parse_text(line, "json", what, limits, label=f"{what} file {str(path)!r} line {number}")
            for number, line in enumerate(text.splitlines(), start=1) if line.strip()]


def parse_text(text: str, syntax: str, what: str, limits: Limits | None = None, label: str | None = None) -> Any:
    """Parse ``text`` as ``syntax`` (``json`` or ``yaml``) with steps 3-5 of the module docstring; messages
    start with ``label`` (default ``what``), the field of the error is ``what``."""
    limits = limits or current_limits()
    label = label or what
    if syntax == "json":
        _check_json_nesting(text, label, what, limits)
        value = _parse_json(text, label, what)
    else:
        value = _parse_yaml(text, label, what, limits)
    check_tree(value, what, limits)
    return value


def _read_bounded(path: Path, what: str, limits: Limits) -> bytes:
    try:
        with path.open("rb") as fh:
            data = fh.read(limits.max_document_bytes + 1)
    except FileNotFoundError:
        raise InputError(f"{what} file {str(path)!r} does not exist", field=what) from None
    except IsADirectoryError:
        raise InputError(f"{what} file {str(path)!r} is a directory, not a document", field=what) from None
    except OSError as exc:
        raise InputError(f"{what} file {str(path)!r} cannot be read: {exc.strerror or exc}", field=what) from None
    if len(data) > limits.max_document_bytes:
        raise InputError(f"{what} file {str(path)!r} is too large: it "
                         f"{exceeds('max_document_bytes', f'more than {limits.max_document_bytes}', limits)}", field=what)
    return data


def _too_deep(label: str, what: str, line: int | None, limits: Limits) -> InputError:
    env = LIMITS["max_depth"].env
    where = f" at line {line}" if line is not None else ""
    return InputError(f"{label}: nested deeper than the limit of {limits.max_depth} levels{where} "
                      f"(set {env} to raise it)", field=what)


def _too_many(what: str, limits: Limits) -> InputError:
    return InputError(f"{what}: more values than the limit of {limits.max_elements} (YAML aliases count once per "
                      f"use; set {LIMITS['max_elements'].env} to raise it)", field=what)


def _check_json_nesting(text: str, label: str, what: str, limits: Limits) -> None:
    if text.count("[") + text.count("{") <= limits.max_depth:
        return  # cannot nest deeper than it has brackets
    depth = 0
    for match in _JSON_NESTING.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limits.max_depth:
                line = text.count("\n", 0, match.start()) + 1 if "\n" in text else None  # JSON lines: the label says
                raise _too_deep(label, what, line, limits)
        elif token in "]}":
            depth -= 1


def _reject_constant(name: str) -> float:
    raise InputError(f"{name} is not a number JSON allows (finite numbers only)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputError(f"number {text} is out of range (finite numbers only)")
    return value


def _parse_json(text: str, label: str, what: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, ours, or an integer of over 4300 digits
        raise InputError(f"{label} is not valid JSON: {exc}", field=what) from None


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader with a nesting bound (the composer recurses once per collection level) and a bound
    on the values the document expands to, counted as it is composed: an alias counts its anchor's whole
    size at every use, so ten levels of ten aliases (10^10 values in a few hundred bytes) stop here."""

    max_depth = 64
    max_elements = 2_000_000

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) -> values it expands to (scalars: 1)

    def compose_sequence_node(self, anchor):
        return self._nested(super().compose_sequence_node, anchor)

    def compose_mapping_node(self, anchor):
        return self._nested(super().compose_mapping_node, anchor)

    def _nested(self, compose, anchor):
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                raise _YamlTooLarge(self.peek_event().start_mark.line + 1, "deep")
            node = compose(anchor)
        finally:
            self._depth -= 1
        children = node.value if isinstance(node, yaml.SequenceNode) else [n for pair in node.value for n in pair]
        size = 1 + sum(self._sizes.get(id(child), 1) for child in children)
        if size > self.max_elements:
            raise _YamlTooLarge(node.start_mark.line + 1, "many")
        self._sizes[id(node)] = size
        return node


class _YamlTooLarge(Exception):
    def __init__(self, line: int, how: str):
        super().__init__(line, how)
        self.line, self.how = line, how


def _parse_yaml(text: str, label: str, what: str, limits: Limits) -> Any:
    loader = _BoundedLoader(text)
    loader.max_depth, loader.max_elements = limits.max_depth, limits.max_elements
    try:
        return loader.get_single_data()
    except _YamlTooLarge as exc:
        if exc.how == "deep":
            raise _too_deep(label, what, exc.line, limits) from None
        raise _too_many(what, limits) from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        # ValueError: a date like 2024-02-30, an integer of over 4300 digits
        message = " ".join(str(exc).split())
        raise InputError(f"{label} is not valid YAML: {message}", field=what) from None
    finally:
        loader.dispose()


def check_tree(value: Any, what: str, limits: Limits | None = None) -> None:
    """Step 5 of the module docstring on a parsed value, without recursion."""
    limits = limits or current_limits()
    if not isinstance(value, (dict, list)):
        _check_scalar(value, (), what)
        return
    stack: list[tuple[Any, tuple]] = [(value, ())]
    seen = 0
    while stack:
        node, path = stack.pop()
        if len(path) >= limits.max_depth:  # only reachable through YAML aliases: the parsers bound the rest
            raise InputError(f"{what} field {_dotted(path)}: nested deeper than the limit of {limits.max_depth} levels "
                             f"(a YAML alias inside itself?; set {LIMITS['max_depth'].env} to raise it)", field=_dotted(path))
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in children:
            seen += 1
            if seen > limits.max_elements:
                raise _too_many(what, limits)
            if isinstance(node, dict) and not isinstance(key, str):
                raise InputError(f"{what} field {_dotted(path)}: key {key!r} is not a string; quote it "
                                 "(YAML reads yes/no/on/off as booleans and 1 as a number)", field=_dotted(path) or what)
            if isinstance(child, (dict, list)):
                stack.append((child, (*path, key)))
            else:
                _check_scalar(child, (*path, key), what)


def _check_scalar(value: Any, path: tuple, what: str) -> None:
    if value is None or isinstance(value, (str, bool, int)):
        return
    where = f"{what} field {_dotted(path)}" if path else what
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{where}: {value} is not a finite number", field=_dotted(path) or what)
        return
    kind = next((text for cls, text in _YAML_ADVICE.items() if isinstance(value, cls)), type(value).__name__)
    raise InputError(f"{where}: {kind} ({value!r:.40}) is not a JSON value; quote it to make it a string",
                     field=_dotted(path) or what)


def _dotted(path: tuple) -> str:
    return ".".join(str(part) for part in path)
