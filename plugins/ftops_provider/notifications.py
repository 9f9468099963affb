"""Notifications of failed and aborted experiments, through Airflow's notifier mechanism.

:class:`FtopsNotifier` is a task callback (``on_failure_callback``) on a drill's or recovery's last step.
Where the message goes is configured by one Airflow connection (``ftops_notify`` unless
``FTOPS_NOTIFY_CONN_ID`` names another), not by the DAG:

- an ``smtp`` connection: an email through the SMTP provider's :class:`SmtpNotifier` (host, port, login,
  password and TLS/SSL as the connection says; ``extra``: ``{"to": "oncall@example.com", "from_email": ...}``);
- an ``http`` connection: a JSON ``{"text": ...}`` POST (a Slack or Mattermost incoming webhook): to
  ``extra.webhook_url``, or to ``<schema>://<host>:<port><extra.endpoint>`` (schema ``https`` by default).

Without the connection nothing is sent (the log says so): notifications are opt-in. A notifier that
cannot deliver logs why and never hides the task's own failure.
"""

from __future__ import annotations

import os
from typing import Any

from airflow.sdk import BaseNotifier

DEFAULT_CONN_ID = "ftops_notify"


def notify_conn_id() -> str:
    return os.environ.get("FTOPS_NOTIFY_CONN_ID") or DEFAULT_CONN_ID


def failure_message(context: Any) -> tuple[str, str]:
    """Subject and text of a failed experiment step: DAG, run, task and the task's error (its reason)."""
    ti = context.get("ti") or context.get("task_instance")
    dag_id = getattr(ti, "dag_id", None) or context["dag"].dag_id
    run_id = getattr(ti, "run_id", None) or context.get("run_id")
    error = str(context.get("exception") or "see the task's log")
    subject = f"ftops: {dag_id} {'aborted' if ' aborted' in error else 'failed'}: {error[:120]}"
    text = (f"{error}\n\nDAG {dag_id}, run {run_id}, task {getattr(ti, 'task_id', '?')}.\n"
            "The experiment report is in the Airflow UI's Fault tolerance view (the job's drills and recovery runs).")
    return subject, text


class FtopsNotifier(BaseNotifier):
    """Send a failed or aborted experiment's reason where the ``ftops_notify`` connection says."""

    def __init__(self, conn_id: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.conn_id = conn_id

    def notify(self, context: Any) -> None:
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        conn_id = self.conn_id or notify_conn_id()
        try:
            conn = BaseHook.get_connection(conn_id)
        except AirflowNotFoundException:
            self.log.info("no %r connection: not notifying (see ftops_provider.notifications)", conn_id)
            return
        subject, text = failure_message(context)
        if conn.conn_type == "smtp":
            self._email(conn_id, conn.extra_dejson, subject, text, context)
        elif conn.conn_type == "http":
            self._webhook(conn, subject, text)
        else:
            self.log.error("connection %r is of type %r: ftops notifies through 'smtp' or 'http' connections",
                           conn_id, conn.conn_type)

    def _email(self, conn_id: str, extra: dict, subject: str, text: str, context: Any) -> None:
        from html import escape

        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        if not extra.get("to"):
            self.log.error("connection %r has no 'to' in its extra: not notifying", conn_id)
            return
        body = "<pre>" + escape(text) + "</pre>"
        SmtpNotifier(to=extra["to"], from_email=extra.get("from_email"), subject=subject, html_content=body,
                     smtp_conn_id=conn_id).notify(context)
        self.log.info("notified %s by email", extra["to"])

    def _webhook(self, conn, subject: str, text: str) -> None:
        import httpx

        url = conn.extra_dejson.get("webhook_url") or (
            f"{conn.schema or 'https'}://{conn.host}{f':{conn.port}' if conn.port else ''}{conn.extra_dejson.get('endpoint', '')}")
        try:  # the URL is a secret: errors name the connection and the status, never the URL
            response = httpx.post(url, json={"text": f"*{subject}*\n{text}"}, timeout=10.0)
        except httpx.HTTPError as exc:
            raise RuntimeError(f"the webhook of connection {conn.conn_id!r} does not answer: {type(exc).__name__}") from None
        if response.is_error:
            raise RuntimeError(f"the webhook of connection {conn.conn_id!r} answered {response.status_code}")
        self.log.info("notified the webhook of connection %r", conn.conn_id)
