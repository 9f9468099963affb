"""The history store: every topology version, profile, plan, drill and recovery run in PostgreSQL.

- :mod:`ft_core.store.migrations` applies ``sql/NNN_*.sql`` idempotently, under an advisory lock,
  recording each version in ``ftops_schema_version``.
- :mod:`ft_core.store.history` writes and reads the history transactionally.
- :mod:`ft_core.store.embedded` runs a private PostgreSQL server for machines that have none
  configured (the README's demo needs no manual database step).

Connections come from ``FTOPS_DATABASE_URL`` (CLI) or an Airflow connection (DAGs); credentials
are never printed: :func:`ft_core.store.connection.redact` masks them in every message.
"""
