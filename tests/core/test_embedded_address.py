"""The embedded server's address comes from configuration (``FTOPS_DB_HOST``, loopback by default) and is recorded
with its port, so its URL names where it listens; a scratch store (the benchmarks') is removed afterwards."""

from __future__ import annotations

import shutil

from ft_core.store.embedded import EmbeddedPostgres, listen_host, scratch_store
from tests.conftest import ROOT, test_port


def test_the_address_is_configured_recorded_and_the_scratch_store_removed(monkeypatch):
    monkeypatch.delenv("FTOPS_DB_HOST", raising=False)
    assert listen_host() == "127.0.0.1"
    monkeypatch.setenv("FTOPS_DB_HOST", "127.0.0.2")  # another loopback address: served by lo, no setup
    state = ROOT / ".state" / f"test-embedded-address-{test_port(16900)}"
    with scratch_store(state, test_port(16900)) as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT inet_server_addr()::text")
            assert cur.fetchone()[0].startswith("127.0.0.2")
        monkeypatch.delenv("FTOPS_DB_HOST")  # a reader configured otherwise still finds it where it listens
        assert "@127.0.0.2:" in EmbeddedPostgres(state).url()
    assert not state.exists()


def test_a_port_something_else_listens_on_is_refused_naming_it_before_anything_is_written():
    """pg_ctl alone says "Examine the log output" (seen: `make demo` beside another project's server on 5433)."""
    import socket

    import pytest

    from ft_core.errors import InputError

    port = test_port(16901)
    state = ROOT / ".state" / f"test-embedded-taken-{port}"
    shutil.rmtree(state, ignore_errors=True)  # a run of older code may have initialised it
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", port))
        taken.listen()
        with pytest.raises(InputError, match=rf"port {port} on 127.0.0.1 is in use, so PostgreSQL cannot start there"):
            EmbeddedPostgres(state, port, host="127.0.0.1").start()
    assert not state.exists()
