"""Connecting to the history store; URLs in messages always have their password masked."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ft_core.errors import ExternalError, InputError

ENV_VAR = "FTOPS_DATABASE_URL"
DEFAULT_EMBEDDED_DIR = Path(".state/postgres")


def redact(url: str) -> str:
    """``postgresql://u:secret@h/db`` -> ``postgresql://u:***@h/db``."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def database_url(embedded_dir: Path = DEFAULT_EMBEDDED_DIR) -> str:
    """``FTOPS_DATABASE_URL``, else the URL of the project's embedded server if it is running."""
    url = os.environ.get(ENV_VAR)
    if url:
        return url
    from ft_core.store.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(embedded_dir)
    if server.running():
        return server.url()
    raise InputError(f"no database: set {ENV_VAR} or start the embedded server with `ftops db start`")


def connect(url: str):
    """A psycopg2 connection (autocommit off); errors name the server without its password."""
    import psycopg2

    try:
        return psycopg2.connect(url, connect_timeout=10)
    except psycopg2.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "connection refused"
        raise ExternalError(f"cannot connect to the history store at {redact(url)}: {redact(reason)}") from None
