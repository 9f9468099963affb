"""The embedded server's address comes from configuration (``FTOPS_DB_HOST``, loopback by default) and is recorded
with its port, so its URL names where it listens; a scratch store (the benchmarks') is removed afterwards."""

from __future__ import annotations

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
