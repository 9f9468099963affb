"""HistoryStoreHook: the ftops history store through an Airflow connection (``ftops_db``, type postgres).

The store speaks psycopg2 (transactions as ``with conn:`` blocks), so the hook opens a psycopg2
connection from the Airflow connection rather than PostgresHook's driver of the day.
"""

from __future__ import annotations

from urllib.parse import quote

from airflow.sdk import BaseHook

from ft_core.store.connection import connect
from ft_core.store.history import HistoryStore
from ft_core.store.migrations import upgrade


class HistoryStoreHook(BaseHook):
    conn_name_attr = "ftops_db_conn_id"
    default_conn_name = "ftops_db"
    conn_type = "postgres"
    hook_name = "ftops history store"

    def __init__(self, ftops_db_conn_id: str = default_conn_name):
        super().__init__()
        self.ftops_db_conn_id = ftops_db_conn_id

    def get_conn(self):
        c = self.get_connection(self.ftops_db_conn_id)
        user, password = quote(c.login or "", safe=""), quote(c.password or "", safe="")
        url = f"postgresql://{user}:{password}@{c.host or '127.0.0.1'}:{c.port or 5432}/{c.schema or 'ftops'}"
        return connect(url)

    def store(self) -> HistoryStore:
        """A store on a new connection; close it with ``store.conn.close()``."""
        return HistoryStore(self.get_conn())

    def upgrade(self) -> list[int]:
        conn = self.get_conn()
        try:
            return upgrade(conn)
        finally:
            conn.close()
