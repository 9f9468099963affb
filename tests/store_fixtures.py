"""A real PostgreSQL server for the store tests (the machine's binaries, a private port and folder)."""

from __future__ import annotations

import shutil

import pytest

from ft_core.store.connection import connect
from ft_core.store.embedded import EmbeddedPostgres
from tests.conftest import ROOT, test_port

TEST_PORT = test_port(16800)


@pytest.fixture(scope="session")
def pg_server():
    # Under the project (not /tmp): as root the server runs as `postgres`, which must reach the folder. Named by its
    # port: test runs moved apart by FTOPS_TEST_PORT_OFFSET (two checkouts, a second session) never share a server.
    state = ROOT / ".state" / f"test-postgres-{TEST_PORT}"
    server = EmbeddedPostgres(state, TEST_PORT)
    server.stop()
    shutil.rmtree(state, ignore_errors=True)
    server.start()
    yield server
    server.stop()
    shutil.rmtree(state, ignore_errors=True)


def fresh_connection(url: str):
    """A connection to the database at ``url``, emptied first (its schema dropped and made again)."""
    conn = connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    conn.autocommit = False
    return conn


@pytest.fixture
def pg_conn(pg_server):
    """A connection to a freshly emptied database (the schema dropped before each test)."""
    conn = fresh_connection(pg_server.url())
    yield conn
    conn.close()
