"""Schema migrations: ``ft_core/store/sql/NNN_name.sql`` (package data, so an installed wheel has them)
applied in order, once each, under an advisory lock.

Idempotent and safe when two processes upgrade at once (the second waits for the lock, then finds
nothing to do). Each file runs in the transaction that records its version.
"""

from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path

from ft_core.errors import InputError

# pg_advisory_xact_lock key for migrations: any fixed 64-bit number unique to ftops.
MIGRATION_LOCK = 0x6674_6F70_7300_0001
_FILE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


def sql_dir() -> Path:
    custom = os.environ.get("FTOPS_SQL_DIR")
    path = Path(custom) if custom else Path(str(resources.files("ft_core.store") / "sql"))  # package data
    if not path.is_dir():
        raise InputError(f"migrations folder {path} does not exist (set FTOPS_SQL_DIR)")
    return path


def migrations(path: Path | None = None) -> list[tuple[int, str, Path]]:
    found = []
    for f in sorted((path or sql_dir()).glob("*.sql")):
        m = _FILE.match(f.name)
        if m is None:
            raise InputError(f"migration file {f.name!r}: expected NNN_name.sql")
        found.append((int(m[1]), m[2], f))
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise InputError(f"migrations in {path or sql_dir()} must be numbered 001, 002, ... without gaps: {versions}")
    return found


def upgrade(conn) -> list[int]:
    """Apply every pending migration; returns the versions applied now."""
    applied_now = []
    with conn:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            cur.execute("CREATE TABLE IF NOT EXISTS ftops_schema_version ("
                        " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
            cur.execute("SELECT coalesce(max(version), 0) FROM ftops_schema_version")
            current = cur.fetchone()[0]
            for version, name, path in migrations():
                if version > current:
                    cur.execute(path.read_text())
                    cur.execute("INSERT INTO ftops_schema_version (version, name) VALUES (%s, %s)", (version, name))
                    applied_now.append(version)
    return applied_now


def current_version(conn) -> int:
    with conn, conn.cursor() as cur:
        cur.execute("SELECT to_regclass('ftops_schema_version') IS NOT NULL")
        if not cur.fetchone()[0]:
            return 0
        cur.execute("SELECT coalesce(max(version), 0) FROM ftops_schema_version")
        return cur.fetchone()[0]
