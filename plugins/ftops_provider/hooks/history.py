"""HistoryStoreHook: the ftops history store through an Airflow connection (``ftops_db``, type postgres).

It is the Postgres provider's hook, so a connection is read as every other Postgres connection is: host,
port, login, password, schema (the database; default ``ftops``) and extras (``sslmode``, ``sslrootcert``,
``options``, IAM tokens, ...). Only the driver differs: the store speaks psycopg2 (transactions as
``with conn:`` blocks, which psycopg 3 would end by closing the connection), so the connection the
provider assembled is opened with psycopg2 whichever driver the provider would pick. A connection without
a host is refused with its name: the store never guesses that PostgreSQL is on this machine.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.postgres.hooks.postgres import PostgresHook

from ft_core.errors import InputError
from ft_core.store.connection import connect_params
from ft_core.store.history import HistoryStore
from ft_core.store.migrations import upgrade

# Cursor settings of the provider's ``cursor`` extra: the store uses plain cursors.
_CURSOR_ARGS = ("cursor_factory", "row_factory")


class HistoryStoreHook(PostgresHook):
    conn_name_attr = "ftops_db_conn_id"
    default_conn_name = "ftops_db"
    conn_type = "postgres"
    hook_name = "ftops history store"

    def __init__(self, ftops_db_conn_id: str = default_conn_name, **kwargs: Any):
        super().__init__(ftops_db_conn_id=ftops_db_conn_id, **kwargs)

    def get_conn(self):
        """A psycopg2 connection to the store, from the Airflow connection (InputError when it has no host)."""
        conn = self.connection
        if not conn.host:
            raise InputError(f"Airflow connection {self.ftops_db_conn_id!r} has no host: set the history store's "
                             "PostgreSQL host (and port, login, password; schema is the database, default ftops)",
                             field=self.ftops_db_conn_id)
        if self.database is None and not conn.schema:
            self.database = "ftops"
        return super().get_conn()

    def _create_connection(self, conn_args: dict[str, Any]):
        """Open the provider's assembled arguments with psycopg2 (see the module docstring); for :meth:`dsn`,
        return them instead."""
        params = {k: v for k, v in conn_args.items() if v is not None and k not in _CURSOR_ARGS}
        return params if self._params_only else connect_params(params)

    _params_only = False

    def dsn(self) -> str:
        """The store as a libpq connection string, assembled as :meth:`get_conn` assembles it (extras such as
        ``sslmode`` kept), for a process that connects by itself: the streaming drivers ftops submits get it as
        ``FTOPS_DATABASE_URL`` in their environment. It holds the password: never log it (an IAM token in it
        expires with the token, so such a driver writes no progress after that)."""
        from psycopg2.extensions import make_dsn

        self._params_only = True
        try:
            params = self.get_conn()
        finally:
            self._params_only, self.conn = False, None
        return make_dsn(**{k: str(v) for k, v in params.items()})

    def store(self) -> HistoryStore:
        """A store on a new connection; close it with ``store.conn.close()``."""
        return HistoryStore(self.get_conn())

    def upgrade(self) -> list[int]:
        conn = self.get_conn()
        try:
            return upgrade(conn)
        finally:
            conn.close()
