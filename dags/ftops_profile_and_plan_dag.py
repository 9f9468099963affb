"""Airflow DAG ftops_profile_and_plan: defined in the installed ftops package (ftops_provider.dags.ftops_profile_and_plan).

Written by `ftops dags install`; the DAG's code is upgraded with the package, not here.
"""

from ftops_provider.dags.ftops_profile_and_plan import dag  # noqa: F401 - Airflow finds the DAG object at module level
