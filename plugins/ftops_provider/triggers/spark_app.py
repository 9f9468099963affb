"""SparkAppTrigger: wait until an application named ``app_name`` is in ``state`` on a standalone
master (``RUNNING`` after a (re)submission; ``absent`` after a stop), with at least
``min_cores`` cores granted. Fires ``{"status": "ok", "app_id": ...}`` or ``{"status": "timeout"}``; with
``no_room_after_s``, ``{"status": "no_room", "reason": ...}`` once the application has waited that long on a
master whose alive cores other applications hold (it would wait until someone stops one: the reason names them,
:mod:`spark_jobs.cluster.master_room`). A master without alive workers is waited for until the timeout.

Applications are found by name: ftops gives each submission a unique name (job, role, plan), so a
retry finds the application its first try submitted instead of submitting it twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from airflow.triggers.base import BaseTrigger, TriggerEvent

from ftops_provider.triggers.master_json import master_state


class SparkAppTrigger(BaseTrigger):
    def __init__(self, master_ui_url: str, app_name: str, *, state: str = "RUNNING", min_cores: int = 1,
                 timeout_s: float = 300.0, poll_interval_s: float = 2.0, started_at: float | None = None,
                 no_room_after_s: float | None = None):
        super().__init__()
        self.master_ui_url = master_ui_url
        self.app_name = app_name
        self.state = state
        self.min_cores = min_cores
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s
        self.started_at = time.time() if started_at is None else started_at
        self.no_room_after_s = no_room_after_s
        self._waiting_since: float | None = None  # since when the application waits for cores others hold

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("ftops_provider.triggers.spark_app.SparkAppTrigger", {
            "master_ui_url": self.master_ui_url, "app_name": self.app_name, "state": self.state,
            "min_cores": self.min_cores, "timeout_s": self.timeout_s, "poll_interval_s": self.poll_interval_s,
            "started_at": self.started_at, "no_room_after_s": self.no_room_after_s,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = self.started_at + self.timeout_s
        last = "the master has not answered yet"
        async with httpx.AsyncClient(timeout=5.0) as client:
            while True:
                try:
                    state = await master_state(client, self.master_ui_url)
                    apps = [a for a in state.get("activeapps", []) if a.get("name") == self.app_name]
                    if self.no_room_after_s is not None:
                        no_room = self._no_room(state, apps)
                        if no_room is not None:
                            yield TriggerEvent({"status": "no_room", "app_name": self.app_name, "reason": no_room})
                            return
                    if self.state == "absent":
                        if not apps:
                            yield TriggerEvent({"status": "ok", "app_name": self.app_name, "state": "absent"})
                            return
                        last = f"{self.app_name} is still {apps[0].get('state')} ({apps[0]['id']})"
                    else:
                        ok = [a for a in apps if a.get("state") == self.state and a.get("cores", 0) >= self.min_cores]
                        if ok:
                            yield TriggerEvent({"status": "ok", "app_name": self.app_name, "app_id": ok[0]["id"],
                                                "state": ok[0]["state"], "cores": ok[0]["cores"],
                                                "waited_s": round(time.time() - self.started_at, 1)})
                            return
                        last = (f"{self.app_name} is {apps[0].get('state')} with {apps[0].get('cores')} cores" if apps
                                else f"no application named {self.app_name} on the master")
                except (httpx.HTTPError, ValueError, KeyError) as exc:
                    last = f"master {self.master_ui_url} does not answer: {exc}"
                if time.time() >= deadline:
                    yield TriggerEvent({"status": "timeout", "app_name": self.app_name, "missing": [last],
                                        "timeout_s": self.timeout_s})
                    return
                await asyncio.sleep(min(self.poll_interval_s, max(0.0, deadline - time.time())))

    def _no_room(self, state: dict[str, Any], apps: list[dict[str, Any]]) -> str | None:
        """Why the application cannot get cores, once it has been so for ``no_room_after_s`` (else None)."""
        from spark_jobs.cluster.master_room import room

        r = room(state, but=self.app_name)
        waiting = (self.state == "RUNNING" and bool(apps) and apps[0].get("cores", 0) < self.min_cores
                   and not r.fits(self.min_cores) and r.held_by_others)
        if not waiting:
            self._waiting_since = None
            return None
        self._waiting_since = self._waiting_since or time.time()
        if time.time() - self._waiting_since < self.no_room_after_s:
            return None
        return r.why_not(self.min_cores, self.app_name, f"the master at {self.master_ui_url}") + \
            f" (for {time.time() - self._waiting_since:.0f} s)"
