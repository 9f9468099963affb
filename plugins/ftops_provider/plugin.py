"""The AirflowPlugin: mounts the ftops pages under /ftops and adds "Fault tolerance" to the navigation."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from ftops_provider.ui.app import app


class FtopsPlugin(AirflowPlugin):
    name = "ftops"
    fastapi_apps = [{"app": app, "url_prefix": "/ftops", "name": "ftops"}]
    external_views = [
        {"name": "Fault tolerance", "href": "/ftops/", "destination": "nav", "category": "browse", "url_route": "fault-tolerance"},
        # a tab on every DAG run's page (Airflow fills in the placeholders): what that run recorded
        {"name": "Fault tolerance", "href": "/ftops/runs/{DAG_ID}/{RUN_ID}", "destination": "dag_run",
         "url_route": "fault-tolerance-run"},
    ]
