"""Airflow DAG ftops_checkpoint_tuning: defined in the installed ftops package (ftops_provider.dags.ftops_checkpoint_tuning).

Written by `ftops dags install`; the DAG's code is upgraded with the package, not here.
"""

from ftops_provider.dags.ftops_checkpoint_tuning import dag  # noqa: F401 - Airflow finds the DAG object at module level
