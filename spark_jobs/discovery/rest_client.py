"""Spark's monitoring REST API of one application, read over HTTP or replayed from a recording.

Problem: discovery reads a running Structured Streaming application through the ``/api/v1`` REST
API that every driver UI (``spark.ui.port``, 4040 by default) and every History Server serve:
its SQL executions (one per micro-batch step), their jobs, stages and task lists. The user gives a
URL (the UI's root, or anything under ``/api/v1``) and, where the UI shows several applications (a
History Server), the application id.

Algorithm: every GET goes through :func:`spark_jobs.cluster.web_ui.get_json` with a short timeout, so a
URL that does not answer, an HTTP error or a body that is not JSON is one
:class:`~ft_core.errors.ExternalError` naming what was asked and where, within seconds. Every answer
is kept by path (:attr:`SparkRestApi.responses`) so a discovery can be saved and replayed exactly
(:class:`RecordedRestApi`: the tests' recorded data, or a user's bug report). Cost: one request per
call; nothing is cached beyond the recording.

    >>> api = RecordedRestApi({"api": "http://127.0.0.1:4040/api/v1",
    ...                        "responses": {"/applications": [{"id": "local-1", "name": "demo", "attempts": [{}]}]}})
    >>> app = select_application(api, None)
    >>> app.path, app.name
    ('/applications/local-1', 'demo')
    >>> api_root("http://127.0.0.1:4040/api/v1/applications/local-1/jobs")
    'http://127.0.0.1:4040/api/v1'
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ft_core.errors import ExternalError, InputError
from spark_jobs.cluster.web_ui import DEFAULT_TIMEOUT_S, get_json

WHAT = "the Spark UI"


def api_root(url: str) -> str:
    """``http://host:port[/prefix]/api/v1`` for a UI's root URL or any URL under its REST API."""
    url = url.strip()
    if not url.startswith(("http://", "https://")):
        raise InputError(f"--spark-ui: expected an http(s) URL of a Spark UI or History Server, got {url!r}")
    head, sep, _ = url.partition("/api/v1")
    return (head if sep else url).rstrip("/") + "/api/v1"


class SparkRestApi:
    """GETs under one UI's ``/api/v1``; every answer is kept in :attr:`responses` by path."""

    def __init__(self, url: str, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.api = api_root(url)
        self.timeout_s = timeout_s
        self.responses: dict[str, Any] = {}

    def get(self, path: str) -> Any:
        body = get_json(self.api + path, what=WHAT, timeout_s=self.timeout_s)
        self.responses[path] = body
        return body

    def recording(self) -> dict[str, Any]:
        """What was read, replayable with :class:`RecordedRestApi`."""
        return {"api": self.api, "responses": self.responses}

    def save(self, path: Path) -> None:
        """Write the recording as JSON (gzip-compressed when the name ends with ``.gz``)."""
        data = json.dumps(self.recording(), separators=(",", ":")).encode()
        Path(path).write_bytes(gzip.compress(data, mtime=0) if str(path).endswith(".gz") else data)


class RecordedRestApi(SparkRestApi):
    """The answers of an earlier discovery (:meth:`SparkRestApi.recording`), served without HTTP."""

    def __init__(self, recording: dict[str, Any]):
        self.api = recording["api"]
        self.timeout_s = 0.0
        self.responses = dict(recording["responses"])

    @classmethod
    def load(cls, path: Path) -> RecordedRestApi:
        data = Path(path).read_bytes()
        return cls(json.loads(gzip.decompress(data) if str(path).endswith(".gz") else data))

    def get(self, path: str) -> Any:
        if path not in self.responses:
            raise ExternalError(f"{WHAT} at {self.api}{path}: not in the recording")
        return self.responses[path]


@dataclass(frozen=True)
class Application:
    """One application (attempt) of a UI: ``path`` is its REST prefix, e.g. ``/applications/local-17``."""

    id: str
    name: str
    path: str
    completed: bool


def select_application(api: SparkRestApi, app_id: str | None) -> Application:
    """The application ``app_id``, or the only one the UI shows (a driver's UI shows its own only);
    on a History Server with several, the only one still running. InputError naming the choices otherwise."""
    apps = api.get("/applications")
    if not isinstance(apps, list) or not apps:
        raise InputError(f"--spark-ui: {api.api} lists no application")
    if app_id is not None:
        chosen = [a for a in apps if a.get("id") == app_id]
        if not chosen:
            raise InputError(f"--app-id: no application {app_id!r} at {api.api} (there: {_ids(apps)})")
    else:
        chosen = apps if len(apps) == 1 else [a for a in apps if not _last_attempt(a).get("completed", False)]
        if len(chosen) != 1:
            raise InputError(f"--app-id: {api.api} shows {len(apps)} applications ({_ids(apps)}): choose one")
    app = chosen[0]
    attempt = _last_attempt(app)
    path = f"/applications/{app['id']}" + (f"/{attempt['attemptId']}" if attempt.get("attemptId") else "")
    return Application(id=app["id"], name=app.get("name", app["id"]), path=path, completed=bool(attempt.get("completed")))


def _last_attempt(app: dict) -> dict:
    attempts = app.get("attempts") or [{}]
    return attempts[0]  # Spark lists the newest attempt first


def _ids(apps: list[dict], limit: int = 5) -> str:
    ids = [str(a.get("id")) for a in apps]
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


class ApplicationApi:
    """The REST calls discovery makes for one application."""

    def __init__(self, api: SparkRestApi, app: Application):
        self.api = api
        self.app = app

    def executions(self) -> list[dict]:
        """Every SQL execution the UI retains, without plans (id, status, description, job ids, times)."""
        return self.api.get(f"{self.app.path}/sql?details=false&planDescription=false&offset=0&length=1000000")

    def execution(self, execution_id: int) -> dict:
        """One SQL execution with its plan graph: ``nodes`` (with metrics) and ``edges``."""
        return self.api.get(f"{self.app.path}/sql/{execution_id}?details=true&planDescription=false")

    def job(self, job_id: int) -> dict:
        return self.api.get(f"{self.app.path}/jobs/{job_id}")

    def stage_attempts(self, stage_id: int) -> list[dict]:
        """Every attempt of a stage (status, numTasks, ...), without task details."""
        return self.api.get(f"{self.app.path}/stages/{stage_id}?details=false")

    def executors(self) -> list[dict]:
        """The application's active executors and its driver (id, hostPort, isActive, totalCores, ...)."""
        return self.api.get(f"{self.app.path}/executors")

    def tasks(self, stage_id: int, attempt_id: int, count: int) -> list[dict]:
        """The task list of a stage attempt (index, host, executor, status, metrics)."""
        return self.api.get(f"{self.app.path}/stages/{stage_id}/{attempt_id}/taskList?offset=0&length={max(count, 1)}")
