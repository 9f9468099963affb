"""Asynchronous reads of a Spark standalone master's JSON (``/json/``) and its workers' JSON.

Shared by the triggers that wait on a standalone cluster. A master that does not answer is not an
error while waiting (it may be restarting); the triggers report the last error when they time out.
"""

from __future__ import annotations

from typing import Any

import httpx

from spark_jobs.cluster.master_room import alive_workers


async def master_state(client: httpx.AsyncClient, master_ui_url: str) -> dict[str, Any]:
    resp = await client.get(master_ui_url.rstrip("/") + "/json/")
    resp.raise_for_status()
    return resp.json()


async def app_executors(client: httpx.AsyncClient, state: dict[str, Any], app_id: str) -> list[str]:
    """Executor ids of ``app_id`` running on the master's alive workers (each worker's own JSON lists them)."""
    found = []
    for w in alive_workers(state):
        if not w.get("webuiaddress"):
            continue
        try:
            resp = await client.get(w["webuiaddress"].rstrip("/") + "/json/")
            resp.raise_for_status()
        except httpx.HTTPError:
            continue
        found += [f"{w['id']}/{e.get('id')}" for e in resp.json().get("executors", []) if e.get("appid") == app_id]
    return found
