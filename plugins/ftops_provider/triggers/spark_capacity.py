"""SparkCapacityTrigger: wait until a Spark standalone master has enough capacity registered.

Conditions (all that are set must hold at once, checked every ``poll_interval_s`` against the
master's JSON): at least ``min_alive_workers`` ALIVE workers, ``min_free_cores`` free cores on them,
``min_new_workers`` ALIVE workers whose ids are not in ``known_worker_ids`` (replacement capacity
after a failure: the ids alive when the wait started), and, for an application named ``app_name``,
``min_app_executors`` executors on alive workers (from the workers' own JSON), and an executor for each of
``running_apps`` (names or ids: the applications a fleet recovery's stage kept waiting, which take returning cores
themselves). Fires
``{"status": "ok", ...}`` with the workers and cores it saw, or ``{"status": "timeout", "missing":
...}`` after ``timeout_s`` naming what was still short.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from airflow.triggers.base import BaseTrigger, TriggerEvent

from ftops_provider.triggers.master_json import app_executors, master_state
from spark_jobs.cluster.master_room import alive_workers, free_cores


class SparkCapacityTrigger(BaseTrigger):
    def __init__(self, master_ui_url: str, *, min_alive_workers: int = 0, min_free_cores: int = 0,
                 min_new_workers: int = 0, known_worker_ids: list[str] | None = None, app_name: str | None = None,
                 min_app_executors: int = 0, running_apps: list[str] | None = None, timeout_s: float = 600.0,
                 poll_interval_s: float = 2.0, started_at: float | None = None):
        super().__init__()
        self.master_ui_url = master_ui_url
        self.min_alive_workers = min_alive_workers
        self.min_free_cores = min_free_cores
        self.min_new_workers = min_new_workers
        self.known_worker_ids = list(known_worker_ids or [])
        self.app_name = app_name
        self.min_app_executors = min_app_executors
        self.running_apps = list(running_apps or [])
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s
        # Wall-clock start, serialised: a triggerer restart resumes the same deadline.
        self.started_at = time.time() if started_at is None else started_at

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.spark_capacity.SparkCapacityTrigger", {
            "master_ui_url": self.master_ui_url, "min_alive_workers": self.min_alive_workers,
            "min_free_cores": self.min_free_cores, "min_new_workers": self.min_new_workers,
            "known_worker_ids": self.known_worker_ids, "app_name": self.app_name,
            "min_app_executors": self.min_app_executors, "running_apps": self.running_apps, "timeout_s": self.timeout_s,
            "poll_interval_s": self.poll_interval_s, "started_at": self.started_at,
        })

    async def _missing(self, client: httpx.AsyncClient, state: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        alive = alive_workers(state)
        free = free_cores(alive)
        new = [w["id"] for w in alive if w["id"] not in self.known_worker_ids]
        seen: dict[str, Any] = {"alive_workers": [w["id"] for w in alive], "free_cores": free, "new_workers": new}
        missing = []
        if len(alive) < self.min_alive_workers:
            missing.append(f"{len(alive)} of {self.min_alive_workers} workers alive")
        if free < self.min_free_cores:
            missing.append(f"{free} of {self.min_free_cores} free cores")
        if len(new) < self.min_new_workers:
            missing.append(f"{len(new)} of {self.min_new_workers} new workers")
        wanted = {a: 1 for a in self.running_apps}
        if self.app_name and self.min_app_executors:
            wanted[self.app_name] = self.min_app_executors
        for app, least in wanted.items():
            apps = [a for a in state.get("activeapps", []) if app in (a.get("name"), a.get("id"))]
            executors = await app_executors(client, state, apps[0]["id"]) if apps else []
            if app == self.app_name:
                seen.update(app_id=apps[0]["id"] if apps else None, app_executors=executors)
            if len(executors) < least:
                missing.append(f"{len(executors)} of {least} executors of {app}")
        return missing, seen

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        missing = ["the master has not answered yet"]
        async with httpx.AsyncClient(timeout=5.0) as client:
            while True:
                try:
                    missing, seen = await self._missing(client, await master_state(client, self.master_ui_url))
                except (httpx.HTTPError, ValueError, KeyError) as exc:
                    missing, seen = [f"master {self.master_ui_url} does not answer: {exc}"], {}
                if not missing:
                    yield TriggerEvent({"status": "ok", **seen, "waited_s": round(time.time() - self.started_at, 1)})
                    return
                if time.time() >= deadline:
                    yield TriggerEvent({"status": "timeout", "missing": missing, "timeout_s": self.timeout_s, **seen})
                    return
                await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))
