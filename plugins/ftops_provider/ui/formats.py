"""How the console writes values in its pages: the templates' filters (``ui/templates``), one place for each format.

    >>> secs(12.345), num(None), miss(10.0, 12.0), short("x" * 90)[-3:]
    ('12.3 s', '-', '+20%', 'xx…')
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote


def when(t: datetime | None) -> str:
    """A moment to the second in UTC."""
    return "-" if t is None else f"{t.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


def minute(t: datetime) -> str:
    """A moment to the minute in UTC."""
    return f"{t.astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC"


def clock(epoch_s: float) -> str:
    """An epoch second as a time of day in UTC (``HH:MM:SS``)."""
    return f"{datetime.fromtimestamp(epoch_s, tz=timezone.utc):%H:%M:%S}"


def num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} s"


def integer(v: int | None) -> str:
    return "-" if v is None else str(v)


def short(v: Any, limit: int = 80) -> str:
    text = str(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def miss(predicted: float | None, measured: float | None) -> str:
    """Measured against predicted, as a signed percentage."""
    if predicted is None or measured is None or predicted <= 0:
        return "-"
    return f"{(measured - predicted) / predicted:+.0%}"


def path_part(name: str) -> str:
    """A name as one segment of a URL path (``/`` quoted too)."""
    return quote(name, safe="")


def value(v: Any) -> str:
    """A measurement: floats to four places."""
    if isinstance(v, float):
        return f"{v:.4f}"
    return "-" if v is None else str(v)


def param_text(value: Any) -> str:
    """A DAG Param's value as a form shows and sends it back: whole floats without ".0", others exactly (``repr``).

    >>> param_text(600.0), param_text(1234567.0), param_text(0.02), param_text(True)
    ('600', '1234567', '0.02', 'true')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


FILTERS = {f.__name__: f for f in (when, minute, clock, num, secs, integer, short, miss, path_part, value, param_text)}
