"""Connecting to the history store; URLs and connection strings in messages always have their password masked."""

from __future__ import annotations

import re

from ft_core.errors import ExternalError


def redact(url: str) -> str:
    """A URL or a libpq key=value string with its password masked.

    >>> redact("postgresql://u:secret@h/db"), redact("host=h password='s e' dbname=db")
    ('postgresql://u:***@h/db', 'host=h password=*** dbname=db')
    """
    url = re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url)


def connect(url: str, **options):
    """A psycopg2 connection (autocommit off) to a URL or key=value string, with libpq ``options`` added (e.g.
    keepalives); errors name the server without its password."""
    return _open(redact(url), dsn=url, **options)


def connect_params(params: dict):
    """A psycopg2 connection from keyword parameters (host, port, dbname, user, password and any libpq
    option, such as an Airflow connection's ``sslmode`` extra); errors name host, port and database."""
    where = f"{params.get('host')}:{params.get('port') or 5432}/{params.get('dbname') or ''}"
    return _open(where, **params)


def _open(where: str, **params):
    import psycopg2

    try:
        return psycopg2.connect(**{"connect_timeout": 10, **params})
    except psycopg2.OperationalError as exc:
        raise ExternalError(f"cannot connect to the history store at {where}: {reason(exc, 'connection refused')}") from None


def reason(exc: Exception, default: str | None = None) -> str:
    """A database error in one line, its password masked (``default``, else the error's type, when it is empty)."""
    text = str(exc).strip().splitlines()
    return redact(text[0]) if text else (default or type(exc).__name__)
