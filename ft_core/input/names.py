"""Names are identifiers: one rule for every job and failure-domain name ftops accepts (and an application
name that becomes a folder).

Why: a name reaches paths (a runnable job's outputs default to ``<input>/../<name>``), Spark application
names, HTML pages, SQL rows and Airflow run confs. Free text there lets a name place files anywhere
(``../../etc/evil``), break a page (``<img src=x onerror=...>``) or hide in a listing (a single space).
So a name is 1 to 63 characters of ASCII letters, digits, ``-``, ``_`` and ``.``, starting with a letter
or a digit (which also rules out ``.``, ``..`` and a leading ``-`` an option parser would read as a flag):
a path component, a URL segment, HTML text and a Spark application name as it is, no longer than a DNS
label. A query is not named here: its
id is its output task (``O3[0]``, paper 003), a topology id, which the topology document's rules cover.

The same rule is checked at every entrance, before any other work: the CLI (:func:`name_flag` as an
argparse ``type=``), DAG Params and UI forms (:data:`NAME_PATTERN` as their JSON-schema ``pattern``),
pydantic documents (:data:`Name`) and the history store (a ``CHECK`` on ``ftops_job.name``, for rows written
from then on).

    >>> check_name("alerts-eu.v2", "job name")
    'alerts-eu.v2'
    >>> check_name("../../etc/evil", "job name", field="--name")
    Traceback (most recent call last):
    ...
    ft_core.errors.InputError: --name: job name '../../etc/evil' is not an identifier: use 1-63 letters, digits, '-', '_' or '.', starting with a letter or digit
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from ft_core.errors import InputError

MAX_NAME_LENGTH = 63
# Python's ``$`` also matches before a final newline, and JSON-schema validation (a DAG Param's) runs
# ``re.search``: the lookahead refuses ``"topk\n"`` there too; the trigger form's browser (ECMA-262) reads
# the pattern the same way.
NAME_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_NAME_LENGTH - 1}}}$(?!\n)"
_NAME = re.compile(NAME_PATTERN)
RULE = f"use 1-{MAX_NAME_LENGTH} letters, digits, '-', '_' or '.', starting with a letter or digit"


def is_name(value: object) -> bool:
    """Whether ``value`` is a string that follows the rule.

    >>> [is_name(v) for v in ("rack-a", "a/b", " ", "x" * 64, "", ".hidden", 7)]
    [True, False, False, False, False, False, False]
    """
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def check_name(value: object, what: str, field: str | None = None) -> str:
    """``value`` when it is a name, else InputError ``<field>: <what> ... is not an identifier: <rule>``.
    A long value is shortened in the message (it is someone's input, not ours to echo whole)."""
    if is_name(value):
        return value  # type: ignore[return-value]
    shown = repr(value) if not isinstance(value, str) or len(value) <= 80 else repr(value[:40] + "...") + f" ({len(value)} characters)"
    prefix = f"{field}: " if field else ""
    raise InputError(f"{prefix}{what} {shown} is not an identifier: {RULE}", field=field)


def name_flag(what: str):
    """An argparse ``type=`` that accepts only names (argparse reports the flag: ``--name: ...``)."""
    import argparse

    def parse(text: str) -> str:
        if not is_name(text):
            try:
                check_name(text, what)
            except InputError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
        return text

    parse.__name__ = what.replace(" ", "_")
    return parse


def named(what: str):
    """A pydantic field type holding a name, ``what`` saying which in the message.

    >>> from pydantic import TypeAdapter
    >>> TypeAdapter(named("job name")).validate_python("alerts")
    'alerts'
    """
    return Annotated[str, AfterValidator(lambda value: check_name(value, what))]


Name = named("name")  # a pydantic field holding a name
