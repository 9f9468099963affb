"""Which history store the CLI talks to: ``FTOPS_DATABASE_URL``, else the embedded server."""

from __future__ import annotations

import os
from pathlib import Path

from ft_core.errors import InputError
from ft_core.store.embedded import EmbeddedPostgres

ENV_VAR = "FTOPS_DATABASE_URL"
DEFAULT_EMBEDDED_DIR = Path(".state/postgres")


def database_url(embedded_dir: Path = DEFAULT_EMBEDDED_DIR) -> str:
    """``FTOPS_DATABASE_URL``, else the URL of the project's embedded server if it is running."""
    url = os.environ.get(ENV_VAR)
    if url:
        return url
    server = EmbeddedPostgres(embedded_dir)
    if server.running():
        return server.url()
    raise InputError(f"no database: set {ENV_VAR} or start the embedded server with `ftops db start`")
