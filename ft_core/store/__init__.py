"""The history store: every topology version, profile, plan, drill and recovery run in PostgreSQL.

- :mod:`ft_core.store.migrations` applies ``sql/NNN_*.sql`` idempotently, under an advisory lock,
  recording each version in ``ftops_schema_version``.
- :mod:`ft_core.store.history` (:class:`~ft_core.store.history.HistoryStore`) writes and reads the
  history transactionally: jobs, topologies, profiles, plans and applied plans there, drills in
  :mod:`ft_core.store.drills`, recovery runs in :mod:`ft_core.store.recovery_runs`, the shared
  transaction steps in :mod:`ft_core.store.base` and the validated records in :mod:`ft_core.store.records`.
- :mod:`ft_core.store.embedded` runs a private PostgreSQL server for machines that have none
  configured (the README's demo needs no manual database step); :mod:`ft_core.store.url` says
  which store the CLI talks to.

Connections come from ``FTOPS_DATABASE_URL`` (CLI) or an Airflow connection (DAGs); credentials
are never printed: :func:`ft_core.store.connection.redact` masks them in every message.
"""
