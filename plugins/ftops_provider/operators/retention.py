"""Keep the history store's size bounded (:mod:`ft_core.store.retention`): ``ftops_safety_net``'s ``prune_history``
task at the start of every run, what ``ftops db prune`` does by hand."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from ft_core.errors import InputError
from ftops_provider.hooks.history import HistoryStoreHook


class PruneHistoryOperator(BaseOperator):
    """Delete the stream progress rows and rates profiles past their retention (``FTOPS_RETENTION`` in the task's
    environment: ``progress=DAYS,profiles=DAYS``, default 7 and 30); returns the counts deleted."""

    ui_color = "#f1f3f4"

    def __init__(self, *, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from ft_core.store.retention import Retention

        try:
            retention = Retention.from_env()
        except InputError as exc:  # a setting, not a blip: no retry
            raise AirflowFailException(str(exc)) from None
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            pruned = store.prune(retention)
        finally:
            store.conn.close()
        self.log.info("%s", pruned.summary())
        return pruned.model_dump(mode="json")
