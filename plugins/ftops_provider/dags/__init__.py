"""The DAGs ftops ships, one module per DAG named after its dag id, each with its DAG object as ``dag``.

Airflow does not parse installed packages: ``ftops dags install --dags-folder DIR`` writes a thin file per
DAG into Airflow's dags folder (:mod:`ftops_provider.dag_files`; the repository's ``dags/`` holds the same).
"""
