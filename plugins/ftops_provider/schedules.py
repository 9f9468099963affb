"""The schedules of ftops's DAGs, and the switch that turns them off.

The drill and tuning DAGs run on schedules (``@weekly``, ``@hourly``); unpausing a scheduled DAG makes
Airflow start a run for its latest interval at once. Where that is not wanted, a demo or a staging
Airflow where every experiment is started by hand, ``FTOPS_SCHEDULES=manual`` in the environment of the
dag-processor makes every ftops DAG manual-only (``ftops stack`` sets it).

    >>> import os; os.environ.pop("FTOPS_SCHEDULES", None) and None
    >>> dag_schedule("@weekly")
    '@weekly'
    >>> os.environ["FTOPS_SCHEDULES"] = "manual"; dag_schedule("@weekly") is None
    True
"""

from __future__ import annotations

import os

ENV_VAR = "FTOPS_SCHEDULES"


def dag_schedule(default: str) -> str | None:
    """``default``, or None (manual runs only) when ``FTOPS_SCHEDULES=manual``."""
    return None if os.environ.get(ENV_VAR, "").strip().lower() == "manual" else default
