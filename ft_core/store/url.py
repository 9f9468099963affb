"""Which history store the CLI talks to: ``FTOPS_DATABASE_URL``, else the embedded server."""

from __future__ import annotations

import os
from pathlib import Path

from ft_core.errors import InputError
from ft_core.home import state_path
from ft_core.store.embedded import EmbeddedPostgres

ENV_VAR = "FTOPS_DATABASE_URL"
# The embedded server's folder as a flag default (``ft_core.home.path_flag`` resolves it when a command runs).
DEFAULT_EMBEDDED_DIR = "$FTOPS_HOME/postgres"


def database_url(embedded_dir: Path | None = None) -> str:
    """``FTOPS_DATABASE_URL``, else the URL of the embedded server (default ``$FTOPS_HOME/postgres``) if it runs."""
    url = os.environ.get(ENV_VAR)
    if url:
        return url
    server = EmbeddedPostgres(embedded_dir or state_path("postgres"))
    if server.running():
        return server.url()
    raise InputError(f"no database: set {ENV_VAR} or start the embedded server with `ftops db start`")
