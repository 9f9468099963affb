"""Airflow DAG ftops_fleet_watch: defined in the installed ftops package (ftops_provider.dags.ftops_fleet_watch).

Written by `ftops dags install`; the DAG's code is upgraded with the package, not here.
"""

from ftops_provider.dags.ftops_fleet_watch import dag  # noqa: F401 - Airflow finds the DAG object at module level
