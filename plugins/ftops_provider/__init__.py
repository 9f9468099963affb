"""ftops for Apache Airflow: hooks to the Spark standalone master and the history store, and the
"Fault tolerance" UI view. Installed with pip, it registers through the ``apache_airflow_provider``
and ``airflow.plugins`` entry points (as astronomer-cosmos does); users who drop files into their
plugins folder use ``plugins/ftops_plugin.py``.
"""

__version__ = "0.1.0"


def get_provider_info() -> dict:
    return {
        "package-name": "ftops",
        "name": "ftops",
        "description": "Fault-tolerance operations for Spark Structured Streaming: plans, drills, staged recovery.",
        "versions": [__version__],
        "connection-types": [
            {"connection-type": "ftops_spark_master", "hook-class-name": "ftops_provider.hooks.spark_master.SparkMasterHook"},
        ],
    }
