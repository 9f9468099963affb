"""Spark's HTTP endpoints, read with httpx: a standalone master's or worker's ``/json/`` state, a
driver's (or History Server's) monitoring REST API under ``/api/v1``, and the master's kill endpoint.

Every failure (refused, timed out, an HTTP error, a body that is not JSON) becomes an
:class:`~ft_core.errors.ExternalError` naming what was asked and where, so callers can let it surface
as a one-line message; :func:`try_json` is for the pollers that skip a worker that is gone.

    >>> get_json("http://127.0.0.1:9/json/", what="the Spark master", timeout_s=0.5)
    Traceback (most recent call last):
    ...
    ft_core.errors.ExternalError: the Spark master at http://127.0.0.1:9/json/ does not answer: ...
"""

from __future__ import annotations

from typing import Any

from ft_core.errors import ExternalError

DEFAULT_TIMEOUT_S = 5.0


def get_json(url: str, *, what: str = "the Spark UI", timeout_s: float = DEFAULT_TIMEOUT_S) -> Any:
    """The JSON document at ``url``; ExternalError naming ``what`` and ``url`` when there is none."""
    import httpx  # on the first request: the CLI reads this module's default when it starts, and httpx loads rich

    try:
        resp = httpx.get(url, timeout=timeout_s, follow_redirects=True)
        resp.raise_for_status()
        return resp.json()
    except httpx.HTTPStatusError as exc:
        raise ExternalError(f"{what} at {url} answered HTTP {exc.response.status_code}") from None
    except (httpx.HTTPError, ValueError) as exc:
        raise ExternalError(f"{what} at {url} does not answer: {_reason(exc)}") from None


def try_json(url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> Any | None:
    """Like :func:`get_json`, but None when the endpoint does not answer (a worker that just died)."""
    try:
        return get_json(url, timeout_s=timeout_s)
    except ExternalError:
        return None


def master_state(ui_url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """A standalone master's state (``<ui>/json/``): workers, cores, active and completed applications."""
    return get_json(ui_url.rstrip("/") + "/json/", what="the Spark master", timeout_s=timeout_s)


def post_form(url: str, data: dict[str, str], *, what: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """POST a form (the master's ``/app/kill/``); ExternalError naming ``what`` when it fails."""
    import httpx

    try:
        httpx.post(url, data=data, timeout=timeout_s).raise_for_status()
    except httpx.HTTPError as exc:
        raise ExternalError(f"{what} failed ({url}): {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
