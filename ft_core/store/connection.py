"""Connecting to the history store; URLs in messages always have their password masked."""

from __future__ import annotations

import re

from ft_core.errors import ExternalError


def redact(url: str) -> str:
    """``postgresql://u:secret@h/db`` -> ``postgresql://u:***@h/db``."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def connect(url: str):
    """A psycopg2 connection (autocommit off); errors name the server without its password."""
    import psycopg2

    try:
        return psycopg2.connect(url, connect_timeout=10)
    except psycopg2.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "connection refused"
        raise ExternalError(f"cannot connect to the history store at {redact(url)}: {redact(reason)}") from None
