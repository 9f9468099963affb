"""Whether an application can get cores on a standalone master now, and when it cannot, who holds them.

A standalone master gives a waiting application cores only as other applications free theirs: an application
asking a master whose alive cores are all held by others waits, ``WAITING``, until someone stops one, and says
nothing. The replica of a new job on a one-core standby (the local stack's) is that case. :func:`room` reads the
master's state (``/json/``, :func:`spark_jobs.cluster.web_ui.master_state`) into the cores free, the cores alive
and the applications holding cores, so a wait can end early naming them, and a command can check before it starts.

Cores are counted on alive workers only (a dead worker's cores are nobody's). Linear in workers and applications.

    >>> state = {"workers": [{"state": "ALIVE", "cores": 1, "coresused": 1}],
    ...          "activeapps": [{"name": "ftops-topk-replica-p2", "state": "RUNNING", "cores": 1},
    ...                         {"name": "ftops-shop-replica-p7", "state": "WAITING", "cores": 0}]}
    >>> r = room(state, but="ftops-shop-replica-p7")
    >>> r.fits(1), r.held_by_others
    (False, True)
    >>> r.why_not(1, "ftops-shop-replica-p7", "the standby")
    'the standby has 0 of 1 cores free and ftops-shop-replica-p7 needs 1: held by ftops-topk-replica-p2 (1 core)'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Room:
    cores_free: int
    cores_alive: int
    holders: tuple[tuple[str, int], ...]  # (application, cores) of every other application holding cores

    def fits(self, cores: int) -> bool:
        return self.cores_free >= cores

    @property
    def held_by_others(self) -> bool:
        """Cores are alive and others hold them: waiting ends only when someone stops an application (not when a
        worker comes back)."""
        return self.cores_alive > 0 and bool(self.holders)

    def why_not(self, cores: int, app: str, master: str = "the master") -> str:
        if self.cores_alive == 0:
            return f"{master} has no alive worker; {app} needs {cores} core{'s' * (cores != 1)}"
        held = ", ".join(f"{name} ({n} core{'s' * (n != 1)})" for name, n in self.holders) or "nothing listed"
        return (f"{master} has {self.cores_free} of {self.cores_alive} cores free and {app} needs {cores}: "
                f"held by {held}")


def alive_workers(state: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The workers a master's ``/json/`` document lists ALIVE: a dead worker's cores are nobody's, and a restarted
    worker keeps DEAD entries on its port (with its old address) beside its ALIVE one.

    >>> alive_workers({"workers": [{"id": "w1", "state": "ALIVE"}, {"id": "w0", "state": "DEAD"}]})
    [{'id': 'w1', 'state': 'ALIVE'}]
    """
    return [w for w in (state or {}).get("workers", []) if w.get("state") == "ALIVE"]


def free_cores(alive: Iterable[dict[str, Any]]) -> int:
    """Cores free on the workers ``alive`` (the master's ``/json/`` entries of alive workers), as the master counts
    them: what a waiting executor can be given now.

    >>> free_cores([{"cores": 2, "coresused": 1}, {"cores": 1, "coresused": 1}])
    1
    """
    return sum(max(0, int(w.get("cores", 0)) - int(w.get("coresused", 0))) for w in alive)


def room(state: dict[str, Any], but: str | None = None, also_free: tuple[str, ...] = ()) -> Room:
    """The master's free and alive cores and who holds them, from its ``/json/`` state. ``but``: the asking
    application (not a holder); ``also_free``: applications whose cores count as free (to be stopped by the
    caller: a job's own replica that a new one replaces)."""
    alive = alive_workers(state)
    holding = [(a["name"], int(a.get("cores", 0))) for a in state.get("activeapps", [])
               if a.get("name") != but and int(a.get("cores", 0)) > 0]
    freed = sum(n for name, n in holding if name in also_free)
    return Room(cores_free=free_cores(alive) + freed,
                cores_alive=sum(w["cores"] for w in alive),
                holders=tuple((name, n) for name, n in holding if name not in also_free))
